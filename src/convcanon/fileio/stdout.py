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

from convcanon.diagnostics import ConvcanonError, SourceLoc


def _display(path: str) -> str:
    return path if path else "''"


def write_error(path: str, err: OSError | str) -> ConvcanonError:
    """`OUT: error: ...`, the one message every failed write gives, stdout's and a file's."""
    if isinstance(err, OSError):
        reason = err.strerror or str(err)
        if err.errno == errno.ENOSPC:
            reason = "no space left on the device"
        message = f"cannot write the output: {reason}"
    else:
        message = err
    return ConvcanonError(message, SourceLoc(_display(path)))


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
