"""`migraphx.concat` and `migraphx.pad` lower to TOSA that iree-opt verifies, IREE runs and that
equals the migraphx reference, over random shapes, axes, pads (negative ones and ones past the
dim too), modes and layouts (permutations, gaps, broadcasts); operands stored alike are joined
and padded where they are stored, without a transpose."""

from __future__ import annotations

import numpy as np
import pytest
from _pads import PAD_MODES, random_pads  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import check_with_interpreter, check_with_iree
from .programs import Lens, Program, layout_strides, memory_layouts

pytestmark = pytest.mark.filterwarnings("error")

ELEMENTS = ["f32", "f32", "f16", "bf16", "si32", "si8", "ui8"]
MODES = PAD_MODES


def _arr(values: list[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


@st.composite
def concat_programs(draw: st.DrawFn) -> str:
    rank = draw(st.integers(1, 4))
    lens = [draw(st.integers(1, 4)) for _ in range(rank)]
    axis = draw(st.integers(-rank, rank - 1))
    et = draw(st.sampled_from(ELEMENTS))
    p = Program()
    operands = []
    for _ in range(draw(st.integers(1, 4))):
        lens[axis] = draw(st.integers(1, 4))
        shape = tuple(lens)
        operands.append(p.arg(shape, draw(memory_layouts(shape, allow_broadcast=True)), et))
    out = list(lens)
    out[axis] = sum(v.lens[axis] for v in operands)
    strides = draw(memory_layouts(out))
    y = p.op("concat", operands, out, f"axis = {axis} : i64", strides=strides)
    return p.text([y])


def pad_attrs(mode: str, begins: list[int], ends: list[int], value: str = "-2.5") -> str:
    return f'mode = "{mode}", pads = {_arr(begins + ends)}, value = {value} : f32'


@st.composite
def pad_programs(draw: st.DrawFn) -> str:
    lens, begins, ends, mode = draw(random_pads(max_len=4))
    out = tuple(n + b + e for n, b, e in zip(lens, begins, ends, strict=True))
    et = draw(st.sampled_from(ELEMENTS))
    p = Program()
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), et)
    y = p.op("pad", [x], out, pad_attrs(mode, begins, ends), strides=draw(memory_layouts(out)))
    return p.text([y])


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(concat_programs())
def test_random_concat_matches_iree(text: str) -> None:
    check_with_iree(text)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(concat_programs())
def test_random_concat_matches_the_reference(text: str) -> None:
    check_with_interpreter(text)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(pad_programs())
def test_random_pad_matches_iree(text: str) -> None:
    check_with_iree(text)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(pad_programs())
def test_random_pad_matches_the_reference(text: str) -> None:
    check_with_interpreter(text)


NHWC = (0, 2, 3, 1)


def test_nhwc_branches_concatenate_on_channels_without_a_transpose() -> None:
    """Inception's join: NHWC branches and an NHWC result, one tosa.concat on the stored
    channels dim."""
    p = Program()
    branches = [p.arg((1, c, 5, 5), layout_strides((1, c, 5, 5), NHWC)) for c in (2, 3, 4)]
    out: Lens = (1, 9, 5, 5)
    y = p.op("concat", branches, out, "axis = 1 : i64", strides=layout_strides(out, NHWC))
    tosa_text = check_with_iree(p.text([y]))
    assert "tosa.transpose" not in tosa_text
    assert tosa_text.count("tosa.concat") == 1


@pytest.mark.parametrize("mode", MODES)
def test_nhwc_spatial_pad_stays_where_it_is_stored(mode: str) -> None:
    """A style-transfer reflect pad (or edge, or a constant) of an NHWC image: no transpose."""
    lens: Lens = (1, 3, 6, 5)
    out: Lens = (1, 3, 10, 9)
    p = Program()
    x = p.arg(lens, layout_strides(lens, NHWC))
    attrs = pad_attrs(mode, [0, 0, 2, 2], [0, 0, 2, 2])
    y = p.op("pad", [x], out, attrs, strides=layout_strides(out, NHWC))
    tosa_text = check_with_iree(p.text([y]))
    assert "tosa.transpose" not in tosa_text


@pytest.mark.parametrize(
    ("et", "value"),
    [("f16", "0x7FC00000"), ("f16", "-3.40282002e+38"), ("f32", "0xFF800000"), ("ui8", "2.55e+02"),
     ("si8", "-1.0e+03"), ("si32", "7.9")],
)  # fmt: skip
def test_the_pad_value_is_clamped_to_the_element_type_on_iree(et: str, value: str) -> None:
    """NaN stays NaN; f32's lowest and -inf become the type's lowest; an unsigned 255 is TOSA's
    signless -1; integers are clamped and truncated, as MIGraphX's pad_clamp."""
    p = Program()
    x = p.arg((2, 3), et=et)
    y = p.op("pad", [x], (4, 4), pad_attrs("constant", [1, 0], [1, 1], value))
    check_with_iree(p.text([y]))


@pytest.mark.parametrize("element", ["f8E4M3FNUZ", "f8E4M3FN"])
@pytest.mark.parametrize("mode", MODES)
def test_fp8_pads_on_iree(element: str, mode: str) -> None:
    """An fp8 FNUZ value (storage in TOSA's profiles) is padded decoded and encoded back; an OCP
    fp8 one as it is; the fill saturates at the type's largest value either way."""
    p = Program()
    x = p.arg((2, 3), et=element)
    y = p.op("pad", [x], (5, 4), pad_attrs(mode, [2, 0], [1, 1], "-1.0e+04"))
    check_with_iree(p.text([y]))


def test_a_pad_that_crops_a_dim_away_is_the_fill() -> None:
    """Negative pads may cut a dim's every element; the positive ones then hold only the fill."""
    p = Program()
    x = p.arg((2, 3))
    y = p.op("pad", [x], (2, 2), pad_attrs("constant", [0, -3], [0, 2]))
    tosa_text = check_with_iree(p.text([y]))
    assert "tosa.pad" not in tosa_text


def test_concat_then_pad_on_iree() -> None:
    """Two branches joined, then reflect-padded as a U-Net's skip connection is."""
    p = Program()
    a, b = p.arg((1, 2, 4, 4)), p.arg((1, 3, 4, 4), layout_strides((1, 3, 4, 4), NHWC))
    c = p.op("concat", [a, b], (1, 5, 4, 4), "axis = -3 : i64")
    y = p.op("pad", [c], (1, 5, 6, 6), pad_attrs("reflect", [0, 0, 1, 1], [0, 0, 1, 1]))
    inputs = [np.arange(32, dtype=np.float32), np.arange(48, dtype=np.float32)]
    check_with_iree(p.text([y]), inputs=inputs)


@pytest.mark.parametrize("element", ["f8E4M3FNUZ", "f8E5M2", "si4", "ui4"])
def test_concat_moves_storage_codes_on_iree(element: str) -> None:
    """A type TOSA's profiles hold only as storage (fp8 FNUZ, int4) is joined as its codes: the
    concat only moves elements; an NHWC operand beside an NCHW one, transposed once."""
    p = Program()
    a = p.arg((1, 2, 3, 3), et=element)
    b = p.arg((1, 3, 3, 3), layout_strides((1, 3, 3, 3), NHWC), element)
    y = p.op("concat", [a, b], (1, 5, 3, 3), "axis = 1 : i64")
    tosa_text = check_with_iree(p.text([y]))
    assert "tosa.gather" not in tosa_text  # no decode table: the codes move as they are


@pytest.mark.parametrize("mode", MODES)
def test_a_scalar_pads_to_itself(mode: str) -> None:
    """No dims, no pads: the value itself (the fill is never written)."""
    p = Program()
    x = p.arg(())
    y = p.op("pad", [x], (), pad_attrs(mode, [], []))
    check_with_interpreter(p.text([y]))
