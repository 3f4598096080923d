"""A pad the rewrite emits never pads past its result's extent. A conv padded by 2**62 on one side
and cropped by as much on the other is valid, and XLA runs it; written as one explicit `pad`
with those amounts, XLA pads by the positive part before it crops and aborts the process
("overflow in static extent product"). Padding that reaches past the whole result leaves only
its zeros, so the rewrite pads by at most the result's extent and gives the same values."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from convcanon.hlo.conv_params import bounded_pad, padded_extent
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect

from .cases import (
    as_stablehlo_text,
    assert_same_results,
    conv_module,
    random_inputs,
    reference,
    run_pass,
)

pytest.importorskip("jax")

BIG = 2**62
PAD_AMOUNTS = re.compile(r"(?:low|high) = \[([-\d, ]+)\]")


def _padded(x: np.ndarray, low: int, high: int, interior: int) -> np.ndarray:
    """numpy's reading of a 1-D `stablehlo.pad` with a zero padding value."""
    dilated = np.zeros(padded_extent(len(x), 0, 0, interior), x.dtype)
    dilated[:: interior + 1] = x
    out = np.concatenate([np.zeros(max(low, 0)), dilated, np.zeros(max(high, 0))])
    return out[-min(low, 0) : len(out) + min(high, 0)]


@given(
    extent=st.integers(0, 6),
    interior=st.integers(0, 2),
    low=st.integers(-20, 20),
    high=st.integers(-20, 20),
)
@settings(max_examples=300, deadline=None)
def test_a_bounded_pad_gives_the_same_values_within_the_result(
    extent: int, interior: int, low: int, high: int
):
    out = padded_extent(extent, low, high, interior)
    assume(out >= 0)  # a valid pad
    x = np.arange(1, extent + 1, dtype=np.float64)
    bounded = bounded_pad(extent, low, high, interior)
    assert padded_extent(extent, *bounded, interior) == out
    assert max(bounded) <= out
    np.testing.assert_array_equal(_padded(x, *bounded, interior), _padded(x, low, high, interior))


CASES = [  # (padding, stride, lhs dilation)
    ((BIG, -BIG), 1, 1),
    ((-BIG, BIG), 1, 1),
    ((BIG, -BIG), 2, 1),
    ((-BIG, BIG), 3, 1),
    ((BIG, -BIG), 1, 2),
    ((BIG + 1, -BIG), 2, 2),
]


@pytest.mark.parametrize("options", [{}, {"negative_padding": "slice"}, {"engine": "iree-cpu"}])
@pytest.mark.parametrize(
    "dialect", [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]
)
@pytest.mark.parametrize("padding, stride, lhs_dilation", CASES)
def test_a_conv_padded_past_int64_runs_on_xla_after_the_rewrite(
    padding: tuple[int, int], stride: int, lhs_dilation: int, dialect: Dialect, options: dict
):
    from convcanon.verify.engine_process import run_xla

    n, k = 8, 3
    out = (padded_extent(n, *padding, lhs_dilation - 1) - k) // stride + 1
    text = conv_module(
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        (1, n, 2),
        (k, 2, 2),
        (1, out, 2),
        "f32",
        [stride],
        [padding],
        [lhs_dilation],
        [1],
        [False],
        1,
        1,
    )
    after, stats, _ = run_pass(text, dialect, gate="general", **options)
    canonical = as_stablehlo_text(after, dialect)
    amounts = [int(v) for group in PAD_AMOUNTS.findall(canonical) for v in group.split(",")]
    assert amounts and max(abs(v) for v in amounts) <= 2 * n * lhs_dilation, canonical
    inputs = random_inputs([(1, n, 2), (k, 2, 2)], "f32", seed=0)
    expected = reference(text, inputs)  # XLA's own conv is wrong at lhs dilation 2 (not zeros)
    assert_same_results(expected, reference(canonical, inputs), "f32")
    assert_same_results(expected, run_xla(canonical, inputs, "after.mlir"), "f32")
