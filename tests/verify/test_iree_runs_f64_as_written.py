"""`verify --engine iree` runs an f64 module in f64. IREE demotes f64 to f32 by default, which
changed the entry's signature: every f64 argument was refused at run time ("input0 ...
element type mismatch"), after a multi-line warning from the compiler."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.runtime")

CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
F64 = """func.func @main(%a: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<3xf64> {
  %0 = stablehlo.multiply %a, %b : tensor<3xf64>
  %1 = stablehlo.add %0, %a : tensor<3xf64>
  return %1 : tensor<3xf64>
}
"""


def test_an_f64_module_runs_in_f64_on_iree():
    from convcanon.verify.engines import iree_engine

    a = np.array([1.0 + 2.0**-40, 3.0, -0.5], np.float64)  # 2^-40 is below f32's resolution
    b = np.array([1.0, 2.0**-30, 4.0], np.float64)
    (got,) = iree_engine(F64, "f64.mlir", "main", [a, b])
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, a * b + a)


def test_verify_of_an_f64_module_on_iree_is_ok_and_quiet(tmp_path: Path):
    module = tmp_path / "f64.mlir"
    module.write_text(F64)
    argv = ["verify", str(module), str(module), "--engine", "iree", "--trials", "1"]
    result = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: 1 trial(s) on engine iree")
    assert result.stderr == ""
