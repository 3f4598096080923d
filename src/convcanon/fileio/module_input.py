"""Reading a module in any format: MLIR text, or MLIR bytecode (a StableHLO portable artifact
too) read in a child process, where a library that aborts or hangs cannot take the command down."""

from __future__ import annotations

import math
import re

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.limits import input_limit, over_limit
from convcanon.fileio.reading import (
    MLIR_BYTECODE_MAGIC,
    NotUtf8Error,
    decoded,
    read_input_bytes,
)


class ModuleFromBytecode(str):
    """The text of a module read from MLIR bytecode (a portable artifact deserialized): its
    locations are the ones the bytecode stores, and none of its positions is in the file.

    Read for a reader that parses bytecode itself (`read_mlir_input(..., as_text=False)`), the
    text is empty and `bytecode` holds plain MLIR bytecode that the child process read without
    failing: the same library reads the same bytes the same way in this process."""

    bytecode: bytes = b""


# A reader of hostile bytes can loop forever (jaxlib's bytecode reader does on some flipped
# bytes), so the wait is bounded by the work the input can need: the child reads, verifies and
# prints 0.9-1.8 MB of bytecode a second here, under a load of 3-6 on 2 cores
# (bench/RESULTS_reader.md), and an honest file is given 10-18x that, never under a floor
# 30-60x what starting the child takes on such a machine.
READER_FLOOR_SECONDS = 10.0
READER_SECONDS_PER_MB = 10.0


def reader_budget(size: int) -> float:
    """Whole seconds a child may take to read `size` bytes of input."""
    return float(max(READER_FLOOR_SECONDS, math.ceil(size * READER_SECONDS_PER_MB / 1e6)))


CHILD_LOCATED = "@at "  # a child's error line: `@at LINE:COL message` when it has a position


def run_in_child(
    call: str,
    argument: str,
    data: bytes,
    filename: str,
    what: str,
    timeout: float | None = None,
) -> bytes:
    """`call` (`from m import f; f()`) in a child Python with `data` on its stdin and `filename`
    and `argument` as its arguments; its stdout. A library that aborts or hangs there, or the
    line a child writes before exiting 1 (`CHILD_LOCATED` places it in the file), is
    `filename: error: ...` here. The child reads `data` unless given its own `timeout`: it has
    `reader_budget(len(data))` seconds, past which the input is taken for damaged."""
    import subprocess

    from convcanon.child_process import child_env, how_it_ended, native_failure_message, python_argv

    reading = timeout is None
    if timeout is None:
        timeout = reader_budget(len(data))
    try:
        child = subprocess.run(
            [*python_argv(call), filename, argument],
            input=data,
            capture_output=True,
            env=child_env(),
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:  # the child is killed; a native hang is ours to bound
        why = (
            f", the time allowed for {len(data)} bytes ({READER_SECONDS_PER_MB:g} s a MB, at least"
            f" {READER_FLOOR_SECONDS:g} s); the file may be damaged"
            if reading
            else ""
        )
        raise ConvcanonError(
            f"{what} did not finish in {timeout:g} s{why}", SourceLoc(filename)
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
    if len(data) > (limit := input_limit()):
        raise over_limit(SourceLoc(name), limit, len(data))
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
    name, data = read_input_bytes(path)
    if data.startswith(MLIR_BYTECODE_MAGIC):
        return name, module_text_from_bytecode(data, name, as_text)
    try:
        text = decoded(name, data)
    except NotUtf8Error as err:
        # a serialized proto is binary from its first bytes; a bad byte further in is a text's
        if err.offset < 64 and not err.in_string:
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
