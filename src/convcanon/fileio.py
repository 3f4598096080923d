"""The one reader and the one writer every command uses.

Reading is bounded: a file over the input size limit, or a device that never ends (`/dev/zero`), is
refused before it is read whole, and an npz archive is checked (member names, the sizes in its zip
directory, each `.npy` header) before anything is inflated.

Writing never harms its target: a regular file (also through a symlink, which stays a link) is
replaced atomically by a temporary file in the target's own directory and a rename; a device, FIFO
or `/proc/self/fd/N` is written in place. Every failure, stdout included, is `OUT: error: ...`, and
no temporary file is left behind, also when SIGTERM or SIGHUP arrives mid-write. While a command
runs, stdout stands on a writer that writes everything (short counts, non-blocking pipes) or fails.
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError
from convcanon.records import NamedTuple

if TYPE_CHECKING:
    import zipfile

    import numpy as np

# -- sizes ---------------------------------------------------------------------------------------

DEFAULT_MAX_INPUT_SIZE = 1 << 30
MAX_INPUT_SIZE_HELP = (
    "refuse input files (and npz contents) larger than this, before reading them "
    "(default 1GiB; e.g. 64MiB, 4GiB or a byte count)"
)
_CHUNK = 1 << 20

_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 10**6, "gb": 10**9, "kib": 1 << 10, "mib": 1 << 20}
_UNITS |= {"gib": 1 << 30, "tib": 1 << 40, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_byte_size(text: str | int, what: str) -> int:
    """`4GiB`, `512MiB`, `1000000` (bytes) -> bytes; anything else, or under one byte (a limit
    of 0 would silently mean the default, or nothing could run), is a usage error."""
    if isinstance(text, int):
        size = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
        if match is None or match[2].lower() not in _UNITS:
            raise UsageError(f"bad {what} {text!r} (use e.g. 4GiB, 512MiB or a byte count)")
        size = int(float(match[1]) * _UNITS[match[2].lower()])
    if size < 1:
        raise UsageError(f"bad {what} {text!r}: it must be at least one byte")
    return size


MAX_TIMEOUT = 1e6  # seconds (11 days): past it a wait's milliseconds overflow


def check_timeout(seconds: float) -> float:
    """A `--timeout` in seconds; nan or inf would leave the wait unbounded."""
    if not (0 < seconds <= MAX_TIMEOUT):
        raise UsageError(
            f"--timeout must be a number of seconds > 0 and <= {MAX_TIMEOUT:g}, not {seconds:g}"
        )
    return seconds


_input_limit: ContextVar[int] = ContextVar("max_input_size", default=DEFAULT_MAX_INPUT_SIZE)


def set_max_input_size(limit: str | int) -> int:
    """From now on in this context every reader refuses inputs over `limit` bytes.

    The CLI runs each command in a copy of the context, so the setting ends with the command.
    """
    size = parse_byte_size(limit, "input size limit")
    _input_limit.set(size)
    return size


def _over_limit(loc: SourceLoc, limit: int, size: int | None = None) -> ConvcanonError:
    known = f"is {size} bytes, " if size is not None else ""
    return ConvcanonError(
        f"input {known}over the input size limit of {limit} bytes (--max-input-size)", loc
    )


# -- reading -------------------------------------------------------------------------------------


def _read_bounded(
    handle: BinaryIO, loc: SourceLoc, limit: int, text: bool, first: int = _CHUNK
) -> bytes:
    """Read chunks until EOF, refusing as soon as more than `limit` bytes came; with `text`, also
    at the first NUL byte (no MLIR or program text has one), so `cat /dev/zero |` stops at once.
    `first` sizes the first read (a regular file's size: one read, no join)."""
    chunks: list[bytes] = []
    total = lines = line_start = 0
    size = max(first, 1)
    while True:
        chunk = handle.read(min(size, limit + 1 - total))
        size = _CHUNK
        if not chunk:
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if text and total == 0 and chunk.startswith(MLIR_BYTECODE_MAGIC):
            text = False  # MLIR bytecode: binary, NUL bytes included
        if text and (nul := chunk.find(b"\0")) >= 0:
            lines += chunk.count(b"\n", 0, nul)
            last = chunk.rfind(b"\n", 0, nul)
            line_start = total + last + 1 if last >= 0 else line_start
            where = SourceLoc(loc.file, lines + 1, total + nul - line_start + 1)
            raise ConvcanonError("not UTF-8 text (a NUL byte)", where)
        if text:
            lines += chunk.count(b"\n")
            last = chunk.rfind(b"\n")
            line_start = total + last + 1 if last >= 0 else line_start
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _over_limit(loc, limit)


def _os_error(err: OSError, loc: SourceLoc) -> ConvcanonError:
    if isinstance(err, FileNotFoundError):
        return ConvcanonError("no such file", loc)
    if isinstance(err, IsADirectoryError):
        return ConvcanonError("is a directory, expected a file", loc)
    return ConvcanonError(err.strerror or str(err), loc)


def read_input_bytes(
    path: str, limit: int | None = None, *, text: bool = False
) -> tuple[str, bytes]:
    """Read a file (`-` is stdin) whole, bounded; returns (display name, bytes).

    Regular files over the limit are refused from their size alone; pipes, FIFOs and terminals
    are read in chunks up to the limit; other devices (`/dev/zero`, `/dev/urandom`, disks) are
    refused unless they are empty, like `/dev/null`. With `text`, a stream's NUL byte is refused
    as soon as it is read (a regular file's is left to the parser, which locates it).
    """
    limit = _input_limit.get() if limit is None else limit
    name = "<stdin>" if path == "-" else path
    loc = SourceLoc(name)
    try:
        if path == "-":
            stdin = sys.stdin
            if stdin is None:
                raise ConvcanonError("no stdin to read", loc)
            if not hasattr(stdin, "buffer"):  # a text stream put in place by a caller (tests)
                data = stdin.read(limit + 1).encode()
                if len(data) > limit:
                    raise _over_limit(loc, limit)
                return name, data
            return name, _read_from(stdin.buffer, loc, limit, text)
        with open(path, "rb", buffering=0) as raw:
            return name, _read_from(raw, loc, limit, text)
    except OSError as err:
        raise _os_error(err, loc) from None


def _read_from(handle: BinaryIO, loc: SourceLoc, limit: int, text: bool) -> bytes:
    try:
        mode = os.fstat(handle.fileno()).st_mode
    except (OSError, io.UnsupportedOperation):
        mode = stat.S_IFIFO  # no descriptor: a stream, read it bounded
    if stat.S_ISDIR(mode):
        raise ConvcanonError("is a directory, expected a file", loc)
    if stat.S_ISREG(mode):
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise _over_limit(loc, limit, size)
        return _read_bounded(handle, loc, limit, text=False, first=size + 1)
    elif (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and not os.isatty(handle.fileno()):
        if handle.read(1):
            kind = "character" if stat.S_ISCHR(mode) else "block"
            raise ConvcanonError(
                f"is a {kind} device, not a file (a device like /dev/zero never ends)", loc
            )
        return b""
    return _read_bounded(handle, loc, limit, text)


class NotUtf8Error(ConvcanonError):
    """Input that is not UTF-8 text, at its first bad byte (`offset` in the file)."""

    def __init__(self, offset: int, loc: SourceLoc) -> None:
        super().__init__(f"not UTF-8 text (byte {offset})", loc)
        self.offset = offset


def read_input(path: str, limit: int | None = None) -> tuple[str, str]:
    """Read a text input (`-` is stdin), bounded; returns (display name, text).

    Newlines are normalized as Python's text mode does, so locations count lines the usual way.
    """
    name, data = read_input_bytes(path, limit, text=True)
    return name, _decoded(name, data)


def _decoded(name: str, data: bytes) -> str:
    """UTF-8 `data` as text with Python's newlines, or `NotUtf8Error` at the first bad byte."""
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        # at the line and (byte) column of the first bad byte, as MLIR counts columns
        line_start = data.rfind(b"\n", 0, err.start) + 1
        where = SourceLoc(name, data.count(b"\n", 0, err.start) + 1, err.start - line_start + 1)
        raise NotUtf8Error(err.start, where) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b) or os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output_path(input_path: str, output_path: str | None) -> None:
    """Refuse an output that is the input (also through symlinks or hard links)."""
    if not output_path or output_path == "-" or input_path == "-":
        return
    if _same_file(input_path, output_path):
        raise UsageError(f"output path {output_path!r} is the input file; refusing to overwrite it")


# -- npz -----------------------------------------------------------------------------------------

# A pattern string, compiled on first use (re's cache): most runs never need it.
_NPZ_MEMBER = r"[A-Za-z_][\w.]*\.npy"


def _zip_errors() -> tuple[type[BaseException], ...]:
    """What zipfile raises on a damaged archive (RuntimeError: an encrypted member; zlib.error,
    lzma.LZMAError, OSError from bz2: a damaged compressed stream). zipfile and zlib are
    imported here, on the npz path only: convcanon-opt never reads one."""
    import zipfile
    import zlib

    lzma = getattr(zipfile, "lzma", None)  # None when Python was built without lzma
    return (
        zipfile.BadZipFile,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
        *([lzma.LZMAError] if lzma else []),
    )


def _npz_error(path: str, message: str) -> ConvcanonError:
    return ConvcanonError(f"cannot read inputs as .npz: {message}", SourceLoc(path))


def _npy_header(raw: bytes, member: str, path: str) -> NpyHeader:
    """The header of one member from its first bytes, refusing anything odd."""
    import numpy as np

    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {version[0]}.{version[1]}")
    except Exception as err:  # numpy reports a bad header as ValueError, SyntaxError, TokenError...
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise _npz_error(path, f"member {member!r} has a bad .npy header ({detail})") from None
    if dtype.hasobject:
        raise _npz_error(
            path,
            f"member {member!r} holds Python objects; pickles are refused (allow_pickle=False)",
        )
    if dtype.itemsize == 0 or any(int(d) < 0 for d in shape):
        what = "a zero-size element type" if dtype.itemsize == 0 else f"a negative shape {shape}"
        raise _npz_error(path, f"member {member!r} has a bad .npy header ({what})")
    return NpyHeader(tuple(int(d) for d in shape), dtype, bool(fortran), stream.tell())


# magic, version and length (at most 12 bytes), then numpy's own bound on the header text
_NPY_HEADER_PREFIX = 12 + 10_000


class NpyHeader(NamedTuple):
    """What one npz member's `.npy` header declares: enough to check it against a parameter."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    offset: int  # where the data starts in the member


class NpzArrays(Mapping[str, "np.ndarray"]):
    """An npz archive's arrays by name (without `.npy`), each inflated on first access.

    Opening reads the zip directory and each member's `.npy` header only, so a caller can check
    names, shapes and dtypes against what it expects before a single array is inflated.
    """

    def __init__(
        self,
        path: str,
        archive: zipfile.ZipFile,
        members: dict[str, zipfile.ZipInfo],
        headers: dict[str, NpyHeader],
    ) -> None:
        self.path = path
        self._archive = archive
        self._members = members
        self._headers = headers
        self._arrays: dict[str, np.ndarray] = {}

    def header(self, key: str) -> NpyHeader:
        return self._headers[key]

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._arrays:
            info = self._members[key]
            self._arrays[key] = _read_member(self._archive, info, self._headers[key], self.path)
        return self._arrays[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def input_header(inputs: Mapping[str, np.ndarray], key: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of one input without inflating it when it is an npz member not yet read."""
    if isinstance(inputs, NpzArrays):
        header = inputs.header(key)
        return header.shape, header.dtype
    value = inputs[key]
    return tuple(value.shape), value.dtype


def holds_raw_bits(dtype: np.dtype, expected: np.dtype) -> bool:
    """Whether an input of `dtype` is `expected`'s values as raw bytes: plain void of the same
    width, as numpy saves a dtype it cannot name (bf16, fp8). A structured dtype is not."""
    return dtype.kind == "V" and dtype.names is None and dtype.itemsize == expected.itemsize


def open_npz(path: str, limit: int | None = None) -> NpzArrays:
    """An npz file's arrays by name, checked before anything is inflated; see `NpzArrays`.

    The archive is read bounded; its members' names and the uncompressed sizes in the zip
    directory must be sane and add up to at most the limit; each `.npy` header must describe
    exactly the bytes its member holds. Python's zipfile never inflates past a member's size.
    """
    limit = _input_limit.get() if limit is None else limit
    name, data = read_input_bytes(path, limit)
    if data[:2] != b"PK":
        what = "a single .npy array" if data.startswith(b"\x93NUM") else "no zip header"
        raise ConvcanonError(f"not an .npz archive ({what})", SourceLoc(name))
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except _zip_errors() as err:
        raise _npz_error(name, str(err)) from None
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in archive.infolist():
        key = info.filename[: -len(".npy")]
        if not re.fullmatch(_NPZ_MEMBER, info.filename) or key in members:
            what = "a repeated" if key in members else "an odd"
            raise _npz_error(name, f"{what} member name {info.filename!r} (expected NAME.npy)")
        members[key] = info
        total += info.file_size
        if total > limit:
            raise _npz_error(
                name,
                f"its members inflate to over {limit} bytes (the input size limit, "
                "--max-input-size); refused before inflating",
            )
    headers = {key: _member_header(archive, info, name) for key, info in members.items()}
    return NpzArrays(name, archive, members, headers)


def _member_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str) -> NpyHeader:
    """Inflate only the start of a member, read its header, and check that the data it declares
    is exactly the size the zip directory gives."""
    try:
        with archive.open(info) as member:
            raw = member.read(min(info.file_size, _NPY_HEADER_PREFIX))
    except _zip_errors() as err:
        raise _npz_error(path, f"member {info.filename!r}: {err}") from None
    header = _npy_header(raw, info.filename, path)
    count = math.prod(header.shape)
    declared = count * header.dtype.itemsize
    if declared != info.file_size - header.offset:
        raise _npz_error(
            path,
            f"member {info.filename!r}: its .npy header describes {declared} "
            f"bytes of data but it holds {info.file_size - header.offset}",
        )
    return header


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, header: NpyHeader, path: str
) -> np.ndarray:
    """Inflate one member into a single buffer the array then views (no second copy)."""
    import numpy as np

    buffer = bytearray(info.file_size)
    view = memoryview(buffer)
    filled = 0
    try:
        with archive.open(info) as member:
            while filled < info.file_size:
                chunk = member.read(min(_CHUNK, info.file_size - filled))
                if not chunk:
                    break
                view[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
            extra = member.read(1)
    except _zip_errors() as err:
        raise _npz_error(path, f"member {info.filename!r}: {err}") from None
    if filled != info.file_size or extra:
        raise _npz_error(path, f"member {info.filename!r} does not match its zip directory size")
    count = math.prod(header.shape)
    flat = np.frombuffer(buffer, dtype=header.dtype, count=count, offset=header.offset)
    return flat.reshape(header.shape, order="F" if header.fortran else "C")


# -- writing -------------------------------------------------------------------------------------


class _Stopped(BaseException):
    """A terminating signal arrived while a temporary file existed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


_SignalHandler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


@contextlib.contextmanager
def _signals_remove(temporaries: list[str]) -> Iterator[None]:
    """While it lasts, SIGTERM/SIGHUP remove `temporaries` and then end the process as asked."""
    installed: dict[int, _SignalHandler] = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup's wish is kept
            try:
                installed[signum] = signal.signal(signum, _stop)
            except ValueError:  # not the main thread: Python delivers signals only there
                break
    try:
        yield
    except _Stopped as stopped:
        for tmp in temporaries:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        previous = installed.pop(stopped.signum)
        for signum, handler in installed.items():
            signal.signal(signum, handler)
        installed = {}
        signal.signal(stopped.signum, previous)
        if callable(previous):
            previous(stopped.signum, None)
        else:
            os.kill(os.getpid(), stopped.signum)  # the default action: die by this signal
        raise SystemExit(128 + stopped.signum) from None
    finally:
        for signum, handler in installed.items():
            signal.signal(signum, handler)


def _display(path: str) -> str:
    return path if path else "''"


def _write_error(path: str, err: OSError | str) -> ConvcanonError:
    if isinstance(err, OSError):
        reason = err.strerror or str(err)
        if err.errno == errno.ENOSPC:
            reason = "no space left on the device"
        message = f"cannot write the output: {reason}"
    else:
        message = err
    return ConvcanonError(message, SourceLoc(_display(path)))


_OWN_FD = re.compile(r"/proc/(?:self|thread-self|\d+)/fd/(\d+)")


def _resolve_target(path: str) -> tuple[str, int | None]:
    """Follow symlinks to the file to write: (final path, our own fd if it is /proc/self/fd/N).

    Resolving one link at a time keeps what `os.path.realpath` loses: whether the chain passes
    through `/proc/self/fd/N` (`/dev/stdout`, `/dev/fd/1`), whose link text is no real path.
    """
    current = path
    for _ in range(64):
        parent = os.path.realpath(os.path.dirname(current) or ".")
        current = os.path.join(parent, os.path.basename(current))
        own = _OWN_FD.fullmatch(current)
        if own and (current.startswith("/proc/self/") or f"/{os.getpid()}/" in current):
            return current, int(own[1])
        if parent == "/proc" or parent.startswith("/proc/") or not os.path.islink(current):
            return current, None
        current = os.path.join(parent, os.readlink(current))
    raise _write_error(path, "too many levels of symbolic links")


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of `data` to `fd`: a short count goes on from where it stopped, and a
    descriptor someone set non-blocking (O_NONBLOCK is shared by every process holding the pipe)
    is waited on until its reader makes room, as LLVM's raw_fd_ostream emulates blocking writes.
    Any other failure (EPIPE, ENOSPC) raises."""
    view = memoryview(data).cast("B")
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            import select

            select.select([], [fd], [])
            continue
        view = view[written:]


class WholeWriter(io.RawIOBase):
    """A raw stream whose `write` writes everything or raises: what stdout stands on while a
    command runs, so no buffering (`PYTHONUNBUFFERED=1` hands Python's text layer a raw stream
    whose short counts it ignores) and no pipe state can drop output silently."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        """Everything, or the failure raised once; after it, writes are dropped: the command
        reports the failure, and the text layer's flush at exit must not raise it again."""
        view = memoryview(data).cast("B")
        if not self._failed:
            try:
                write_all(self._fd, view)
            except OSError:
                self._failed = True
                raise
        return view.nbytes


@contextlib.contextmanager
def stdout_written_whole() -> Iterator[None]:
    """While it lasts, `sys.stdout` (prints included) writes through a `WholeWriter`, with the
    encoding, error handler and buffering it had. Only the process's own stdout is replaced; a
    stream a caller put in place (a test's StringIO, pytest's capture) is left as it is."""
    original = sys.stdout
    try:
        if original is None or original is not sys.__stdout__:
            raise io.UnsupportedOperation
        fd = original.fileno()
        original.flush()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        yield
        return
    raw = WholeWriter(fd)
    unbuffered = not isinstance(getattr(original, "buffer", None), io.BufferedWriter)
    binary: Any = raw if unbuffered else io.BufferedWriter(raw)
    sys.stdout = io.TextIOWrapper(
        binary,
        encoding=original.encoding,
        errors=original.errors,
        line_buffering=bool(original.line_buffering),
        write_through=unbuffered,
    )
    try:
        yield
    finally:
        replacement, sys.stdout = sys.stdout, original
        with contextlib.suppress(OSError, ValueError):  # a failure was reported already
            replacement.flush()


def encode_text(text: str, encoding: str = "utf-8") -> bytes:
    """`text` as bytes, where a file name from argv that is not UTF-8 (Python holds its bytes
    as lone surrogates) is written as those bytes, and any other lone surrogate (from the Python
    API) as its code point's UTF-8-like form: an output never fails on a name."""
    try:
        return text.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:
        return text.encode(encoding, "surrogatepass" if encoding == "utf-8" else "backslashreplace")


def write_output(path: str, data: str | bytes) -> None:
    """Write a command's whole output to `path` (`-` is stdout) so that nothing is ever harmed."""
    payload = encode_text(data) if isinstance(data, str) else data
    if path == "-":
        if isinstance(data, bytes) and _is_terminal(sys.stdout):
            # as llvm-as refuses to print bitcode to a console
            raise _write_error(
                "<stdout>",
                "refusing to write binary output to a terminal; redirect stdout or use -o FILE",
            )
        write_stdout(data)
        return
    if not path:
        raise _write_error(path, "the output path is empty")
    target, own_fd = _resolve_target(path)
    if own_fd is not None:
        _write_in_place(path, target, payload, own_fd)
        return
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise _write_error(path, err) from None
    if (mode is not None and stat.S_ISDIR(mode)) or not os.path.basename(target):
        raise _write_error(path, "is a directory")
    if (mode is not None and not stat.S_ISREG(mode)) or target.startswith("/proc/"):
        _write_in_place(path, target, payload, None)
        return
    _replace_atomically(path, target, payload, mode)


def _is_terminal(stream: object) -> bool:
    try:
        return os.isatty(stream.fileno())  # pyright: ignore[reportAttributeAccessIssue]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


def _write_in_place(path: str, target: str, payload: bytes, own_fd: int | None) -> None:
    """A device, FIFO, socket or descriptor: renaming onto it would replace it, so write into it.

    Our own descriptor (`/proc/self/fd/1`) is written through a duplicate, so the output lands
    where the shell pointed it (appending if it was opened to append), after what we printed.
    """
    if own_fd is not None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
    try:
        if own_fd is not None:
            fd = os.dup(own_fd)
        else:  # O_TRUNC: a regular file reached through /proc; devices and FIFOs ignore it
            fd = os.open(target, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    except OSError as err:
        raise _write_error(path, err) from None
    try:
        write_all(fd, payload)
    except OSError as err:
        raise _write_error(path, err) from None
    finally:
        os.close(fd)


def _replace_atomically(path: str, target: str, payload: bytes, old_mode: int | None) -> None:
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise _write_error(path, f"no such directory {directory!r}")
    temporaries: list[str] = []
    import tempfile  # only a regular file is replaced by one: not /dev/null or stdout

    with _signals_remove(temporaries):
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
            )
        except OSError as err:
            message = f"cannot create a file in {directory!r}: {err.strerror}"
            raise _write_error(path, message) from None
        temporaries.append(tmp)
        try:
            try:
                write_all(fd, payload)
                if old_mode is not None:
                    permissions = stat.S_IMODE(old_mode)
                else:
                    umask = os.umask(0)
                    os.umask(umask)
                    permissions = 0o666 & ~umask
                os.fchmod(fd, permissions)  # mkstemp makes 0600; keep the old or normal mode
                os.fsync(fd)  # a full disk may only say so here
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise _write_error(path, err) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _silence_stdout() -> None:
    """After stdout failed, point it at /dev/null so Python's exit-time flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation, AttributeError):
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)


def stdout_error(err: OSError) -> ConvcanonError:
    """`<stdout>: error: ...` for a stdout that cannot be written (full device, closed pipe)."""
    _silence_stdout()
    return _write_error("<stdout>", err)


# What a write to a full or failing stdout raises; every write to a file goes through
# `write_output`, which reports its own, so one of these reaching the CLI came from a print.
_STDOUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE})


def is_stdout_failure(err: OSError) -> bool:
    """Whether an OSError that escaped a command is a print to stdout that could not be written."""
    return err.errno in _STDOUT_ERRNOS


def write_stdout(data: str | bytes) -> None:
    """Write to stdout and flush, so a full device or closed pipe is an error here, not at exit."""
    try:
        if isinstance(data, str):
            try:
                sys.stdout.write(data)  # encodes the whole text before writing any of it
            except UnicodeEncodeError:  # a name from argv that is not UTF-8, on a strict stdout
                if hasattr(sys.stdout, "buffer"):
                    sys.stdout.flush()
                    sys.stdout.buffer.write(encode_text(data, sys.stdout.encoding))
                else:
                    sys.stdout.write(data.encode("utf-8", "backslashreplace").decode())
        elif hasattr(sys.stdout, "buffer"):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data.decode(errors="replace"))
        sys.stdout.flush()
    except OSError as err:
        raise stdout_error(err) from None


def flush_stdout() -> None:
    """Flush what commands printed; a failure is `<stdout>: error: ...`."""
    try:
        sys.stdout.flush()
    except OSError as err:
        raise stdout_error(err) from None
    except ValueError:  # stdout closed by the caller
        pass


MLIR_BYTECODE_MAGIC = b"ML\xefR"


class ModuleFromBytecode(str):
    """The text of a module read from MLIR bytecode (a portable artifact deserialized): its
    locations are the ones the bytecode stores, and none of its positions is in the file.

    Read for a reader that parses bytecode itself (`read_mlir_input(..., as_text=False)`), the
    text is empty and `bytecode` holds plain MLIR bytecode that the child process read without
    failing: the same library reads the same bytes the same way in this process."""

    bytecode: bytes = b""


BINARY_READER_TIMEOUT = 300.0  # seconds; MLIR reads a large bytecode file in a few


CHILD_LOCATED = "@at "  # a child's error line: `@at LINE:COL message` when it has a position


def run_in_child(
    call: str,
    argument: str,
    data: bytes,
    filename: str,
    what: str,
    timeout: float = BINARY_READER_TIMEOUT,
) -> bytes:
    """`call` (`from m import f; f()`) in a child Python with `data` on its stdin and `filename`
    and `argument` as its arguments; its stdout. A library that aborts or hangs there, or the
    line a child writes before exiting 1 (`CHILD_LOCATED` places it in the file), is
    `filename: error: ...` here."""
    import subprocess

    from convcanon.child_process import child_env, how_it_ended, native_failure_message, python_argv

    try:
        child = subprocess.run(
            [*python_argv(call), filename, argument],
            input=data,
            capture_output=True,
            env=child_env(),
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:  # the child is killed; a native hang is ours to bound
        raise ConvcanonError(
            f"{what} did not finish in {timeout:g} s", SourceLoc(filename)
        ) from None
    stderr = child.stderr.decode(errors="replace")
    if child.returncode == 0:
        return child.stdout
    if child.returncode == 1:
        lines = [line for line in stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"{what} failed"
        located = re.fullmatch(rf"{CHILD_LOCATED}(\d+):(\d+) (.*)", message)
        if located is None:
            raise ConvcanonError(message, SourceLoc(filename))
        raise ConvcanonError(located[3], SourceLoc(filename, int(located[1]), int(located[2])))
    raise ConvcanonError(
        f"{what} {how_it_ended(child.returncode)}: {native_failure_message(stderr)}",
        SourceLoc(filename),
    )


def module_text_from_bytecode(data: bytes, name: str, as_text: bool = True) -> ModuleFromBytecode:
    """MLIR bytecode (a portable artifact too) as module text, read in a child process; or,
    without `as_text`, checked there and handed back as plain bytecode (see ModuleFromBytecode):
    printing and parsing text again costs a large module seconds."""
    if len(data) > (limit := _input_limit.get()):
        raise _over_limit(SourceLoc(name), limit, len(data))
    call = "from convcanon.hlo.formats import read_child; read_child()"
    out = run_in_child(
        call, "text" if as_text else "bytecode", data, name, "MLIR's bytecode reader"
    )
    if as_text:
        return ModuleFromBytecode(out.decode())
    checked = ModuleFromBytecode("")
    checked.bytecode = out or data  # an artifact comes back deserialized; other bytecode as is
    return checked


def read_mlir_input(path: str, *, as_text: bool = True) -> tuple[str, str]:
    """Read a module for any command: MLIR text, or MLIR bytecode from any producer (a StableHLO
    portable artifact too), read in a child process and returned as text (or, without
    `as_text`, as checked bytecode: see ModuleFromBytecode). XLA HLO (text or a binary
    HloModuleProto) is refused with a hint to convert it."""
    name, data = read_input_bytes(path, text=True)
    if data.startswith(MLIR_BYTECODE_MAGIC):
        return name, module_text_from_bytecode(data, name, as_text)
    try:
        text = _decoded(name, data)
    except NotUtf8Error as err:
        # a serialized proto is binary from its first bytes; a bad byte further in is a text's
        if err.offset < 64:
            err.message += (
                "; if it is a serialized XLA HloModuleProto (.pb), convert it with --input-hlo "
                "(convcanon-opt, explain)"
            )
        raise
    if text.lstrip().startswith("HloModule"):
        stripped = len(text) - len(text.lstrip())
        line = text.count("\n", 0, stripped) + 1
        raise ConvcanonError(
            "this is XLA HLO text, not MLIR: convert it to StableHLO with --input-hlo "
            "(convcanon-opt, explain)",
            SourceLoc(name, line, 1),
        )
    return name, text
