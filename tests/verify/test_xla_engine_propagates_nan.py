"""`verify --engine xla` runs XLA with the spec's NaN semantics. XLA's CPU defaults drop a NaN in
a reduction's max (a max-pool) and in a relu fused into a wide mean, where StableHLO, IREE and the
reference propagate it: ResNet-50 on N(0,1) inputs (a negative variance makes NaN channels) then
gave a finite f64 truth that a rewrite with a pad moved by a pixel matched exactly, and the
whole-program check said `ok`. Here each such reduction must give NaN exactly where the reference
does."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.child_process import XLA_SPEC_FLAGS, engine_env
from convcanon.verify.engines import reference_engine, xla_engine

pytest.importorskip("jax")


def _program(channels: int) -> str:
    """A max-pool (reduce_window max), a global max (reduce max) and a relu-then-mean (maximum
    fused into reduce add), each over the same input."""
    x = f"tensor<1x7x7x{channels}xf64>"
    pooled = f"tensor<1x3x3x{channels}xf64>"
    row = f"tensor<1x{channels}xf64>"
    return f"""func.func private @relu(%x: {x}) -> {x} {{
  %c = stablehlo.constant dense<0.0> : tensor<f64>
  %z = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f64>) -> {x}
  %m = stablehlo.maximum %x, %z : {x}
  return %m : {x}
}}
func.func @main(%a: {x}, %b: {x}) -> ({pooled}, {row}, {row}) {{
  %low = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
  %zero = stablehlo.constant dense<0.0> : tensor<f64>
  %pool = "stablehlo.reduce_window"(%a, %low) <{{window_dimensions = array<i64: 1, 3, 3, 1>,
      window_strides = array<i64: 1, 2, 2, 1>}}> ({{
    ^bb0(%p: tensor<f64>, %q: tensor<f64>):
      %m = stablehlo.maximum %p, %q : tensor<f64>
      stablehlo.return %m : tensor<f64>
  }}) : ({x}, tensor<f64>) -> {pooled}
  %top = stablehlo.reduce(%a init: %low) applies stablehlo.maximum across dimensions = [1, 2]
      : ({x}, tensor<f64>) -> {row}
  %sum = stablehlo.add %a, %b : {x}
  %r = call @relu(%sum) : ({x}) -> {x}
  %mean = stablehlo.reduce(%r init: %zero) applies stablehlo.add across dimensions = [1, 2]
      : ({x}, tensor<f64>) -> {row}
  return %pool, %top, %mean : {pooled}, {row}, {row}
}}
"""


@settings(max_examples=6, deadline=None)
@given(
    channels=st.sampled_from([8, 64, 2048]),
    seed=st.integers(0, 2**32 - 1),
    nan_share=st.sampled_from([0.05, 0.5, 1.0]),
)
def test_xla_reductions_carry_nan_where_the_reference_does(
    channels: int, seed: int, nan_share: float
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((1, 7, 7, channels))
    a[rng.random(a.shape) < nan_share] = np.nan
    b = rng.standard_normal(a.shape)
    text = _program(channels)
    truth = reference_engine(text, "nan.mlir", "main", [a, b])
    got = xla_engine(text, "nan.mlir", "main", [a, b])
    for want, have in zip(truth, got, strict=True):
        assert np.isnan(want).any()
        np.testing.assert_array_equal(np.isnan(have), np.isnan(want))
        finite = ~np.isnan(want)
        np.testing.assert_allclose(have[finite], want[finite], rtol=1e-12)


def test_engine_env_keeps_a_flag_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_min_max=true --xla_dump_to=/d")
    flags = engine_env()["XLA_FLAGS"].split()
    assert "--xla_cpu_enable_fast_min_max=true" in flags
    assert "--xla_cpu_enable_fast_min_max=false" not in flags
    assert "--xla_dump_to=/d" in flags
    assert "--xla_cpu_experimental_ynn_fusion_type=" in flags
    monkeypatch.delenv("XLA_FLAGS")
    assert engine_env()["XLA_FLAGS"].split() == [f"--{k}={v}" for k, v in XLA_SPEC_FLAGS.items()]
    assert "XLA_FLAGS" not in os.environ
