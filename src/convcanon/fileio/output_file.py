"""Writing a command's output so that nothing is ever harmed.

A regular file (also through a symlink, which stays a link) is replaced atomically by a temporary
file in the target's own directory and a rename; a device, FIFO or `/proc/self/fd/N` is written
in place. Every failure is `OUT: error: ...`, and no temporary file is left behind, also when
SIGTERM or SIGHUP arrives mid-write.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.fileio.stdout import encode_text, write_all, write_error, write_stdout


def _real_path(path: str) -> str:
    try:
        return os.path.realpath(path)
    except OSError:  # a link that cannot be read (another user's /proc/PID/fd/N)
        return os.path.abspath(path)


def _overwrites(input_path: str, output_path: str) -> bool:
    """Whether writing `output_path` replaces the regular file `input_path` (also through
    symlinks or hard links). A device, FIFO or terminal both read and written is no file
    replaced: `convcanon-opt /dev/null -o /dev/null` runs, as mlir-opt's does."""
    try:
        if not os.path.samefile(input_path, output_path):
            return False
    except OSError:  # one of them does not exist (yet): the same only if spelled alike
        return _real_path(input_path) == _real_path(output_path)
    try:
        return stat.S_ISREG(os.stat(output_path).st_mode)
    except OSError:
        return True


def check_output_path(input_path: str, output_path: str | None) -> None:
    """Refuse an output that would overwrite the input (see `_overwrites`)."""
    if not output_path or output_path == "-" or input_path == "-":
        return
    if _overwrites(input_path, output_path):
        raise UsageError(f"output path {output_path!r} is the input file; refusing to overwrite it")


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


_OWN_FD = re.compile(r"/proc/(?:self|thread-self|\d+)/fd/(\d+)")


def _resolve_target(path: str) -> tuple[str, int | None]:
    """Follow symlinks to the file to write: (final path, our own fd if it is /proc/self/fd/N).

    Resolving one link at a time keeps what `os.path.realpath` loses: whether the chain passes
    through `/proc/self/fd/N` (`/dev/stdout`, `/dev/fd/1`), whose link text is no real path.
    """
    current = path
    for _ in range(64):
        try:
            parent = os.path.realpath(os.path.dirname(current) or ".")
            current = os.path.join(parent, os.path.basename(current))
            own = _OWN_FD.fullmatch(current)
            if own and (current.startswith("/proc/self/") or f"/{os.getpid()}/" in current):
                return current, int(own[1])
            if parent == "/proc" or parent.startswith("/proc/") or not os.path.islink(current):
                return current, None
            current = os.path.join(parent, os.readlink(current))
        except OSError as err:  # a link we may not read (another user's /proc/PID/fd/N)
            raise write_error(path, err) from None
    raise write_error(path, "too many levels of symbolic links")


def descriptor_named(path: str) -> int | None:
    """The descriptor of this process that `path` names (`/dev/stdin` is 0, `/dev/fd/1` and
    `/proc/self/fd/1` are 1), or None for any other path."""
    if not path or path == "-":
        return None
    try:
        return _resolve_target(path)[1]
    except ConvcanonError:  # a link that cannot be read: the read or write will say so
        return None


def is_stdout(path: str | None) -> bool:
    """Whether writing `path` writes this process's stdout: `-`, or a name of its descriptor 1,
    where a status line printed first would end up inside the output."""
    return path == "-" or (path is not None and descriptor_named(path) == 1)


def write_output(path: str, data: str | bytes) -> None:
    """Write a command's whole output to `path` (`-` is stdout) so that nothing is ever harmed."""
    payload = encode_text(data) if isinstance(data, str) else data
    if path == "-":
        if isinstance(data, bytes) and _is_terminal(sys.stdout):
            # as llvm-as refuses to print bitcode to a console
            raise write_error(
                "<stdout>",
                "refusing to write binary output to a terminal; redirect stdout or use -o FILE",
            )
        write_stdout(data)
        return
    if not path:
        raise write_error(path, "the output path is empty")
    target, own_fd = _resolve_target(path)
    if own_fd is not None:
        _write_in_place(path, target, payload, own_fd)
        return
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as err:
        raise write_error(path, err) from None
    if (mode is not None and stat.S_ISDIR(mode)) or not os.path.basename(target):
        raise write_error(path, "is a directory")
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
        raise write_error(path, err) from None
    try:
        write_all(fd, payload)
    except OSError as err:
        raise write_error(path, err) from None
    finally:
        os.close(fd)


def _replace_atomically(path: str, target: str, payload: bytes, old_mode: int | None) -> None:
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise write_error(path, f"no such directory {directory!r}")
    temporaries: list[str] = []
    import tempfile  # only a regular file is replaced by one: not /dev/null or stdout

    with _signals_remove(temporaries):
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
            )
        except OSError as err:
            message = f"cannot create a file in {directory!r}: {err.strerror}"
            raise write_error(path, message) from None
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
            raise write_error(path, err) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
