"""The interpreter's convolution agrees with XLA on random configurations (any rank 3-5, dimension
numbers, strides, negative padding, lhs/rhs dilation, reversal, feature and batch groups)."""

from __future__ import annotations

import numpy as np
from hlo.cases import EXAMPLES, ConvCase, conv_cases
from hypothesis import HealthCheck, given, settings

from convcanon.hlo.context import parse_module
from convcanon.reference.hlo_interp import tensor_type

from .xla_compare import assert_matches_xla


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv_matches_xla(case: ConvCase) -> None:
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
