"""The lhs-dilation polyphase rewrite: its per-dim plan, the lattice counter, and random convs
canonicalized in both dialects, checked on XLA and for exactly the lattice multiply-adds."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.phase_plan import lattice_macs, lattice_pairs, plan_lhs_dim

from .cases import (
    ConvCase,
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    conv_cases,
    judge,
    parse,
    random_inputs,
    run_pass,
    total_macs,
    xla,
)

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]

# -- the 1-D plan against a direct evaluation of the dilated conv ---------------------------------


def _dilated_conv_1d(
    x: np.ndarray, w: np.ndarray, dil: int, s: int, d: int, lo: int, hi: int, rev: bool
) -> np.ndarray:
    """Conv semantics spelled out: dilate x by `dil`, pad (negative crops), slide w."""
    dilated = np.zeros((len(x) - 1) * dil + 1, dtype=x.dtype)
    dilated[::dil] = x
    padded = np.concatenate([np.zeros(max(lo, 0)), dilated, np.zeros(max(hi, 0))])
    padded = padded[max(-lo, 0) : len(padded) - max(-hi, 0)]
    taps = w[::-1] if rev else w
    out = (len(padded) - (len(w) - 1) * d - 1) // s + 1
    return np.array(
        [sum(padded[o * s + d * k] * taps[k] for k in range(len(w))) for o in range(out)]
    )


def _lattice_brute_force(out: int, kernel: int, dil: int, s: int, d: int, lo: int) -> int:
    """(output, tap) pairs whose read lands on a multiple of `dil` from the first real element."""
    return sum((o * s + d * k - lo) % dil == 0 for o in range(out) for k in range(kernel))


_CONFIGS = st.tuples(
    st.integers(1, 7),  # undilated extent
    st.integers(1, 5),  # kernel
    st.integers(1, 5),  # lhs dilation
    st.integers(1, 5),  # stride
    st.integers(1, 4),  # rhs dilation
    st.integers(-3, 5),  # pad low
    st.integers(-3, 5),  # pad high
    st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(config=_CONFIGS)
def test_sum_of_placed_output_phases_equals_the_dilated_conv(config: tuple) -> None:
    h, k, dil, s, d, lo, hi, rev = config
    padded = (h - 1) * dil + 1 + lo + hi
    assume(padded >= (k - 1) * d + 1)
    rng = np.random.default_rng(hash(config) % 2**32)
    x, w = rng.integers(-9, 10, h).astype(float), rng.integers(-9, 10, k).astype(float)
    expected = _dilated_conv_1d(x, w, dil, s, d, lo, hi, rev)
    out = len(expected)
    plan = plan_lhs_dim(h, k, dil, s, d, lo, out, rev)
    total, macs = np.zeros(out), 0
    for ph in plan.phases:
        ws = w[ph.rhs_start :: ph.rhs_stride][: ph.taps]
        assert len(ws) == ph.taps
        # the phase conv is an undilated conv of x: its padding must give exactly its outputs
        y = _dilated_conv_1d(x, ws, 1, plan.stride, plan.rhs_dilation, ph.pad_low, ph.pad_high, rev)
        assert len(y) == ph.outputs
        total[ph.q :: plan.period] += y
        macs += ph.taps * ph.outputs
    np.testing.assert_array_equal(total, expected)
    assert macs == _lattice_brute_force(out, k, dil, s, d, lo)


@settings(max_examples=300, deadline=None)
@given(
    out=st.integers(1, 12),
    kernel=st.integers(1, 6),
    dil=st.integers(1, 6),
    s=st.integers(1, 6),
    d=st.integers(1, 6),
    lo=st.integers(-5, 8),
)
def test_lattice_counter_matches_brute_force_enumeration(
    out: int, kernel: int, dil: int, s: int, d: int, lo: int
) -> None:
    assert lattice_pairs(kernel, dil, s, d, lo, out) == _lattice_brute_force(
        out, kernel, dil, s, d, lo
    )


def test_without_lhs_dilation_the_lattice_is_every_product() -> None:
    assert lattice_pairs(5, 1, 3, 2, -1, 7) == 35


def test_planning_cost_does_not_depend_on_stride_or_dilation() -> None:
    # O(K): a stride and a dilation of 10^9 plan as fast as 2 (this would hang looping over them)
    plan = plan_lhs_dim(3, 4, 10**9, 10**9 + 1, 1, 0, 2, False)
    assert sum(ph.taps * ph.outputs for ph in plan.phases) == lattice_pairs(
        4, 10**9, 10**9 + 1, 1, 0, 2
    )


# -- whole convs: random lhs-dilated convs in both dialects ---------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=conv_cases(elements=("f32", "i32"), lhs_dilations=(1, 4), max_pad=4),
    negative=st.sampled_from(["pad", "slice"]),
)
def test_polyphase_is_canonical_exact_and_costs_the_lattice_macs(
    case: ConvCase, negative: str, dialect: Dialect
) -> None:
    before = all_conv_params(parse(case.text, dialect), dialect)
    after, _, printed = run_pass(
        case.text, dialect, gate="general", max_phases=10**6, negative_padding=negative
    )
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    if negative == "slice":  # every pad amount is >= 0; crops are slices
        amounts = re.findall(r"(?:low|high|edge_padding_\w+) = (?:dense<)?\[?([-\d, ]+)", printed)
        assert all(int(v) >= 0 for a in amounts for v in a.split(",") if v.strip()), amounts
    assert total_macs(params) == lattice_macs(before[0])
    inputs = case.inputs()
    run = judge(before + params)
    expected = run(case.text, inputs)
    got = run(as_stablehlo_text(after, dialect), inputs)
    assert_same_results(expected, got, case.element)


# -- hand-written cases ---------------------------------------------------------------------------

# A stride-2 transposed conv (lhs dilation 2, SAME-like padding), NHWC / HWIO, as JAX emits it.
TRANSPOSED = """
func.func public @main(%x: tensor<1x4x4x3xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<1x8x8x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x3xf32>, tensor<3x3x3x2xf32>) -> tensor<1x8x8x2xf32>
  return %0 : tensor<1x8x8x2xf32>
}
"""


def _ops(printed: str) -> list[str]:
    return re.findall(r"= (?:stablehlo|mhlo|\"stablehlo|\"mhlo)\.(\w+)", printed)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_transposed_conv_becomes_four_phase_convs_without_interior_padding(
    dialect: Dialect,
) -> None:
    before = all_conv_params(parse(TRANSPOSED, dialect), dialect)[0]
    after, stats, printed = run_pass(
        TRANSPOSED, dialect, engine="xla-cpu", gate="general", merge_phases="none"
    )
    assert stats.counters == {"convs-seen": 1, "rewritten-lhs-dilation": 1}
    params = all_conv_params(after, dialect)
    assert len(params) == 4
    # every phase conv reads the undilated 4x4 input (4 outputs: 4 or 5 wide with 1 or 2 taps)
    assert all(p.lhs_shape[1] in (4, 5) and p.lhs_shape[2] in (4, 5) for p in params)
    if dialect is STABLEHLO:  # placed at (q0, q1) with interior P - 1 = 1
        placed = re.findall(
            r"low = \[0, (\d), (\d), 0\], high = \[[^]]*\], interior = \[0, 1, 1, 0\]", printed
        )
        assert sorted(placed) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert total_macs(params) == lattice_macs(before) < before.macs
    assert sorted(p.kernel_spatial for p in params) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert _ops(printed).count("add") == 3
    inputs = random_inputs([(1, 4, 4, 3), (3, 3, 3, 2)], "f32", seed=2)
    assert_same_results(
        xla(TRANSPOSED, inputs), xla(as_stablehlo_text(after, dialect), inputs), "f32"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_interior_pad_mode_folds_lhs_dilation_into_one_pad(dialect: Dialect) -> None:
    before = all_conv_params(parse(TRANSPOSED, dialect), dialect)[0]
    after, stats, printed = run_pass(
        TRANSPOSED, dialect, gate="general", lhs_dilation="interior-pad"
    )
    assert stats.counters == {"convs-seen": 1, "rewritten-pad": 1}
    params = all_conv_params(after, dialect)
    assert len(params) == 1 and total_macs(params) == before.macs
    assert_canonical(params)
    inputs = random_inputs([(1, 4, 4, 3), (3, 3, 3, 2)], "f32", seed=2)
    assert_same_results(
        xla(TRANSPOSED, inputs), xla(as_stablehlo_text(after, dialect), inputs), "f32"
    )


# lhs dilation 2, rhs dilation 2, padding 1: every tap reads an odd (inserted-zero) position.
NO_TAPS = """
func.func public @main(%x: tensor<1x4x2xf32>, %w: tensor<2x2x3xf32>) -> tensor<1x4x3xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [2], pad = [[1, 2]], lhs_dilate = [2], rhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x2xf32>, tensor<2x2x3xf32>) -> tensor<1x4x3xf32>
  return %0 : tensor<1x4x3xf32>
}
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_conv_reading_only_inserted_zeros_becomes_a_zero_constant(dialect: Dialect) -> None:
    after, _, printed = run_pass(NO_TAPS, dialect, gate="general")
    assert all_conv_params(after, dialect) == []
    inputs = random_inputs([(1, 4, 2), (2, 2, 3)], "f32", seed=0)
    (expected,) = xla(NO_TAPS, inputs)
    assert not expected.any()  # XLA agrees the original is all zeros
    (got,) = xla(as_stablehlo_text(after, dialect), inputs)
    np.testing.assert_array_equal(got, expected)


def test_max_phases_counts_the_lhs_dilation_phases() -> None:
    # 4 output phases (2 per dim), no stride: 4 partial convs where no phase is split
    _, stats, printed = run_pass(TRANSPOSED, STABLEHLO, gate="general", max_phases=3)
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: needs 4 partial convs, over max-phases 3": 1,
    }
    _, stats, _ = run_pass(TRANSPOSED, STABLEHLO, gate="general", max_phases=4, engine="xla-cpu")
    assert stats.counters["rewritten-lhs-dilation"] == 1


def test_max_phases_counts_the_convs_a_policy_splits_per_tap() -> None:
    """The default policy writes the 2x1 and 1x2 output phases as one conv per tap: 6 convs,
    which max-phases=4 refuses (it let them through, counting the 4 phases)."""
    _, stats, _ = run_pass(TRANSPOSED, STABLEHLO, gate="general", max_phases=4)
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: needs 6 partial convs (one per tap), over max-phases 4": 1,
    }
    _, stats, printed = run_pass(TRANSPOSED, STABLEHLO, gate="general", max_phases=6)
    assert stats.counters["rewritten-lhs-dilation"] == 1
    assert printed.count("stablehlo.convolution") == 6


def test_explain_shows_phases_dense_and_lattice_macs_and_max_phases() -> None:
    from convcanon.hlo.explain import explain_module, render

    pipeline = "stablehlo-canonicalize-conv{gate=general max-phases=9 engine=xla-cpu}"
    (row,), _ = explain_module(TRANSPOSED, "t.mlir", pipeline)
    assert (row["phases"], row["lhs_phases"], row["max_phases"]) == (4, 4, 9)
    assert row["policy"] == "xla-cpu" and "engine policy: xla-cpu" in render([row], "table")
    (iree,), _ = explain_module(TRANSPOSED, "t.mlir", pipeline[:-1] + " engine=iree-cpu}")
    assert iree["policy"] == "iree-cpu" and iree["macs_after"] == row["macs_after"]
    (default,), _ = explain_module(
        TRANSPOSED, "t.mlir", "stablehlo-canonicalize-conv{gate=general}"
    )
    assert default["policy"] == "generic"
    assert row["macs_after"] == row["lattice_macs_before"] == row["macs_before"] // 4
    _, _, printed = run_pass(TRANSPOSED, STABLEHLO, gate="general", max_phases=9, engine="xla-cpu")
    emitted = re.findall(r"= stablehlo\.(\w+)", printed)  # counted in the output, not the pass
    assert sorted(row["ops_added"]) == sorted(emitted)
    assert emitted.count("convolution") == 4 and "convert" not in emitted
    text = render([row], "table")
    assert f"{row['macs_before']} dense, {row['lattice_macs_before']} lattice" in text
    assert "after / lattice x1.000" in text and "max-phases 9 per conv" in text
    (interior,), _ = explain_module(
        TRANSPOSED, "t.mlir", pipeline[:-1] + " lhs-dilation=interior-pad}"
    )
    assert interior["macs_after"] == interior["macs_before"] and interior["lhs_phases"] == 0
