"""A conv whose result is empty (no window fits: padding that crops past the input, or a dilated
window wider than any input) runs to that empty result, as on XLA. The reference refused the
first ("negative padding crops more than the dimension holds") and leaked numpy's "Python int
too large to convert to C long" on the second."""

# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import numpy as np
import pytest

from .xla_compare import assert_matches_xla

pytest.importorskip("jax")

CONV = """func.func public @main(%x: tensor<1x4x2xf32>, %w: tensor<2x2x3xf32>) -> tensor<1x0x3xf32> {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<1x4x2xf32>, tensor<2x2x3xf32>) -> tensor<1x0x3xf32>
  return %0 : tensor<1x0x3xf32>
}}
"""


@pytest.mark.parametrize(
    "window",
    [
        "pad = [[-6, 0]]",
        "pad = [[0, -9]], lhs_dilate = [2]",
        "rhs_dilate = [4611686018427387904]",
        "rhs_dilate = [2305843009213693952], stride = [3]",
        "pad = [[-2, 0]], rhs_dilate = [3]",
    ],
)
def test_a_conv_without_a_window_that_fits_is_empty_as_on_xla(window: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 2)).astype(np.float32)
    w = rng.standard_normal((2, 2, 3)).astype(np.float32)
    assert_matches_xla(CONV.format(window=window), [x, w])
