"""A command started with stdin, stdout or stderr closed (`>&-`, `2>&-`, `<&-`) behaves as with
each open on a descriptor that fails: output to a closed stdout is `<stdout>: error: ...`, exit
1 (it was a traceback); output to a file is written and the exit is 0 (a closed stderr made
every run exit 1, with --stats before writing anything); a diagnostic never goes to stdout (a
closed stderr sent it there); and `--help` into a stdout that fails is an error, not a silent
exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = "import sys; from convcanon.cli import {0}; sys.exit({0}())"
MODULE = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.abs %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _run(
    entry: str, args: list[str], closed: tuple[int, ...], stdout: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The command with the descriptors `closed` closed before it starts (as the shell's `>&-`);
    its stdout into `stdout` if given, else a pipe; its stderr, if open, a pipe."""

    def close() -> None:
        for fd in closed:
            os.close(fd)

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(stdout or os.devnull, "wb") as target:
        return subprocess.run(
            [sys.executable, "-c", ENTRY.format(entry), *args],
            stdin=subprocess.DEVNULL,
            stdout=target if stdout else subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=close,
            env=env,
        )


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    return path


BAD_STDOUT = b"<stdout>: error: cannot write the output: Bad file descriptor\n"


@pytest.mark.parametrize(
    ("entry", "argv"),
    [
        ("opt_main", ["{m}"]),
        ("main", ["explain", "{m}"]),
        ("main", ["run", "{m}"]),
        ("opt_main", ["--help"]),
    ],
    ids=["convcanon-opt", "explain", "run", "--help"],
)
def test_output_to_a_closed_stdout_is_an_error(module: Path, entry: str, argv: list[str]) -> None:
    done = _run(entry, [a.format(m=module) for a in argv], closed=(1,))
    assert done.returncode == 1
    assert done.stderr.endswith(BAD_STDOUT)  # after run's note on its random inputs
    assert b"Traceback" not in done.stderr


def test_output_to_a_file_with_stdout_closed_is_written(module: Path, tmp_path: Path) -> None:
    out, expected = tmp_path / "out.mlir", tmp_path / "expected.mlir"
    assert _run("opt_main", [str(module), "-o", str(expected)], closed=()).returncode == 0
    done = _run("opt_main", [str(module), "-o", str(out)], closed=(1,))
    assert (done.returncode, done.stderr) == (0, b"")
    assert out.read_bytes() == expected.read_bytes()


def test_a_closed_stderr_loses_no_output_and_no_exit_code(module: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    argv = [str(module), "--stats", "--mlir-timing", "-o", str(out)]
    done = _run("opt_main", argv, closed=(2,))
    assert done.returncode == 0
    assert "stablehlo.abs" in out.read_text()


def test_a_diagnostic_never_goes_to_stdout(tmp_path: Path) -> None:
    listing = tmp_path / "stdout.txt"
    done = _run("opt_main", [str(tmp_path / "missing.mlir")], closed=(2,), stdout=listing)
    assert done.returncode == 1
    assert listing.read_bytes() == b""


def test_stdin_closed_is_no_stdin_to_read() -> None:
    done = _run("opt_main", ["-"], closed=(0,))
    assert (done.returncode, done.stderr) == (1, b"<stdin>: error: no stdin to read\n")


@pytest.mark.parametrize("unbuffered", [False, True])
def test_help_into_a_full_stdout_is_an_error(unbuffered: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-c", ENTRY.format("main"), "run", "--help"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=env,
        )
    assert done.returncode == 1
    assert done.stderr == b"<stdout>: error: cannot write the output: no space left on the device\n"
