"""torch-mlir writes BatchNorm's eps as `arith.constant`: the reference interpreter reads it
like a `stablehlo.constant`, and the module's result equals XLA's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.verify.engines import ENGINES

BATCH_NORM_EPS = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %eps = arith.constant dense<{eps}> : tensor<1xf64>
  %0 = stablehlo.convert %eps : (tensor<1xf64>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.add %x, %2 : tensor<4xf32>
  %4 = stablehlo.sqrt %3 : tensor<4xf32>
  return %4 : tensor<4xf32>
}
"""


@settings(max_examples=20, deadline=None)
@given(eps=st.floats(1e-8, 1.0), seed=st.integers(0, 2**16))
def test_an_arith_constant_reads_like_a_stablehlo_constant(eps: float, seed: int) -> None:
    text = BATCH_NORM_EPS.replace("{eps}", f"{eps:.17e}")
    x = np.random.default_rng(seed).uniform(0, 2, 4).astype(np.float32)
    reference = ENGINES["reference"](text, "m.mlir", "main", [x])[0]
    xla = ENGINES["xla"](text, "m.mlir", "main", [x])[0]
    np.testing.assert_allclose(reference, xla, rtol=1e-6)
    np.testing.assert_allclose(reference, np.sqrt(x + np.float32(eps)), rtol=1e-6)
