"""MLIR bytecode whose type nests too deep for MLIR's printer (a 30k-deep tuple, which bytecode
holds without any text) is a diagnostic: its reader child prints it once, so the printer's
stack overflow kills the child, not the command, which died by SIGSEGV printing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_support import CNN  # pyright: ignore[reportMissingImports]

ENTRY = "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"
# jaxlib parses the chain (aliases nest no text) and writes it as bytecode; only printing recurses
WRITE_DEEP_BYTECODE = """
import sys
from jaxlib.mlir import ir
from convcanon.hlo.context import make_context
depth = 30_000
lines = ["!t0 = tuple<f32>"] + [f"!t{i} = tuple<!t{i - 1}>" for i in range(1, depth)]
lines.append(f"func.func @main(%a: !t{depth - 1}) -> !t{depth - 1} {{")
lines.append(f"  return %a : !t{depth - 1}\\n}}")
module = ir.Module.parse("\\n".join(lines), make_context())
with open(sys.argv[1], "wb") as out:
    module.operation.write_bytecode(out)
"""


def _opt(*args: object) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-c", ENTRY, *map(str, args)]
    return subprocess.run(argv, capture_output=True)


def test_a_type_too_deep_to_print_is_a_diagnostic(tmp_path: Path) -> None:
    deep = tmp_path / "deep.mlirbc"
    subprocess.run([sys.executable, "-c", WRITE_DEEP_BYTECODE, str(deep)], check=True)
    done = _opt(deep, "-o", tmp_path / "out.mlir")
    assert done.returncode == 1, done.returncode
    assert done.stderr.decode().startswith(
        f"{deep}: error: MLIR's bytecode reader was killed by SIGSEGV"
    )
    assert not (tmp_path / "out.mlir").exists()


def test_bytecode_still_reads(tmp_path: Path) -> None:
    bytecode = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", bytecode).returncode == 0
    from_text, from_bytecode = _opt(CNN), _opt(bytecode)
    assert from_bytecode.returncode == 0, from_bytecode.stderr
    assert from_bytecode.stdout == from_text.stdout
