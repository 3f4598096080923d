"""Each rewrite on hand-written convs: the ops it emits, what it copies, and its values under XLA."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import re

import pytest

from convcanon.hlo.dialects import MHLO, STABLEHLO

from .cases import (
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    convs_of,
    functions,
    random_inputs,
    run_pass,
    xla,
)

# conv padding [[1, 2], [-1, 0]] with lhs dilation [2, 1]: a transposed-style conv with a crop.
PAD_CASE = """
func.func public @main(%x: tensor<1x5x6x2xf32>, %w: tensor<3x2x2x4xf32>) -> tensor<1x10x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 2], [-1, 0]], lhs_dilate = [2, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision DEFAULT>], foo.keep = 7 : i32} : (tensor<1x5x6x2xf32>, tensor<3x2x2x4xf32>) -> tensor<1x10x4x4xf32> loc("model.py":12:3)
  return %0 : tensor<1x10x4x4xf32>
}
"""

# 3x3 kernel, stride 2, NCHW/OIHW, window reversal in one dim.
STRIDE_CASE = """
func.func public @main(%x: tensor<2x3x9x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x3xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x9x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x3xf32>
  return %0 : tensor<2x4x4x3xf32>
}
"""

SHAPES = {
    PAD_CASE: [(1, 5, 6, 2), (3, 2, 2, 4)],
    STRIDE_CASE: [(2, 3, 9, 8), (4, 3, 3, 3)],
}

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


def _check_values(text: str, after_text: str) -> None:
    inputs = random_inputs(SHAPES[text], "f32", seed=1)
    assert_same_results(xla(text, inputs), xla(after_text, inputs), "f32")


def _ops(printed: str) -> list[str]:
    return re.findall(r"\b(?:stablehlo|mhlo)\.(\w+)", printed)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_explicit_pad_folds_padding_and_lhs_dilation_into_one_pad(dialect) -> None:
    after, stats, printed = run_pass(PAD_CASE, dialect, gate="general", lhs_dilation="interior-pad")
    assert stats.counters == {"convs-seen": 1, "rewritten-pad": 1}
    pad = next(op for op in _ops(printed) if op == "pad")
    assert pad
    if dialect is STABLEHLO:
        assert "low = [0, 1, -1, 0], high = [0, 2, 0, 0], interior = [0, 1, 0, 0]" in printed
    else:
        assert "edge_padding_low = dense<[0, 1, -1, 0]> : tensor<4xi64>" in printed
        assert "interior_padding = dense<[0, 1, 0, 0]> : tensor<4xi64>" in printed
    assert_canonical(all_conv_params(after, dialect))
    _check_values(PAD_CASE, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("mode", ["interior-pad", "polyphase"])
def test_rebuilt_conv_keeps_every_other_attribute_and_the_location(dialect, mode: str) -> None:
    after, _, _ = run_pass(PAD_CASE, dialect, engine="xla-cpu", gate="general", lhs_dilation=mode)
    with after.module.context:
        convs = [c for f in functions(after.module) for c in convs_of(f, dialect)]
        assert len(convs) == (1 if mode == "interior-pad" else 2)
        for conv in convs:
            assert str(conv.location) == 'loc("model.py":12:3)'
            assert str(conv.attributes["foo.keep"]) == "7 : i32"
            precision = [str(a) for a in conv.attributes["precision_config"]]
            assert precision == [
                f"#{dialect.name}<precision HIGHEST>",
                f"#{dialect.name}<precision DEFAULT>",
            ]
            assert str(conv.attributes["rhs_dilation"]) == str(dialect.i64_list([1, 1]))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_negative_padding_slice_mode_pads_positive_parts_then_crops(dialect) -> None:
    after, _, printed = run_pass(
        PAD_CASE, dialect, gate="general", negative_padding="slice", lhs_dilation="interior-pad"
    )
    ops = _ops(printed)
    assert ops.count("pad") == 1 and ops.count("slice") == 1
    if dialect is STABLEHLO:
        assert "low = [0, 1, 0, 0], high = [0, 2, 0, 0], interior = [0, 1, 0, 0]" in printed
        assert "[0:1, 0:12, 1:6, 0:2]" in printed  # the crop of pad's -1 on dim 2
    assert "-1" not in printed.split("convolution")[0]  # no negative amount before the conv
    _check_values(PAD_CASE, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("negative", ["pad", "slice"])
def test_polyphase_splits_the_dilated_dim_and_crops_negative_padding(dialect, negative) -> None:
    """Unmerged (merge-phases=none), each output phase is placed by an interior pad."""
    after, stats, printed = run_pass(
        PAD_CASE, dialect, gate="general", negative_padding=negative, merge_phases="none"
    )
    assert stats.counters == {"convs-seen": 1, "rewritten-lhs-dilation": 1}
    assert (
        "interior = [0, 1, 0, 0]" in printed or "interior_padding = dense<[0, 1, 0, 0]>" in printed
    )
    before = "\n".join(line for line in printed.splitlines() if "convolution" not in line)
    if negative == "slice":  # no negative amount in any pad of a conv's lhs
        assert "low = [0, 0, -1, 0]" not in before and "dense<[0, 0, -1, 0]>" not in before
    assert_canonical(all_conv_params(after, dialect))
    _check_values(PAD_CASE, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_explicit_stride_is_a_sum_of_phase_convs(dialect) -> None:
    """The unmerged polyphase form: a strided slice of the lhs and of the kernel per phase."""
    after, stats, printed = run_pass(
        STRIDE_CASE, dialect, engine="xla-cpu", gate="general", merge_phases="none"
    )
    assert stats.counters == {"convs-seen": 1, "rewritten-stride": 1}
    ops = _ops(printed)
    # phases: 2 per dim -> 4 partial convs, 3 adds, a lhs slice each, a kernel slice each
    assert ops.count("convolution") == 4 and ops.count("add") == 3 and ops.count("slice") == 8
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    assert all(p.reversal == (False, True) for p in params)
    assert sorted(p.kernel_spatial for p in params) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    _check_values(STRIDE_CASE, as_stablehlo_text(after, dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_neuron_gate_skips_small_spatial_extent(dialect) -> None:
    # STRIDE_CASE has spatial extents 9 and 8: accepted; make one 3 wide and it is skipped.
    small = STRIDE_CASE.replace("2x3x9x8xf32", "2x3x9x3xf32").replace("2x4x4x3xf32", "2x4x4x1xf32")
    _, stats, printed = run_pass(small, dialect, engine="xla-cpu")
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: spatial extent 3 needs allow-small-spatial": 1,
    }
    _, stats, _ = run_pass(
        small, dialect, engine="xla-cpu", allow_small_spatial=True, merge_phases="none"
    )
    assert stats.counters == {"convs-seen": 1, "rewritten-stride": 1}
