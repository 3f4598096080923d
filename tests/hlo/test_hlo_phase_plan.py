"""The per-dim phase plan of the exact stride rewrite against a 1-D numpy conv."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.hlo.phase_plan import Phase, plan_dim, stride_phase_count


def test_stride_two_kernel_three_has_even_and_odd_phases() -> None:
    plan = plan_dim(extent=9, kernel=3, dilation=1, stride=2, out=4, reversed_=False)
    assert plan.rhs_dilation == 1
    assert plan.phases == (
        Phase(taps=2, lhs_start=0, lhs_stride=2, lhs_length=5, rhs_start=0, rhs_stride=2),
        Phase(taps=1, lhs_start=1, lhs_stride=2, lhs_length=4, rhs_start=1, rhs_stride=1),
    )


def test_dilation_sharing_a_factor_with_the_stride_keeps_one_phase() -> None:
    # d=2, s=2: every tap offset 2k is even, so one phase; t = 1 and d' = 1.
    plan = plan_dim(extent=11, kernel=3, dilation=2, stride=2, out=4, reversed_=False)
    assert plan.rhs_dilation == 1
    assert plan.phases == (Phase(3, 0, 2, 6, 0, 1),)


def test_gcd_four_six_gives_new_dilation_two_and_tap_step_three() -> None:
    # d=4, s=6: g=2, t=3, d'=2; offsets 0,4,8,12,16 mod 6 = 0,4,2,0,4.
    plan = plan_dim(extent=30, kernel=5, dilation=4, stride=6, out=3, reversed_=False)
    assert plan.rhs_dilation == 2
    assert [(p.lhs_start, p.taps, p.rhs_start, p.rhs_stride) for p in plan.phases] == [
        (0, 2, 0, 3),
        (8, 1, 2, 1),
        (4, 2, 1, 3),
    ]


def test_window_reversal_slices_the_kernel_from_the_other_end() -> None:
    plan = plan_dim(extent=9, kernel=3, dilation=1, stride=2, out=4, reversed_=True)
    assert [(p.rhs_start, p.rhs_stride, p.taps) for p in plan.phases] == [(0, 2, 2), (1, 1, 1)]
    plan = plan_dim(extent=12, kernel=4, dilation=1, stride=3, out=3, reversed_=True)
    # phases {0,3}, {1}, {2}: reversed starts K-1-k0-(n-1)t = 0, 2, 1
    assert [(p.rhs_start, p.taps) for p in plan.phases] == [(0, 2), (2, 1), (1, 1)]


def test_one_tap_kernel_is_the_seeds_single_strided_slice() -> None:
    plan = plan_dim(extent=8, kernel=1, dilation=1, stride=2, out=4, reversed_=False)
    assert plan.phases == (Phase(1, 0, 2, 4, 0, 1),)


def test_unit_stride_needs_no_slicing() -> None:
    plan = plan_dim(extent=8, kernel=3, dilation=2, stride=1, out=4, reversed_=True)
    assert plan.phases == (Phase(3, 0, 1, 8, 0, 1),) and plan.rhs_dilation == 2


def _conv1d(x: np.ndarray, w: np.ndarray, stride: int, dilation: int, out: int, rev: bool):
    taps = w[::-1] if rev else w
    return np.array(
        [sum(x[o * stride + dilation * k] * taps[k] for k in range(len(w))) for o in range(out)]
    )


@settings(max_examples=300, deadline=None)
@given(
    kernel=st.integers(1, 6),
    dilation=st.integers(1, 6),
    stride=st.integers(1, 6),
    out=st.integers(1, 5),
    extra=st.integers(0, 3),
    rev=st.booleans(),
)
def test_sum_of_phases_equals_the_strided_conv(
    kernel: int, dilation: int, stride: int, out: int, extra: int, rev: bool
) -> None:
    extent = (out - 1) * stride + (kernel - 1) * dilation + 1 + extra
    rng = np.random.default_rng(kernel * 1000 + dilation * 100 + stride * 10 + out)
    x = rng.integers(-9, 10, extent)
    w = rng.integers(-9, 10, kernel)
    plan = plan_dim(extent, kernel, dilation, stride, out, rev)
    total = np.zeros(out, dtype=np.int64)
    for phase in plan.phases:
        xs = x[phase.lhs_start :: phase.lhs_stride][: phase.lhs_length]
        ws = w[phase.rhs_start :: phase.rhs_stride][: phase.taps]
        assert len(xs) == phase.lhs_length and len(ws) == phase.taps
        total += _conv1d(xs, ws, 1, plan.rhs_dilation, out, rev)
    np.testing.assert_array_equal(total, _conv1d(x, w, stride, dilation, out, rev))
    assert sum(p.taps for p in plan.phases) == kernel


def test_stride_planning_is_linear_in_the_kernel_not_the_stride() -> None:
    plan = plan_dim(extent=10**9 + 3, kernel=3, dilation=1, stride=10**9, out=1, reversed_=False)
    assert [p.taps for p in plan.phases] == [1, 1, 1]
    assert stride_phase_count(3, 1, 10**9) == 3


@settings(max_examples=200, deadline=None)
@given(kernel=st.integers(1, 8), dilation=st.integers(1, 8), stride=st.integers(1, 8))
def test_phase_count_formula_matches_the_plan(kernel: int, dilation: int, stride: int) -> None:
    out = 2
    extent = (out - 1) * stride + (kernel - 1) * dilation + 1
    plan = plan_dim(extent, kernel, dilation, stride, out, False)
    assert len(plan.phases) == stride_phase_count(kernel, dilation, stride)
