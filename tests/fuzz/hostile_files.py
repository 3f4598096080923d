"""The files a fuzzed command line names, made hostile, and what every run must leave behind.

A command line reads files under `inputs/` (none may change: bytes, kind, link target) and may
write only its named output under `out/`. Odd paths: a directory, a missing file, a FIFO (fed
by a thread each time it is opened), a file no read succeeds on (`/proc/self/mem`: EIO, also for
root), a path through a regular file (ENOTDIR).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from hypothesis import event
from hypothesis.control import currently_in_test_context

from convcanon.diagnostics import path_named

from .conftest import digest

ODD_PATHS = ["directory", "missing", "fifo", "unreadable", "through-a-file", "stdin"]


@dataclass
class Files:
    """The files of one command line, under `root`: `inputs/` holds what it reads (none of
    which may change), `out/` is where its output may go (and nothing else may appear)."""

    root: Path
    fifos: dict[Path, bytes] = field(default_factory=dict)
    stdin: bytes = b""  # what `-` reads

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def out(self) -> Path:
        return self.root / "out"


def new_files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    files = Files(tmp_path_factory.mktemp("line"))
    files.inputs.mkdir()
    files.out.mkdir()
    return files


def odd_path(files: Files, kind: str, name: str, content: bytes) -> Path:
    """`inputs/NAME` made the odd path `kind` (one of ODD_PATHS); a FIFO gives `content`, and
    so does stdin (`-`: a second `-` on the line reads nothing more)."""
    path = files.inputs / name
    if kind == "stdin":
        files.stdin = content
        return Path("-")
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
        files.fifos[path] = content
    elif kind == "unreadable":  # every read of it fails (EIO), whoever runs the test
        path.symlink_to("/proc/self/mem")
    elif kind == "through-a-file":
        (files.inputs / f"{name}.file").write_bytes(content)
        path = files.inputs / f"{name}.file" / name
    else:
        assert kind == "missing", kind
    return path


@contextlib.contextmanager
def fifos_fed(fifos: dict[Path, bytes]) -> Iterator[None]:
    """Each FIFO gets its bytes every time a reader opens it, until the command is done: a
    writer that waits for no reader never blocks the test."""
    done = threading.Event()

    def feed(path: Path, payload: bytes) -> None:
        while not done.is_set():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: nobody reads it yet
                done.wait(0.005)
                continue
            os.set_blocking(fd, True)
            with contextlib.suppress(OSError):  # the reader stopped reading (EPIPE)
                os.write(fd, payload)
            os.close(fd)

    threads = [threading.Thread(target=feed, args=item, daemon=True) for item in fifos.items()]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        done.set()
        for thread in threads:
            thread.join()


def run_in_process(
    entry: Callable[[Sequence[str]], int],
    argv: list[str],
    files: Files,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr) of `entry(argv)`, its FIFOs fed."""
    capsysbinary.readouterr()
    held, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(files.stdin))
    try:
        with fifos_fed(files.fifos):
            code = entry(argv)
    except SystemExit as stop:  # argparse's --version
        code = stop.code if isinstance(stop.code, int) else 2
    finally:
        sys.stdin = held
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err.decode(errors="replace")


def _event(what: str) -> None:
    """A statistic of the fuzz runs (fixed lines outside hypothesis record none)."""
    if currently_in_test_context():
        event(what)


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry under `directory`: a regular file by its digest, anything else by its kind."""
    seen: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            seen[str(path)] = f"link to {os.readlink(path)}"
        elif path.is_fifo():
            seen[str(path)] = "fifo"
        elif path.is_dir():
            seen[str(path)] = "directory"
        else:
            seen[str(path)] = digest(path)
    return seen


_ERROR = re.compile(r"^(?:(?P<file>.+?)(?::(?P<line>\d+):(?P<col>\d+))?: )?error: (?P<message>.*)$")


@dataclass
class Run:
    """One command line and what it did."""

    command: str
    argv: list[str]
    code: int
    out: bytes
    err: str


def check_outcome(
    run: Run,
    files: Files,
    inputs_before: dict[str, str],
    fresh: Path | None,
    exits: tuple[int, ...] = (0, 1, 2),
) -> None:
    """What every command line must do whatever its files and flags: exit in `exits`, no
    traceback, `inputs/` as it was, nothing in `out/` but `fresh` (the output, when the line
    names a new file there) and that only on success; an exit 1 ends in a placed error."""
    argv, code, err = run.argv, run.code, run.err
    _event(f"{run.command}: exit {code}")
    assert code in exits, (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    assert snapshot(files.inputs) == inputs_before, argv
    written = {p.name for p in files.out.iterdir() if not p.is_symlink()}
    assert written <= ({fresh.name} if fresh and code == 0 else set()), (argv, written, err)
    if code == 0 and fresh is not None and fresh.exists():  # not there: --version, --help
        if fresh.suffix == ".npz":
            with np.load(fresh) as results:  # a whole npz, not a partial one
                assert results.files, argv
        assert fresh.stat().st_size > 0, argv
    sources = {"<stdin>": files.stdin, **{str(path): data for path, data in files.fifos.items()}}
    lines = [line for line in diagnostic_lines(err, sources) if line.strip()]
    if code == 2:
        assert lines and ("error:" in lines[-1] or "usage:" in err), (argv, err)
    if code == 1 and run.command == "verify" and not lines:
        assert run.out.startswith((b"mismatch", b"shape-polymorphic")), (argv, run.out)
    elif code == 1:
        errors = [n for n, line in enumerate(lines) if "error: " in line]
        assert errors, (argv, err)
        notes = lines[errors[-1] + 1 :]
        assert all(": note: " in line or line.startswith("note: ") for line in notes), err
        last = _ERROR.match(lines[errors[-1]])
        assert last is not None, (argv, err)
        _check_placed(run, last)


# What an error may say of a module's text as a whole (seen in these runs: --entry, the size
# limit, two modules of different halves, inputs that do not fit the entry's arguments).
WHOLE_FILE = re.compile(
    r"no (entry )?function @|over the input size limit|cannot compare a |^input arg\d+ is "
    r"|takes \d+ (argument|flat buffer)|--inputs needs|\.npz|this one holds migraphx"
)


def _check_placed(run: Run, error: re.Match[str]) -> None:
    """An error names a file of the command line, and one in a module's text is at its line
    and column in that file."""
    _event(f"{run.command}: error {'at line:col' if error['line'] else 'unplaced'}")
    path = error["file"]
    if path is None:
        return
    named = {"<stdin>" if word == "-" else path_named(word) for word in run.argv}
    assert path in named, f"the error names {path!r}, no file of the command line: {run.argv}"
    if error["line"] is not None:
        return
    # A file's error without a position must be about the file as a whole.
    named = Path(path)
    if not named.is_file() or named.suffix != ".mlir" or named.is_symlink():
        return
    text = named.read_bytes()
    if not text.strip() or text.startswith(b"ML\xefR"):  # empty, or bytecode: no text position
        return
    if not WHOLE_FILE.search(error["message"]):
        pytest.fail(f"an error in {path} without its line and column: {error[0]!r} ({run.argv})")
