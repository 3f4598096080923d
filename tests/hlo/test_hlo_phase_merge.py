"""Phase merging: the fewest partial convs at the multiply-add floor (merge-phases=exact), one
conv when every strided dim's kernel divides by its stride, and pad-kernel within max-mac-ratio.
Judged on XLA (the reference where XLA has known conv bugs)."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, example, given, settings

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.explain import explain_module
from convcanon.hlo.phase_merge import distinct_tap_counts
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.hlo.policy import XLA_CPU

from .cases import (
    ConvCase,
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    conv_cases,
    conv_module,
    judge,
    parse,
    random_inputs,
    run_pass,
    total_macs,
    xla,
)

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


def _conv(
    lhs: str,
    rhs: str,
    out: str,
    window: str,
    dims: str = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
    groups: int = 1,
) -> str:
    return f"""
func.func public @main(%x: tensor<{lhs}>, %w: tensor<{rhs}>) -> tensor<{out}> {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = {dims}, window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}} : (tensor<{lhs}>, tensor<{rhs}>) -> tensor<{out}>
  return %0 : tensor<{out}>
}}
"""


VIT = _conv("1x224x224x3xf32", "16x16x3x8xf32", "1x14x14x8xf32", "stride = [16, 16]")
# the same patchify conv as torch-mlir writes it: NCHW / OIHW
VIT_NCHW = _conv(
    "1x3x224x224xf32",
    "8x3x16x16xf32",
    "1x8x14x14xf32",
    "stride = [16, 16]",
    dims="[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
)
CONV_T2 = _conv(
    "1x8x8x4xf32", "2x2x4x6xf32", "1x16x16x6xf32", "pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2]"
)
CONV_T4 = _conv(
    "1x8x8x4xf32", "4x4x4x6xf32", "1x16x16x6xf32", "pad = [[2, 2], [2, 2]], lhs_dilate = [2, 2]"
)
DEPTHWISE = _conv(
    "1x16x16x8xf32",
    "3x3x1x8xf32",
    "1x8x8x8xf32",
    "stride = [2, 2], pad = [[1, 1], [1, 1]]",
    groups=8,
)
WAV2VEC = _conv(
    "1x1x400xf32",
    "8x1x10xf32",
    "1x8x79xf32",
    "stride = [5]",
    dims="[b, f, 0]x[o, i, 0]->[b, f, 0]",
)


def _ops(printed: str) -> list[str]:
    return re.findall(r"(?:stablehlo|mhlo)\.(\w+)", printed)


def _check(text: str, after_text: str, seed: int = 0) -> None:
    p = all_conv_params(parse(text), STABLEHLO)[0]
    inputs = random_inputs([p.lhs_shape, p.rhs_shape], "f32", seed)
    assert_same_results(xla(text, inputs), xla(after_text, inputs), "f32")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("text", [VIT, VIT_NCHW, WAV2VEC], ids=["vit", "vit-nchw", "wav2vec2-10-5"])
def test_a_kernel_that_divides_by_its_stride_is_one_unit_stride_conv(
    text: str, dialect: Dialect
) -> None:
    """ViT's 16x16/16 patchify (256 phases) and wav2vec2's 10/5 (5 phases) are accepted by the
    default gate options and become one conv over a space-to-depth of the input."""
    after, stats, printed = run_pass(text, dialect, engine="xla-cpu", gate="general")
    params = all_conv_params(after, dialect)
    assert len(params) == 1
    assert_canonical(params)
    before = all_conv_params(parse(text), STABLEHLO)[0]
    assert total_macs(params) == before.macs
    ops = _ops(printed)
    assert "slice" not in ops and "add" not in ops
    # at most one transpose per folded operand (none where it only moves unit dims)
    assert ops.count("transpose") <= 2
    assert stats.counters["merged-phases"] == math.prod(before.strides) - 1
    _check(text, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_conv_transpose_2x2_stride_2_is_one_conv_with_four_times_the_features(
    dialect: Dialect,
) -> None:
    after, _, printed = run_pass(CONV_T2, dialect, gate="general")
    (p,) = all_conv_params(after, dialect)
    assert p.kernel_spatial == (1, 1) and p.result_shape[-1] == 4 * 6
    ops = _ops(printed)
    assert "add" not in ops and "pad" not in ops  # depth-to-space, not interior pad + add
    _check(CONV_T2, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_conv_transpose_4x4_stride_2_is_four_convs_interleaved_without_adds(
    dialect: Dialect,
) -> None:
    """Two input offsets per dim: four convs of 2x2 taps, put in place by interleaving."""
    after, _, printed = run_pass(CONV_T4, dialect, gate="general")
    params = all_conv_params(after, dialect)
    assert sorted(p.kernel_spatial for p in params) == [(2, 2)] * 4
    assert "add" not in _ops(printed) and "interior = [0, 1, 1, 0]" not in printed
    assert total_macs(params) == lattice_macs(all_conv_params(parse(CONV_T4), STABLEHLO)[0])
    _check(CONV_T4, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_depthwise_3x3_stride_2_keeps_its_groups_and_pad_kernel_makes_it_one_conv(
    dialect: Dialect,
) -> None:
    before = all_conv_params(parse(DEPTHWISE), STABLEHLO)[0]
    exact, _, _ = run_pass(DEPTHWISE, dialect, gate="general")  # one 1x1 conv per tap
    params = all_conv_params(exact, dialect)
    assert [p.kernel_spatial for p in params] == [(1, 1)] * 9
    assert total_macs(params) == before.macs
    assert all(p.feature_group_count == 8 for p in params)
    _check(DEPTHWISE, as_stablehlo_text(exact, dialect))
    padded, _, _ = run_pass(DEPTHWISE, dialect, gate="general", merge_phases="pad-kernel")
    (p,) = all_conv_params(padded, dialect)
    assert p.feature_group_count == 8 and p.kernel_spatial == (2, 2)
    assert p.lhs_shape[-1] == 4 * 8 and p.macs * 9 == before.macs * 16  # 16/9 of the floor
    _check(DEPTHWISE, as_stablehlo_text(padded, dialect))


WAV2VEC_3_2 = _conv(
    "1x8x41xf32",
    "6x8x3xf32",
    "1x6x20xf32",
    "stride = [2]",
    dims="[b, f, 0]x[o, i, 0]->[b, f, 0]",
)
RESNET_NCHW_3X3_2 = _conv(
    "2x4x9x9xf32",
    "6x4x3x3xf32",
    "2x6x5x5xf32",
    "stride = [2, 2], pad = [[1, 1], [1, 1]]",
    dims="[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "text", [WAV2VEC_3_2, RESNET_NCHW_3X3_2], ids=["ncw-3-2", "nchw-3x3-2-padded"]
)
def test_a_channels_first_fold_read_by_several_convs_is_made_channels_last(
    text: str, dialect: Dialect
) -> None:
    """The lhs is transposed to [b, 0.., f] once, before its pad and fold, and each partial
    conv's lhs is transposed back: the convs keep their dimension numbers, and an engine that
    computes channels-last cancels those transposes against its own."""
    before = all_conv_params(parse(text), STABLEHLO)[0]
    after, _, printed = run_pass(
        text, dialect, engine="xla-cpu", gate="general", merge_phases="exact"
    )
    params = all_conv_params(after, dialect)
    assert len(params) == _expected_convs(before) > 1
    assert all(p.dims == before.dims for p in params)
    assert total_macs(params) == before.macs
    rank = len(before.lhs_shape)
    to_last = ", ".join(map(str, (0, *range(2, rank), 1)))
    back = ", ".join(map(str, (0, rank - 1, *range(1, rank - 1))))
    first = re.search(r"(?:stablehlo|mhlo)\.(\w+)[ (\"]*%arg0\b", printed)
    assert first is not None and first[1] == "transpose"  # the lhs's first reader
    assert f"[{to_last}]" in printed.split("%arg0", 2)[2].split("\n", 1)[0]
    lhs_values = re.findall(r"convolution\((%\w+),", printed)
    for value in lhs_values:  # every partial conv reads a transpose back
        definition = re.search(rf"{value} = \"?(?:stablehlo|mhlo)\.transpose\"?[^\n]*", printed)
        assert definition is not None and f"[{back}]" in definition[0], value
    _check(text, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("reverse", ["", ", reverse = [true, false]"], ids=["forward", "reversed"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_pad_kernel_widens_a_4x4_stride_2_conv_transpose_to_one_3x3_conv(
    dialect: Dialect, reverse: str
) -> None:
    """Its output phases read two windows per dim, a tap apart: zero-extended to the 3-tap
    union they merge, one dim at 3/2 of the floor (within 2.0), both at 9/4 (within 2.25). In a
    reversed dim tap k reads element K-1-k, so the zero taps go on the other side."""
    text = CONV_T4.replace("lhs_dilate = [2, 2]", "lhs_dilate = [2, 2]" + reverse)
    floor = lattice_macs(all_conv_params(parse(text), STABLEHLO)[0])
    for ratio, convs, kernel, features in ((2.0, 2, (3, 2), 12), (2.25, 1, (3, 3), 24)):
        after, stats, _ = run_pass(
            text, dialect, gate="general", merge_phases="pad-kernel", max_mac_ratio=ratio
        )
        params = all_conv_params(after, dialect)
        assert_canonical(params)
        assert len(params) == convs and stats.counters["merged-phases"] == 4 - convs
        assert all(p.kernel_spatial == kernel and p.result_shape[-1] == features for p in params)
        assert total_macs(params) * 4 == floor * kernel[0] * kernel[1]  # 2x2 real taps a phase
        _check(text, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_crop_the_fold_leaves_out_still_resets_the_conv_padding(dialect: Dialect) -> None:
    """3/2 over 4 elements with padding (0, -1): the fold reads 4 = 2 x 2 elements, so the lhs
    is neither padded nor cropped, and the partial convs must not keep the original's padding."""
    text = _conv("1x4x1xf32", "3x1x1xf32", "1x1x1xf32", "stride = [2], pad = [[0, -1]]").replace(
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "[b, 0, f]x[0, i, o]->[b, 0, f]"
    )
    after, _, printed = run_pass(text, dialect, gate="general", merge_phases="exact")
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    assert len(params) == 2 and not re.search(r"pad\W+%arg0", printed), printed
    _check(text, as_stablehlo_text(after, dialect))


def test_pad_kernel_stays_within_max_mac_ratio() -> None:
    """7x7/2 extended to 8x8 costs (8/7)^2 = 1.31 of the floor: within 1.5, not within 1.2,
    where only one dim is extended (8/7)."""
    text = _conv(
        "1x32x32x3xf32", "7x7x3x8xf32", "1x16x16x8xf32", "stride = [2, 2], pad = [[3, 3], [3, 3]]"
    )
    before = all_conv_params(parse(text), STABLEHLO)[0]
    one, _, _ = run_pass(
        text, STABLEHLO, gate="general", merge_phases="pad-kernel", max_mac_ratio=1.5
    )
    (p,) = all_conv_params(one, STABLEHLO)
    assert p.macs * 49 == before.macs * 64
    two, _, _ = run_pass(
        text, STABLEHLO, gate="general", merge_phases="pad-kernel", max_mac_ratio=1.2
    )
    params = all_conv_params(two, STABLEHLO)
    assert len(params) == 2 and total_macs(params) * 7 == before.macs * 8
    for after in (one, two):
        _check(text, as_stablehlo_text(after, STABLEHLO))


def _expected_convs(p) -> int:
    """Product over dims of the distinct sub-kernel shapes (1 when every K % s == 0)."""
    return math.prod(
        distinct_tap_counts(k, d, s)
        for k, d, s in zip(p.kernel_spatial, p.rhs_dilation, p.strides, strict=True)
    )


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases(lhs_dilations=(1, 1)))
def test_merged_stride_phases_are_exact_at_the_floor_and_as_few_as_the_shapes(
    case: ConvCase, dialect: Dialect
) -> None:
    before = all_conv_params(parse(case.text, dialect), dialect)
    (p,) = before
    after, stats, _ = run_pass(
        case.text, dialect, engine="xla-cpu", gate="general", merge_phases="exact"
    )
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    assert total_macs(params) == p.macs
    if stats.counters.get("rewritten-stride") and XLA_CPU.splits_depthwise(
        p, p.kernel_spatial, "exact"
    ):
        # the default policy writes a depthwise conv's phases as one 1x1 conv per tap
        assert all(q.kernel_spatial == (1,) * p.num_spatial for q in params)
        assert len(params) <= math.prod(p.kernel_spatial)
    elif stats.counters.get("rewritten-stride") and p.batch_group_count == 1:
        assert len(params) == _expected_convs(p)
    inputs = case.inputs()
    run = judge(before + params)
    assert_same_results(
        run(case.text, inputs), run(as_stablehlo_text(after, dialect), inputs), case.element
    )


# XLA aborts on this source conv (its operand swapper keeps dim 0's window over a narrower
# kernel), so the reference judges it: a draw outside CI failed here before `judge` knew that.
SWAPPED_GROUP_DIM = ConvCase(
    "func.func public @main(%arg0: tensor<1x1x2x3xf32>, %arg1: tensor<1x1x3x4xf32>)"
    " -> tensor<1x1x1x1xf32> {\n  %0 = stablehlo.convolution(%arg0, %arg1)"
    " dim_numbers = [b, f, 0, 1]x[i, o, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1],"
    " pad = [[0, 0], [0, 1]], lhs_dilate = [3, 1], rhs_dilate = [1, 1],"
    " reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
    " : (tensor<1x1x2x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x1x1xf32>\n"
    "  return %0 : tensor<1x1x1x1xf32>\n}\n",
    (1, 1, 2, 3),
    (1, 1, 3, 4),
    "f32",
)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(case=SWAPPED_GROUP_DIM)
@given(case=conv_cases())
def test_pad_kernel_is_exact_and_within_max_mac_ratio_of_the_floor(
    case: ConvCase, dialect: Dialect
) -> None:
    before = all_conv_params(parse(case.text, dialect), dialect)
    floor = lattice_macs(before[0])
    after, _, _ = run_pass(case.text, dialect, gate="general", merge_phases="pad-kernel")
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    assert floor <= total_macs(params) <= 2.0 * floor
    exact, _, _ = run_pass(case.text, dialect, gate="general")
    assert len(params) <= len(all_conv_params(exact, dialect))
    inputs = case.inputs()
    run = judge(before + params)
    assert_same_results(
        run(case.text, inputs), run(as_stablehlo_text(after, dialect), inputs), case.element
    )


def _nhwc_stride_2(features: int, lhs_dilation: int = 1, kernel: int = 3) -> str:
    """A KxK/2 NHWC conv (padding (0, 1)) over 16x16 px with `features` input features, or
    with that lhs dilation a KxK/2 transposed conv."""
    h = 16
    padded = (h - 1) * lhs_dilation + 1 + 1
    out = (padded - kernel) // (1 if lhs_dilation > 1 else 2) + 1
    stride = [1, 1] if lhs_dilation > 1 else [2, 2]
    return conv_module(
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        (1, h, h, features),
        (kernel, kernel, features, 8),
        (1, out, out, 8),
        "f32",
        stride,
        [(0, 1), (0, 1)],
        [lhs_dilation] * 2,
        [1, 1],
        [False, False],
        1,
        1,
    )


@pytest.mark.parametrize("engine", ["xla-cpu", "iree-cpu", "generic"])
def test_an_image_stem_is_one_zero_extended_conv_under_every_engine_policy(engine: str) -> None:
    """merge-phases=auto: a strided conv over at most 4 input features (RGB, RGBA, grayscale)
    merges its phases into one conv with zero-extended sub-kernels, within max-mac-ratio (under
    iree-cpu and generic only if its exact form has a line phase); with more features, lhs
    dilation or merge-phases=exact it stays at the floor."""
    for features in (1, 3, 4):
        text = _nhwc_stride_2(features)
        (before,) = all_conv_params(parse(text), STABLEHLO)
        after, stats, printed = run_pass(text, STABLEHLO, gate="general", engine=engine)
        (conv,) = all_conv_params(after, STABLEHLO)
        assert_canonical([conv])
        assert conv.kernel_spatial == (2, 2) and stats.counters["merged-phases"] == 3
        assert 9 * conv.macs == 16 * lattice_macs(before)  # 2x2 taps over 4 phases, not 9
        inputs = random_inputs([before.lhs_shape, before.rhs_shape], "f32", seed=features)
        assert_same_results(xla(text, inputs), xla(printed, inputs), "f32")
        exact, _, _ = run_pass(text, STABLEHLO, gate="general", engine=engine, merge_phases="exact")
        assert total_macs(all_conv_params(exact, STABLEHLO)) == lattice_macs(before)
    for text in (_nhwc_stride_2(5), _nhwc_stride_2(3, lhs_dilation=2)):
        (before,) = all_conv_params(parse(text), STABLEHLO)
        after, _, _ = run_pass(text, STABLEHLO, gate="general", engine=engine)
        params = all_conv_params(after, STABLEHLO)
        assert len(params) > 1 and total_macs(params) == lattice_macs(before)
    # a 4x4/2 stem's phases already have one shape: one conv at the floor, nothing zero-extended
    text = _nhwc_stride_2(3, kernel=4)
    (row,), _ = explain_module(
        text, "m.mlir", f"stablehlo-canonicalize-conv{{gate=general engine={engine}}}"
    )
    assert (row["phases"], row["merge"]) == (1, "exact")
    assert row["macs_after"] == row["lattice_macs_before"]
    # a 7x7/2 stem has no line phase (4x4, 4x3, 3x4, 3x3 taps): zero-extended only by xla-cpu
    text = _nhwc_stride_2(3, kernel=7)
    after, _, printed = run_pass(text, STABLEHLO, gate="general", engine=engine)
    params = all_conv_params(after, STABLEHLO)
    assert [p.kernel_spatial for p in params] == (
        [(4, 4)] if engine == "xla-cpu" else [(4, 4), (4, 3), (3, 4), (3, 3)]
    )
    (before,) = all_conv_params(parse(text), STABLEHLO)
    inputs = random_inputs([before.lhs_shape, before.rhs_shape], "f32", seed=7)
    assert_same_results(xla(text, inputs), xla(printed, inputs), "f32")
