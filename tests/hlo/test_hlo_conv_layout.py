"""conv-layout=channels-last: every rewritten conv computes channels-last between transposes,
exact, canonical and at the multiply-add floor, in any input layout; convs already channels-last
and convs left as they are keep their dimension numbers. Judged on XLA (the reference where XLA
has known conv bugs)."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings

from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.hlo.plan_layout import is_channels_last
from convcanon.hlo.policy import XLA_CPU

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
)

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]

NCHW_PAD_1 = """
func.func public @main(%x: tensor<2x4x9x9xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x9x9xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x9x9xf32>
  return %0 : tensor<2x6x9x9xf32>
}
"""

NHWC_STRIDE_2 = """
func.func public @main(%x: tensor<1x9x9x4xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<1x4x4x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %0 : tensor<1x4x4x6xf32>
}
"""


def _transposes(printed: str) -> int:
    return len(re.findall(r"(?:stablehlo|mhlo)\.transpose", printed))


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases())
def test_channels_last_convs_are_exact_canonical_and_at_the_floor(
    case: ConvCase, dialect: Dialect
) -> None:
    before = all_conv_params(parse(case.text, dialect), dialect)
    (p,) = before
    after, stats, _ = run_pass(case.text, dialect, gate="general", conv_layout="channels-last")
    params = all_conv_params(after, dialect)
    if stats.counters.get("rewritten-pad") or stats.counters.get("rewritten-stride"):
        assert_canonical(params)
        assert all(is_channels_last(q) for q in params)
        assert total_macs(params) == lattice_macs(p)
        assert stats.counters.get("channels-last", 0) == (0 if is_channels_last(p) else 1)
    inputs = case.inputs()
    run = judge(before + params)
    assert_same_results(
        run(case.text, inputs), run(as_stablehlo_text(after, dialect), inputs), case.element
    )


def _only(params: list[ConvParams]) -> ConvParams:
    (p,) = params
    return p


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_nchw_conv_is_padded_and_computed_channels_last_between_two_transposes(
    dialect: Dialect,
) -> None:
    after, stats, printed = run_pass(
        NCHW_PAD_1, dialect, engine="xla-cpu", gate="general", conv_layout="channels-last"
    )
    p = _only(all_conv_params(after, dialect))
    assert is_channels_last(p) and p.lhs_shape == (2, 11, 11, 4) and p.rhs_shape == (3, 3, 4, 6)
    assert _transposes(printed) == 3  # lhs, kernel, result
    assert stats.counters["channels-last"] == 1
    kept, _, kept_printed = run_pass(NCHW_PAD_1, dialect, engine="xla-cpu", gate="general")
    assert not is_channels_last(_only(all_conv_params(kept, dialect)))
    assert _transposes(kept_printed) == 2  # `keep`: only the pad is written channels-last
    inputs = random_inputs([(2, 4, 9, 9), (6, 4, 3, 3)], "f32", 0)
    run = judge([p])
    assert_same_results(
        run(NCHW_PAD_1, inputs), run(as_stablehlo_text(after, dialect), inputs), "f32"
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_channels_last_conv_gets_no_transposes(dialect: Dialect) -> None:
    # merge-phases=exact: a stem's zero-extended kernel is folded with transposes of its own
    after, stats, printed = run_pass(
        NHWC_STRIDE_2, dialect, gate="general", conv_layout="channels-last", merge_phases="exact"
    )
    _, _, default_printed = run_pass(NHWC_STRIDE_2, dialect, gate="general", merge_phases="exact")
    assert printed == default_printed
    assert "channels-last" not in stats.counters and _transposes(printed) == 0


def test_a_conv_left_as_it_is_keeps_its_layout() -> None:
    """gate=neuron refuses 1-D convs: channels-last applies only to convs it rewrites."""
    text = """
func.func public @main(%x: tensor<1x4x16xf32>, %w: tensor<6x4x3xf32>) -> tensor<1x6x7xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x16xf32>, tensor<6x4x3xf32>) -> tensor<1x6x7xf32>
  return %0 : tensor<1x6x7xf32>
}
"""
    after, stats, printed = run_pass(text, STABLEHLO, conv_layout="channels-last")
    assert not is_channels_last(_only(all_conv_params(after, STABLEHLO)))
    assert _transposes(printed) == 0 and "channels-last" not in stats.counters


def _kernel_gradient_conv(lhs_dims: str, lhs_type: str) -> str:
    """A conv shaped like `jax.grad`'s kernel gradient of a 3x3/2 conv: the activation is the
    lhs with batch (3) and feature (4) swapped, the output gradient the dilated kernel."""
    return f"""
func.func public @main(%x: tensor<{lhs_type}xf32>, %g: tensor<4x3x3x6xf32>) -> tensor<4x4x3x6xf32> {{
  %0 = stablehlo.convolution(%x, %g) dim_numbers = {lhs_dims}x[i, 0, 1, o]->[0, 1, b, f], window = {{pad = [[1, 0], [1, 0]], rhs_dilate = [2, 2]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<{lhs_type}xf32>, tensor<4x3x3x6xf32>) -> tensor<4x4x3x6xf32>
  return %0 : tensor<4x4x3x6xf32>
}}
"""


@pytest.mark.parametrize(
    ("lhs_dims", "lhs_type", "to_last", "back"),
    [
        ("[f, 0, 1, b]", "4x7x7x3", "3, 1, 2, 0", "3, 1, 2, 0"),
        ("[f, b, 0, 1]", "4x3x7x7", "1, 2, 3, 0", "3, 0, 1, 2"),
    ],
    ids=["nhwc-activation", "nchw-activation"],
)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_kernel_gradient_conv_is_padded_channels_last_and_keeps_its_dimension_numbers(
    dialect: Dialect, lhs_dims: str, lhs_type: str, to_last: str, back: str
) -> None:
    """Its lhs has the batch inside: transposed to [b, 0.., f], padded there and transposed back,
    so an engine's own transpose into the conv cancels and the pad feeds the conv."""
    text = _kernel_gradient_conv(lhs_dims, lhs_type)
    before = _only(all_conv_params(parse(text), STABLEHLO))
    after, stats, printed = run_pass(text, dialect, engine="xla-cpu", gate="general")
    p = _only(all_conv_params(after, dialect))
    assert_canonical([p])
    assert p.dims == before.dims and total_macs([p]) == lattice_macs(before)
    assert stats.counters["rewritten-pad"] == 1
    op = r"\"?(?:stablehlo|mhlo)\.(\w+)\"?"
    first = re.search(rf"= {op}[ (]*%arg0\b([^\n]*)", printed)
    assert first is not None and first[1] == "transpose" and f"[{to_last}]" in first[2], printed
    lhs = re.search(r"convolution\((%\w+),", printed)
    assert lhs is not None
    definition = re.search(rf"{lhs[1]} = {op}[ (]*(%\w+)([^\n]*)", printed)
    assert definition is not None and definition[1] == "transpose" and f"[{back}]" in definition[3]
    padded = re.search(rf"{definition[2]} = {op}", printed)
    assert padded is not None and padded[1] == "pad", printed
    inputs = random_inputs([before.lhs_shape, before.rhs_shape], "f32", 0)
    run = judge([before, p])
    assert_same_results(run(text, inputs), run(as_stablehlo_text(after, dialect), inputs), "f32")


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases(lhs_dilations=(1, 1), stride_range=(1, 1)))
def test_a_unit_stride_pad_is_written_channels_last_unless_it_grows_the_lhs_by_over_half(
    case: ConvCase, dialect: Dialect
) -> None:
    """In `keep`, a unit-stride conv whose lhs is not `[b, 0.., f]` gets its pad between a
    transpose there and one back (none else), except where the pad grows the lhs by more than
    half; a kernel-gradient lhs (batch inside) always. The conv keeps its dimension numbers."""
    (p,) = all_conv_params(parse(case.text, dialect), dialect)
    assume(not p.needs_stride and p.needs_pad)
    after, stats, printed = run_pass(case.text, dialect, engine="xla-cpu", gate="general")
    assume(stats.counters.get("rewritten-pad") == 1)
    q = _only(all_conv_params(after, dialect))
    assert_canonical([q])
    assert q.dims == p.dims and total_macs([q]) == lattice_macs(p)
    growth = math.prod(p.padded_spatial) / math.prod(p.lhs_spatial)
    routed = p.dims.lhs_batch != 0 or (p.dims.lhs_feature != p.rank - 1 and growth <= 1.5)
    assert XLA_CPU.routes_pad(p) == routed
    assert _transposes(printed) == (2 if routed else 0), printed
    inputs = case.inputs()
    run = judge([p, q])
    assert_same_results(
        run(case.text, inputs), run(as_stablehlo_text(after, dialect), inputs), case.element
    )
