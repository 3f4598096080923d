"""Scalar (`!migraphx.shaped<f32>`) arguments and results: a reduce-to-scalar program runs under
`convcanon run` with numpy's answer, and its TOSA lowering gives the same answer on IREE."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from convcanon.cli import main
from convcanon.migraphx import layout

from .harness import check_with_iree, lower

# sum over a transposed (column-major) 4x3 input, to a scalar, scaled by a scalar literal and
# offset by a scalar argument
REDUCE_TO_SCALAR = """\
func.func @main(%x: !migraphx.shaped<4x3xf32, 1x4>, %b: !migraphx.shaped<f32>)
    -> !migraphx.shaped<f32> {
  %1 = migraphx.reduce_sum %x {axes = [0, 1]} : <4x3xf32, 1x4> -> <1x1xf32, 1x1>
  %2 = migraphx.reshape %1 {dims = []} : <1x1xf32, 1x1> -> <f32>
  %k = migraphx.literal (dense<0.5> : tensor<f32>) : <f32>
  %3 = migraphx.mul %2, %k : <f32>, <f32> -> <f32>
  %4 = migraphx.add %3, %b : <f32>, <f32> -> <f32>
  return %4 : !migraphx.shaped<f32>
}
"""


def test_reduce_to_scalar_runs_and_agrees_with_numpy(tmp_path: Path) -> None:
    program = tmp_path / "scalar.mlir"
    program.write_text(REDUCE_TO_SCALAR)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    b = np.float32(1.25)
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(
        inputs,
        arg0=layout.write_buffer(x, x.shape, [1, 4]),
        arg1=np.array([b], dtype=np.float32),
    )
    assert main(["run", str(program), "--inputs", str(inputs), "--output", str(outputs)]) == 0
    with np.load(outputs) as data:
        result = data["result0"]
    assert result.shape == (1,)  # a scalar's flat buffer holds one element
    np.testing.assert_allclose(result[0], 0.5 * x.sum() + b, rtol=1e-5)


def test_reduce_to_scalar_lowering_agrees_on_iree() -> None:
    tosa_text = check_with_iree(REDUCE_TO_SCALAR)
    assert "-> tensor<1xf32>" in tosa_text
    assert "migraphx." not in lower(REDUCE_TO_SCALAR)
