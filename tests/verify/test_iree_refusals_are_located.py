"""IREE compiles the module from its stdin: a refusal is placed at the file's line and column
(it said `<stdin>:3:8`, or `-:3:8` for a reprinted module, and dumped the op with IREE's own
locations)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]

pytest.importorskip("iree.compiler")

CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
UNKNOWN_TARGET = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  %1 = stablehlo.custom_call @no_such_target(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


@pytest.mark.parametrize("visibility", ["public", "private"], ids=["as-is", "reprinted"])
def test_an_iree_refusal_is_at_the_op_in_the_file(tmp_path: Path, visibility: str):
    """A private entry is made public first, so IREE compiles a reprinted module."""
    text = UNKNOWN_TARGET
    if visibility == "private":
        text = text.replace("func.func @main", "func.func private @main")
    module = tmp_path / "m.mlir"
    module.write_text(text)
    argv = ["verify", str(module), str(module), "--engine", "iree", "--trials", "1"]
    result = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=600)
    assert result.returncode == 1
    assert diagnostic_lines(result.stderr)[:-1] == [
        f"{module}:3:8: error: IREE rejected the module: failed to legalize operation"
        " 'stablehlo.custom_call' that was explicitly marked illegal"
    ]
