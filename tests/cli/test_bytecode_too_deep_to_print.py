"""MLIR bytecode that nests too deep for MLIR's printer or writer (a 30k-deep tuple type, a
22k-deep call-site location: bytecode holds each in a few hundred KB, with no text to nest) is a
diagnostic: the reading child writes the module back as bytecode on an eighth of its stack, so
a stack overflow kills the child, not the command, which died by SIGSEGV printing it. The check
keeps a margin (a nest the printer would still take on a whole stack is refused) and lets real
nesting (a few dozen levels) through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CNN  # pyright: ignore[reportMissingImports]

ENTRY = "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"
# jaxlib builds the nest through its API (no text to nest) and writes it as bytecode, on a
# thread with a large stack: only printing recurses further than reading
WRITE_DEEP_BYTECODE = """
import sys, threading
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from convcanon.hlo.context import make_context
kind, depth, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def write():
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            argument = ir.F32Type.get()
            if kind == "type":
                for _ in range(depth):
                    argument = ir.TupleType.get_tuple([argument])
            main = func.FuncOp("main", ir.FunctionType.get([argument], [argument]))
        block = main.add_entry_block()
        where = block
        if kind == "region":
            for _ in range(depth):
                with ir.InsertionPoint(where):
                    inner = ir.Operation.create("builtin.module", regions=1)
                where = inner.regions[0].blocks.append()
        location = ir.Location.unknown()
        if kind == "location":
            location = ir.Location.file("model.py", 1, 1)
            for line in range(depth):
                location = ir.Location.callsite(location, [ir.Location.file("caller.py", line, 1)])
        with ir.InsertionPoint(block):
            func.ReturnOp([block.arguments[0]], loc=location)
        with open(path, "wb") as out:
            module.operation.write_bytecode(out)

threading.stack_size(1 << 30)
thread = threading.Thread(target=write)
thread.start()
thread.join()
"""
NESTS_TOO_DEEP = (
    "MLIR's bytecode reader was killed by SIGSEGV: a type, attribute, location or region of the"
    " module nests deeper than this command handles"
)


def _opt(*args: object) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-c", ENTRY, *map(str, args)]
    return subprocess.run(argv, capture_output=True)


def _deep(tmp_path: Path, kind: str, depth: int) -> Path:
    path = tmp_path / f"{kind}-{depth}.mlirbc"
    subprocess.run([sys.executable, "-c", WRITE_DEEP_BYTECODE, kind, str(depth), path], check=True)
    return path


@pytest.mark.parametrize(
    ("kind", "depth", "flags"),
    [
        ("type", 30_000, []),
        # the printer dies at ~20k levels of locations with debug info, the writer at ~28k
        ("location", 22_000, ["--mlir-print-debuginfo"]),
        ("location", 22_000, ["--emit-bytecode"]),
        # within the printer's reach on a whole stack (~15k types, ~9k regions), refused: the
        # check keeps a margin
        ("type", 10_000, []),
        ("region", 6_000, []),
    ],
)
def test_a_nest_too_deep_to_print_is_a_diagnostic(
    tmp_path: Path, kind: str, depth: int, flags: list[str]
) -> None:
    deep = _deep(tmp_path, kind, depth)
    out = tmp_path / "out"
    done = _opt(deep, *flags, "-o", out)
    assert done.returncode == 1, done.returncode
    assert done.stderr.decode() == f"{deep}: error: {NESTS_TOO_DEEP}\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("kind", "printed"), [("type", b"tuple<"), ("location", b"callsite("), ("region", b"module {")]
)
def test_real_nesting_reads(tmp_path: Path, kind: str, printed: bytes) -> None:
    nested = _deep(tmp_path, kind, 200)
    done = _opt(nested, "--mlir-print-debuginfo")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(printed) >= 200


def test_bytecode_still_reads(tmp_path: Path) -> None:
    bytecode = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", bytecode).returncode == 0
    from_text, from_bytecode = _opt(CNN), _opt(bytecode)
    assert from_bytecode.returncode == 0, from_bytecode.stderr
    assert from_bytecode.stdout == from_text.stdout
