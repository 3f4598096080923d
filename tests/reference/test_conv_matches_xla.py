"""The interpreter's convolution agrees with XLA on random configurations (any rank 3-5, dimension
numbers, strides, negative padding, lhs/rhs dilation, reversal, feature and batch groups)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hlo.cases import EXAMPLES, ConvCase, all_conv_params, conv_cases, hits_known_xla_bug, parse
from hypothesis import HealthCheck, assume, given, settings

from convcanon.hlo.context import parse_module
from convcanon.hlo.dialects import STABLEHLO
from convcanon.reference.hlo_interp import tensor_type

from .xla_compare import assert_matches_xla, interpret


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv_matches_xla(case: ConvCase) -> None:
    """Where XLA is known wrong, or aborts (in this process), the conv is not compared: the
    reference's answer there is pinned against the spec in test_hlo_property_canonical."""
    (params,) = all_conv_params(parse(case.text), STABLEHLO)
    assume(not hits_known_xla_bug(params))
    assert_matches_xla(case.text, case.inputs())


def test_jax_exported_cnn_matches_xla() -> None:
    text = (EXAMPLES / "small_cnn.stablehlo.mlir").read_text()
    module = parse_module(text, "small_cnn.stablehlo.mlir")
    main = next(op for op in module.body.operations if "main" in str(op.attributes["sym_name"]))
    rng = np.random.default_rng(7)
    inputs = [
        rng.standard_normal(tensor_type(a.type).shape).astype(np.float32)
        for a in main.regions[0].blocks[0].arguments
    ]
    assert_matches_xla(text, inputs)


def _one_window_conv(window: str, kernel: int) -> str:
    return (
        f"func.func @main(%x: tensor<1x4x1xf32>, %w: tensor<{kernel}x1x1xf32>)"
        " -> tensor<1x1x1xf32> {\n"
        "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],"
        f" window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}"
        f" : (tensor<1x4x1xf32>, tensor<{kernel}x1x1xf32>) -> tensor<1x1x1xf32>\n"
        "  return %0 : tensor<1x1x1xf32>\n}\n"
    )


@pytest.mark.parametrize(
    ("window", "kernel"),
    [
        ("stride = [9223372036854775807], rhs_dilate = [3]", 2),  # one window: x0 w0 + x3 w1
        ("stride = [4611686018427387904], rhs_dilate = [4611686018427387904]", 1),  # one tap
    ],
)
def test_steps_near_int64s_limit_in_a_dim_that_never_steps_match_xla(
    window: str, kernel: int
) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 1)).astype(np.float32)
    w = rng.standard_normal((kernel, 1, 1)).astype(np.float32)
    assert_matches_xla(_one_window_conv(window, kernel), [x, w])


def test_infinite_inputs_give_xlas_nans_without_numpy_warnings() -> None:
    text = _one_window_conv("stride = [1], rhs_dilate = [1]", 2).replace("1x1x1xf32>", "1x3x1xf32>")
    x = np.array([[[np.inf], [-np.inf], [1.0], [2.0]]], np.float32)
    w = np.ones((2, 1, 1), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarning reached stderr with our source
        ours = interpret(text, [x, w])
    assert np.isnan(ours[0]).sum() == 1  # inf + -inf
    assert_matches_xla(text, [x, w])
