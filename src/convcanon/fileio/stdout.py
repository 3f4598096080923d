"""A command's stdout: while it runs, stdout stands on a writer that writes everything (short
counts, non-blocking pipes) or fails, and every failure is `<stdout>: error: ...`."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import Any

from convcanon.diagnostics import ConvcanonError, SourceLoc, path_named


def write_error(path: str, err: OSError | str) -> ConvcanonError:
    """`OUT: error: ...`, the one message every failed write gives, stdout's and a file's."""
    if isinstance(err, OSError):
        reason = err.strerror or str(err)
        if err.errno == errno.ENOSPC:
            reason = "no space left on the device"
        message = f"cannot write the output: {reason}"
    else:
        message = err
    return ConvcanonError(message, SourceLoc(path_named(path)))


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
        self.failure: OSError | None = None  # the first failed write, reported or not

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        """Everything, or the failure raised once; after it, writes are dropped: the command
        reports the failure, and the text layer's flush at exit must not raise it again."""
        view = memoryview(data).cast("B")
        if self.failure is None:
            try:
                write_all(self._fd, view)
            except OSError as err:
                self.failure = err
                raise
        return view.nbytes


def _hold_if_closed(fd: int, flags: int) -> bool:
    """Whether the process started with standard descriptor `fd` closed; if so, /dev/null opened
    with `flags` now holds its number, so no file we open is given it (where a library's write to
    stdout or stderr would land in our output) and a use of it fails or goes nowhere."""
    try:
        os.fstat(fd)
        return False
    except OSError:
        pass
    null = os.open(os.devnull, flags)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
    else:
        os.set_inheritable(fd, True)
    return True


@contextlib.contextmanager
def standard_streams_held() -> Iterator[None]:
    """While it lasts, a command started with stdin, stdout or stderr closed (`>&-`) runs as if
    each were open on a descriptor that fails as a closed one does: its output to stdout is
    `<stdout>: error: ... Bad file descriptor` (never a traceback, never a success), its
    diagnostics go nowhere (never into stdout, where `print(file=None)` sends them), and a `-`
    input is `no stdin to read`. The descriptors stay held when it ends."""
    _hold_if_closed(0, os.O_WRONLY)  # reading it fails, as reading a closed stdin does
    _hold_if_closed(1, os.O_RDONLY)  # writing it fails with EBADF, as writing a closed one does
    stderr_closed = _hold_if_closed(2, os.O_WRONLY) and sys.stderr is None
    if stderr_closed:
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), errors="backslashreplace", line_buffering=True
        )
    try:
        yield
    finally:
        if stderr_closed:
            sys.stderr = None  # pyright: ignore[reportAttributeAccessIssue]  # as Python had it


def _process_stdout() -> tuple[int, str, str, bool, bool] | None:
    """(descriptor, encoding, errors, line buffering, unbuffered) of the process's own stdout; of
    descriptor 1 when the process started without one (`>&-`, held by `standard_streams_held`);
    None when a caller put a stream of its own in place (a test's StringIO, pytest's capture)."""
    original = sys.stdout
    if original is None:
        return (1, "utf-8", "strict", False, False) if sys.__stdout__ is None else None
    try:
        if original is not sys.__stdout__:
            return None
        fd = original.fileno()
        original.flush()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    unbuffered = not isinstance(getattr(original, "buffer", None), io.BufferedWriter)
    errors = original.errors or "strict"
    return fd, original.encoding, errors, bool(original.line_buffering), unbuffered


@contextlib.contextmanager
def stdout_written_whole() -> Iterator[None]:
    """While it lasts, `sys.stdout` (prints included) writes through a `WholeWriter`, with the
    encoding, error handler and buffering it had. Only the process's own stdout is replaced; a
    stream a caller put in place (a test's StringIO, pytest's capture) is left as it is."""
    original = sys.stdout
    own = _process_stdout()
    if own is None:
        yield
        return
    fd, encoding, errors, line_buffering, unbuffered = own
    raw = WholeWriter(fd)
    binary: Any = raw if unbuffered else io.BufferedWriter(raw)
    sys.stdout = io.TextIOWrapper(
        binary,
        encoding=encoding,
        errors=errors,
        line_buffering=line_buffering,
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
    return write_error("<stdout>", err)


# What a write to a full or failing stdout raises; every write to a file goes through
# `write_output`, which reports its own, so one of these reaching the CLI came from a print.
_STDOUT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE, errno.EBADF}
)


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
    """Flush what commands printed; a failure is `<stdout>: error: ...`, also one that a printer
    caught and dropped (argparse's `--help` ignores a failed write, then exits 0)."""
    try:
        sys.stdout.flush()
    except OSError as err:
        raise stdout_error(err) from None
    except ValueError:  # stdout closed by the caller
        pass
    buffer = getattr(sys.stdout, "buffer", None)
    raw = getattr(buffer, "raw", buffer)
    if isinstance(raw, WholeWriter) and raw.failure is not None:
        raise stdout_error(raw.failure)
