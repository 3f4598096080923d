"""A scalar argument (`tensor<f32>`, as a learning rate or a step count in a JAX training step)
reaches every engine as a 0-d array: IREE refused the 1-d array `np.ascontiguousarray` made of it
("input0 shape rank mismatch; expected 0 (scalar) but have 1")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
SGD_STEP = """func.func @main(%w: tensor<3x3xf32>, %g: tensor<3x3xf32>, %lr: tensor<f32>,
                 %step: tensor<i32>) -> (tensor<3x3xf32>, tensor<i32>) {
  %0 = stablehlo.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
  %1 = stablehlo.multiply %0, %g : tensor<3x3xf32>
  %2 = stablehlo.subtract %w, %1 : tensor<3x3xf32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %3 = stablehlo.add %step, %one : tensor<i32>
  return %2, %3 : tensor<3x3xf32>, tensor<i32>
}
"""


@pytest.mark.parametrize("engine", ["reference", "xla", "iree"])
def test_a_module_with_scalar_arguments_verifies_on_every_engine(tmp_path: Path, engine: str):
    if engine != "reference":
        pytest.importorskip("jax" if engine == "xla" else "iree.runtime")
    module = tmp_path / "sgd.mlir"
    module.write_text(SGD_STEP)
    argv = ["verify", str(module), str(module), "--engine", engine, "--trials", "2"]
    result = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok: 2 trial(s) on engine {engine}")
