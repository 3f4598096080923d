"""stdout gets a command's whole output, or `<stdout>: error: ...` and exit 1, whatever Python's
buffering (`PYTHONUNBUFFERED=1`) and whatever the pipe does (its reader late on a non-blocking
pipe, or gone after the first line as `| head -1` leaves it)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fuzz.test_bad_input_table import _add_chain  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.fileio.stdout import WholeWriter

ENTRY = "import sys; from convcanon.cli import {0}; sys.exit({0}())"
LONG_CHAIN = 6000  # ops: well over the 64 KiB a pipe holds, in every command's output


def _many_results(count: int) -> str:
    """@main returning `count` constants: `run` prints a line for each."""
    types = ", ".join(["tensor<2xf32>"] * count)
    body = "".join(
        f"  %{i} = stablehlo.constant dense<{i}.0> : tensor<2xf32>\n" for i in range(count)
    )
    names = ", ".join(f"%{i}" for i in range(count))
    return f"func.func @main() -> ({types}) {{\n{body}  return {names} : {types}\n}}\n"


COMMANDS = {
    "convcanon-opt": ("opt_main", ["{chain}"]),
    "graph -o -": ("main", ["graph", "{chain}", "--format", "dot", "-o", "-"]),
    "run (prints)": ("main", ["run", "{results}"]),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("stdout")
    files = {"{chain}": _add_chain(LONG_CHAIN), "{results}": _many_results(1500)}
    for key, text in files.items():
        (work / key.strip("{}")).write_text(text)
    return {key: work / key.strip("{}") for key in files}


def _start(
    command: str, inputs: dict[str, Path], unbuffered: bool, stdout: int
) -> subprocess.Popen:
    entry, argv = COMMANDS[command]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    args = [str(inputs[a]) if a in inputs else a for a in argv]
    return subprocess.Popen(
        [sys.executable, "-c", ENTRY.format(entry), *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
    )


_EXPECTED: dict[tuple[str, Path], bytes] = {}


def _expected_output(command: str, inputs: dict[str, Path]) -> bytes:
    """What the command writes into a pipe read at once, blocking, as Python buffers by default
    (run once per command and input)."""
    key = (command, inputs["{chain}"])
    if key not in _EXPECTED:
        process = _start(command, inputs, unbuffered=False, stdout=subprocess.PIPE)
        out, err = process.communicate()
        assert process.returncode == 0, err
        _EXPECTED[key] = out
    return _EXPECTED[key]


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED=1"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_non_blocking_pipe_read_late_gets_everything(
    command: str, unbuffered: bool, inputs: dict[str, Path]
) -> None:
    """Another process sharing the pipe made it non-blocking; the reader starts a second late.
    Before, the command exited 0 after the first 65,536 bytes."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the flag lives in the pipe, shared with the child
    try:
        process = _start(command, inputs, unbuffered, stdout=write_end)
    finally:
        os.close(write_end)
    time.sleep(1.0)
    with os.fdopen(read_end, "rb") as reader:
        out = reader.read()
    _, err = process.communicate()
    assert (process.returncode, err.decode()) == (0, "")
    assert out == _expected_output(command, inputs)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED=1"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_reader_gone_after_the_first_line_is_an_error(
    command: str, unbuffered: bool, inputs: dict[str, Path]
) -> None:
    """`| head -1`: the reader takes a line and leaves. The output cannot all be written, so the
    command must not say it succeeded (before, unbuffered, it exited 0 without a word)."""
    read_end, write_end = os.pipe()
    try:
        process = _start(command, inputs, unbuffered, stdout=write_end)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        first = reader.readline()
    _, err = process.communicate()
    assert first
    assert process.returncode == 1, err
    assert err.decode() == "<stdout>: error: cannot write the output: Broken pipe\n"


@settings(max_examples=30, deadline=None)
@given(
    size=st.integers(0, 400_000),
    reads=st.lists(st.integers(1, 100_000), min_size=1, max_size=8),
    pause=st.sampled_from([0.0, 0.001, 0.02]),
    blocking=st.booleans(),
)
def test_the_writer_writes_everything_into_any_pipe(
    size: int, reads: list[int], pause: float, blocking: bool
) -> None:
    """Any payload through a pipe (blocking or not) whose reader takes chunks of any size at any
    pace arrives whole: short counts and EAGAIN are carried on, never dropped."""
    payload = bytes(i * 7 % 251 for i in range(size))
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, blocking)
    received = bytearray()

    def read_all() -> None:
        turn = 0
        while True:
            time.sleep(pause)
            chunk = os.read(read_end, reads[turn % len(reads)])
            if not chunk:
                return
            received.extend(chunk)
            turn += 1

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        assert WholeWriter(write_end).write(payload) == size
    finally:
        os.close(write_end)
        reader.join()
        os.close(read_end)
    assert bytes(received) == payload


def test_the_writer_raises_a_closed_pipe_once_then_drops() -> None:
    """EPIPE is raised to the command, which reports it; the text layer's flush at exit then
    finds nothing to fail on (no second report, no `Exception ignored`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    writer = WholeWriter(write_end)
    try:
        with pytest.raises(BrokenPipeError):
            writer.write(b"x" * 10)
        assert writer.write(b"y" * 10) == 10
    finally:
        os.close(write_end)
