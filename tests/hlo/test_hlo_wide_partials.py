"""Round once: f16/bf16 convs whose outputs sum several partials sum them in f32 and convert
once, so the canonical module is as accurate as the original against an f64 evaluation (judged
on XLA). Output phases of lhs dilation never overlap: placing them rounds nothing."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect

from .cases import as_stablehlo_text, run_pass, xla

# A strided 3x3 conv and a stride-2 transposed conv (lhs dilation 2), NHWC / HWIO, 32 channels in.
STRIDED = """
func.func public @main(%x: tensor<2x17x17x32xT>, %w: tensor<3x3x32x16xT>) -> tensor<2x9x9x16xT> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x17x17x32xT>, tensor<3x3x32x16xT>) -> tensor<2x9x9x16xT>
  return %0 : tensor<2x9x9x16xT>
}
"""
TRANSPOSED = """
func.func public @main(%x: tensor<2x8x8x32xT>, %w: tensor<3x3x32x16xT>) -> tensor<2x16x16x16xT> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x8x32xT>, tensor<3x3x32x16xT>) -> tensor<2x16x16x16xT>
  return %0 : tensor<2x16x16x16xT>
}
"""
# lhs dilation 2 and stride 3: 2 output phases per dim, each a stride-3 conv with 2 stride phases
TRANSPOSED_STRIDED = TRANSPOSED.replace("2x16x16x16", "2x6x6x16").replace(
    "lhs_dilate = [2, 2]", "stride = [3, 3], lhs_dilate = [2, 2]"
)
SHAPES = {
    STRIDED: [(2, 17, 17, 32), (3, 3, 32, 16)],
    TRANSPOSED: [(2, 8, 8, 32), (3, 3, 32, 16)],
    TRANSPOSED_STRIDED: [(2, 8, 8, 32), (3, 3, 32, 16)],
}
# Converts per merge mode: merged phases sum inside one conv, which rounds once by itself (a
# transposed-strided conv's phases fold into one conv each; pad-kernel makes 3x3/2 one conv).
CONVERTS = {
    "none": {STRIDED: 1, TRANSPOSED: 0, TRANSPOSED_STRIDED: 1},
    "exact": {STRIDED: 1, TRANSPOSED: 0, TRANSPOSED_STRIDED: 0},
    "pad-kernel": {STRIDED: 0, TRANSPOSED: 0, TRANSPOSED_STRIDED: 0},
}
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _error(text: str, inputs: list[np.ndarray], truth: np.ndarray) -> float:
    (out,) = xla(text, inputs)
    return float(np.sqrt(np.mean((out.astype(np.float64) - truth) ** 2)))


@pytest.mark.parametrize(
    "dialect", [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]
)
@pytest.mark.parametrize(
    "template",
    [STRIDED, TRANSPOSED, TRANSPOSED_STRIDED],
    ids=["strided", "transposed", "transposed-strided"],
)
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("merge", ["none", "exact", "pad-kernel"])
def test_wide_partials_are_as_accurate_as_the_original(
    template: str, element: str, dialect: Dialect, merge: str
) -> None:
    text = template.replace("xT>", f"x{element}>")
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(NUMPY[element]) for s in SHAPES[template]]
    (truth,) = xla(template.replace("xT>", "xf64>"), [x.astype(np.float64) for x in inputs])
    original = _error(text, inputs, truth)
    after, stats, printed = run_pass(
        text, dialect, engine="xla-cpu", gate="general", merge_phases=merge
    )
    converts = CONVERTS[merge][template]
    assert stats.counters.get("wide-partials", 0) == converts
    assert len(re.findall(r"\.convert", printed)) == converts
    assert _error(as_stablehlo_text(after, dialect), inputs, truth) <= 1.25 * original
    if converts:  # the bound is tight enough to catch rounding each partial
        _, _, narrow = run_pass(
            text,
            STABLEHLO,
            engine="xla-cpu",
            gate="general",
            wide_partials=False,
            merge_phases=merge,
        )
        assert _error(narrow, inputs, truth) > 1.25 * original


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_wide_partials_false_rounds_each_partial_as_before(element: str) -> None:
    text = STRIDED.replace("xT>", f"x{element}>")
    _, stats, printed = run_pass(text, STABLEHLO, gate="general", wide_partials=False)
    assert "wide-partials" not in stats.counters
    assert "convert" not in printed and "f32" not in printed


def test_f32_and_single_partial_convs_are_not_widened() -> None:
    _, stats, printed = run_pass(STRIDED.replace("xT>", "xf32>"), STABLEHLO, gate="general")
    assert "wide-partials" not in stats.counters and "convert" not in printed
    one_tap = STRIDED.replace("xT>", "xbf16>").replace("3x3x32x16", "1x1x32x16")
    one_tap = one_tap.replace("pad = [[1, 1], [1, 1]]", "pad = [[0, 0], [0, 0]]")
    _, stats, printed = run_pass(one_tap, STABLEHLO, gate="general")
    assert stats.counters["rewritten-stride"] == 1 and "convert" not in printed


@pytest.mark.parametrize("engine", ["iree-cpu", "generic"])
@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_a_transposed_convs_phases_split_into_taps_are_summed_wide(
    engine: str, element: str
) -> None:
    """Under a policy that splits line partials, a 3x3/2 transposed conv's 2x1 and 1x2 output
    phases are sums of 1x1 convs, which the gate's count of merged phases (one conv per
    output) does not see: they are summed in f32 and converted once, as accurate as the
    original."""
    text = TRANSPOSED.replace("xT>", f"x{element}>")
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(NUMPY[element]) for s in SHAPES[TRANSPOSED]]
    (truth,) = xla(TRANSPOSED.replace("xT>", "xf64>"), [x.astype(np.float64) for x in inputs])
    after, stats, printed = run_pass(text, STABLEHLO, gate="general", engine=engine)
    assert stats.counters["wide-partials"] == 1
    assert len(re.findall(r"\.convert", printed)) == 1
    assert _error(str(after.module), inputs, truth) <= 1.25 * _error(text, inputs, truth)
