"""The quantization ops lowered to TOSA: iree-opt verifies every module, our TOSA interpreter and
IREE (llvm-cpu) agree with the migraphx reference over flat strided buffers.

Integer results must be equal; inputs span the whole int8 range and scales small enough to
saturate. IREE compiles cost ~1 s, so the IREE hypothesis runs are small and the same strategies
run with more examples on the interpreter. Block-scaled quant_dot (f4E2M1FN x f8E8M0FNU) is
checked by iree-opt and the interpreter only: IREE 3.13's TOSA profile check refuses a
`tosa.cast` from f4E2M1FN (and has no fp4 buffers), so it is not verified on IREE.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_kernels import type_dtype
from convcanon.xdsl_io import parse_file_text

from .harness import as_signless, assert_close, entry, iree_opt_verify, lower, reference
from .programs import Program, Val, conv_configs, layout_strides, memory_layouts, small_lens

_IREE = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
_INTERP = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


def arg_dtypes(text: str) -> list[np.dtype]:
    """The numpy dtypes of the entry function's flat argument buffers."""
    return [type_dtype(ty) for ty in entry(parse_file_text(text, "<test>")).function_type.inputs]


def quant_inputs(text: str, seed: int = 0, int_bound: int = 3000) -> list[np.ndarray]:
    """Flat buffers: ints over their whole range (wider ones over +-`int_bound`, wrapped to
    their type), floats in [-3, 3] for data and (0.05, 2] for args whose name starts with
    `%scale`."""
    module = parse_file_text(text, "<test>")
    function = entry(module)
    rng = np.random.default_rng(seed)
    inputs: list[np.ndarray] = []
    for arg, ty in zip(function.body.blocks[0].args, function.function_type.inputs, strict=True):
        dtype = type_dtype(ty)
        size = ty.flat_size()  # pyright: ignore[reportAttributeAccessIssue]
        if dtype.kind in "iu" and dtype.itemsize == 1:
            inputs.append(rng.integers(0, 256, size).astype(np.uint8).view(dtype))
        elif dtype.kind in "iu":
            inputs.append(rng.integers(-int_bound, int_bound, size).astype(dtype))
        elif (arg.name_hint or "").startswith("scale"):
            inputs.append(rng.uniform(0.05, 2.0, size).astype(dtype))
        else:
            inputs.append(rng.uniform(-3.0, 3.0, size).astype(dtype))
    return inputs


def check(
    text: str, iree: bool = True, seed: int = 0, rtol: float = 1e-4, int_bound: int = 3000
) -> str:
    """Lower; iree-opt verifies; our TOSA interpreter and (if `iree`) IREE equal the reference
    (to `rtol`; 0 is bit for bit)."""
    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    inputs = quant_inputs(text, seed, int_bound)
    expected = reference(text, inputs)
    assert_close(reference(tosa_text, inputs), expected, rtol)
    if iree:
        from convcanon.verify.iree_tosa import run_tosa_text

        assert_close(run_tosa_text(tosa_text, inputs), expected, rtol)
    return tosa_text


def _arr(values: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _scale_arg(p: Program, lens: Sequence[int], strides: Sequence[int], et: str = "f32") -> Val:
    value = p.arg(lens, strides, et)
    renamed = Val(f"%scale{len(p.args) - 1}", value.lens, value.strides, value.et)
    p.args[-1] = renamed
    return renamed


@st.composite
def _per_channel(draw: st.DrawFn, p: Program, lens: Sequence[int], et: str, scale: bool) -> Val:
    """A full-shaped argument, or a per-axis vector broadcast to `lens` (how MIGraphX sends
    per-channel scales and zero points)."""
    lens = tuple(lens)
    if draw(st.booleans()):
        strides = draw(memory_layouts(lens, allow_broadcast=True))
        return _scale_arg(p, lens, strides, et) if scale else p.arg(lens, strides, et)
    axis = draw(st.integers(0, len(lens) - 1))
    vec = _scale_arg(p, (lens[axis],), (1,), et) if scale else p.arg((lens[axis],), (1,), et)
    strides = [1 if d == axis else 0 for d in range(len(lens))]
    attrs = f"axis = {axis} : i64, out_lens = {_arr(lens)}"
    return p.op("broadcast", [vec], lens, attrs, strides=strides)


# -- strategies ------------------------------------------------------------------------------------


@st.composite
def quantize_programs(
    draw: st.DrawFn, out_types: Sequence[str] = ("si8", "ui8", "si16", "i8", "f8E4M3FN", "f8E5M2")
) -> str:
    lens = draw(small_lens(1, 4))
    p = Program()
    src = draw(st.sampled_from(["f32", "f16"]))
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), src)
    scale = draw(_per_channel(p, lens, src, scale=True))
    out_et = draw(st.sampled_from(list(out_types)))
    operands = [x, scale]
    if draw(st.booleans()):
        operands.append(draw(_per_channel(p, lens, out_et, scale=False)))
    y = p.op("quantizelinear", operands, lens, strides=draw(memory_layouts(lens)), et=out_et)
    return p.text([y])


@st.composite
def dequantize_programs(
    draw: st.DrawFn, in_types: Sequence[str] = ("si8", "ui8", "si32", "i8")
) -> str:
    lens = draw(small_lens(1, 4))
    p = Program()
    in_et = draw(st.sampled_from(list(in_types)))
    out_et = draw(st.sampled_from(["f32", "f16"]))
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), in_et)
    operands = [x, draw(_per_channel(p, lens, out_et, scale=True))]
    if draw(st.booleans()):
        operands.append(draw(_per_channel(p, lens, in_et, scale=False)))
    y = p.op("dequantizelinear", operands, lens, strides=draw(memory_layouts(lens)), et=out_et)
    return p.text([y])


_INTS = ("si8", "ui8", "si16", "ui16", "si32", "ui32", "i8", "i32")
_FLOATS = ("f32", "f16", "f8E4M3FN", "f8E5M2")


def exactly_lowered(in_et: str, zero_et: str | None) -> bool:
    """Whether a dequantize of these types has an exact TOSA lowering: a float meeting a 32-bit
    integer needs f64 to hold both."""
    kinds = [et for et in (in_et, zero_et) if et is not None]
    floats = [et for et in kinds if et not in _INTS]
    return not (floats and {"si32", "ui32", "i32"} & set(kinds))


@st.composite
def mixed_dequantize_programs(draw: st.DrawFn, floats: Sequence[str] = _FLOATS) -> str:
    """dequantizelinear with the input and the zero point of independent types (rocMLIR's
    i8 input with an i32 zero point, fp8 with f32, a float input)."""
    lens = draw(small_lens(1, 4))
    p = Program()
    in_et = draw(st.sampled_from([*_INTS, *floats]))
    zero_et = draw(st.sampled_from([None, *_INTS, *floats]))
    if not exactly_lowered(in_et, zero_et):
        zero_et = "si16"
    out_et = draw(st.sampled_from(["f32", "f16"]))
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), in_et)
    operands = [x, draw(_per_channel(p, lens, out_et, scale=True))]
    if zero_et is not None:
        operands.append(draw(_per_channel(p, lens, zero_et, scale=False)))
    y = p.op("dequantizelinear", operands, lens, strides=draw(memory_layouts(lens)), et=out_et)
    return p.text([y])


@st.composite
def quant_dot_programs(draw: st.DrawFn) -> str:
    batch = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 2))))
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    a_lens, b_lens, out = (*batch, m, k), (*batch, k, n), (*batch, m, n)
    p = Program()
    et = draw(st.sampled_from(["si8", "si8", "ui8"]))
    a = p.arg(a_lens, draw(memory_layouts(a_lens)), et)
    b = p.arg(b_lens, draw(memory_layouts(b_lens)), et)
    y = p.op("quant_dot", [a, b], out, strides=draw(memory_layouts(out)), et="si32")
    return p.text([y])


@st.composite
def quant_conv_programs(draw: st.DrawFn) -> str:
    cfg = draw(conv_configs())
    p = Program()
    et = draw(st.sampled_from(["si8", "si8", "ui8"]))
    x = p.arg(cfg.in_lens, draw(memory_layouts(cfg.in_lens)), et)
    w = p.arg(cfg.w_lens, draw(memory_layouts(cfg.w_lens)), et)
    out = cfg.out_lens
    y = p.op(
        "quant_convolution", [x, w], out, cfg.attrs(), strides=draw(memory_layouts(out)), et="si32"
    )
    return p.text([y])


def backwards_extent(n: int, k: int, s: int, d: int, b: int, e: int) -> int:
    return s * (n - 1) + d * (k - 1) + 1 - b - e


@st.composite
def backwards_conv_programs(draw: st.DrawFn, nsp: int | None = None) -> str:
    nsp = nsp if nsp is not None else draw(st.sampled_from([1, 2, 2, 3]))
    group = draw(st.sampled_from([1, 1, 2, 3]))
    k_in, c_out = group * draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    spatial = tuple(draw(st.integers(1, 3 if nsp == 3 else 5)) for _ in range(nsp))
    begins, ends = [], []
    for n, k, s, d in zip(spatial, kernel, stride, dilation, strict=True):
        full = backwards_extent(n, k, s, d, 0, 0)
        b = draw(st.integers(0, min(2, full - 1)))
        begins.append(b)
        ends.append(draw(st.integers(0, min(2, full - 1 - b))))
    x_lens = (draw(st.integers(1, 2)), k_in, *spatial)
    w_lens = (k_in, c_out, *kernel)
    out = (
        x_lens[0],
        c_out * group,
        *(
            backwards_extent(*a)
            for a in zip(spatial, kernel, stride, dilation, begins, ends, strict=True)
        ),
    )
    attrs = (
        f"dilation = {_arr(dilation)}, group = {group} : i64, padding = {_arr(begins + ends)}, "
        f"padding_mode = 0 : i64, stride = {_arr(stride)}"
    )
    p = Program()
    x = p.arg(x_lens, draw(memory_layouts(x_lens)))
    w = p.arg(w_lens, draw(memory_layouts(w_lens)))
    y = p.op("backwards_data_convolution", [x, w], out, attrs, strides=draw(memory_layouts(out)))
    return p.text([y])


@st.composite
def unpack_programs(draw: st.DrawFn) -> str:
    """unpack to i8 nibbles, or to si4 followed by a dequantize (4-bit values stay inside)."""
    lens = draw(small_lens(1, 3))
    axis = draw(st.integers(0, len(lens) - 1))
    out = tuple(2 * n if d == axis else n for d, n in enumerate(lens))
    p = Program()
    packed_et = draw(st.sampled_from(["ui8", "si8", "i8"]))
    x = p.arg(lens, draw(memory_layouts(lens)), packed_et)
    signed = draw(st.booleans())
    et = "si4" if signed else packed_et
    y = p.op("unpack", [x], out, f"axis = {axis} : i64", et=et)
    if signed:
        scale = _scale_arg(p, out, layout_strides(out))
        y = p.op("dequantizelinear", [y, scale], out, strides=draw(memory_layouts(out)), et="f32")
    return p.text([y])


_FAMILIES = {
    "quantizelinear": quantize_programs(),
    "dequantizelinear": dequantize_programs(),
    "quant_dot": quant_dot_programs(),
    "quant_convolution": quant_conv_programs(),
    "backwards_data_convolution": backwards_conv_programs(),
    "unpack": unpack_programs(),
}


@pytest.mark.parametrize("family", sorted(_FAMILIES))
def test_random_quant_program_matches_iree(family: str) -> None:
    @_IREE
    @given(_FAMILIES[family])
    def run(text: str) -> None:
        check(text)

    run()


@pytest.mark.parametrize("family", sorted(_FAMILIES))
def test_random_quant_program_lowering_matches_reference(family: str) -> None:
    @_INTERP
    @given(_FAMILIES[family])
    def run(text: str) -> None:
        check(text, iree=False)

    run()


def test_mixed_type_dequantize_is_bit_exact_on_iree() -> None:
    """Integers over their whole 32-bit range: the difference is exact, so IREE, our TOSA
    interpreter and the reference agree bit for bit."""

    @_IREE
    @given(mixed_dequantize_programs(), st.integers(0, 100))
    def run(text: str, seed: int) -> None:
        check(text, seed=seed, rtol=0.0, int_bound=2**31)

    run()


def test_mixed_type_dequantize_lowering_matches_reference() -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(mixed_dequantize_programs((*_FLOATS, "f8E4M3FNUZ", "f8E5M2FNUZ")), st.integers(0, 100))
    def run(text: str, seed: int) -> None:
        check(text, iree=False, seed=seed, rtol=0.0, int_bound=2**31)

    run()


@pytest.mark.parametrize(
    ("in_et", "zero_et", "x", "z"),
    [
        ("si32", "si32", 2**24 + 1, 1),  # f32(x) - f32(z) would be 2^24 - 1
        ("ui32", "ui32", 2**32 - 1, 2**32 - 2),  # both round to 2^32 in f32: 0
        ("si8", "si32", 1, 2**24 + 1),  # rocMLIR's dequantize_wide_bias
        ("si32", "si8", -(2**31), 127),  # rocMLIR's dequantize_wide_input
    ],
)
def test_dequantize_difference_of_wide_integers_is_exact_on_iree(
    in_et: str, zero_et: str, x: int, z: int
) -> None:
    """The difference is taken exactly and rounded once to f32; converting each operand to
    f32 first would round twice."""
    p = Program()
    args = [p.arg((1,), None, in_et), _scale_arg(p, (1,), (1,)), p.arg((1,), None, zero_et)]
    text = p.text([p.op("dequantizelinear", args, (1,), et="f32")])
    dtypes = arg_dtypes(text)
    inputs = [
        np.array([x]).astype(dtypes[0]),
        np.ones(1, np.float32),
        np.array([z]).astype(dtypes[2]),
    ]
    expected = [np.array([x - z], np.float32)]
    from convcanon.verify.iree_tosa import run_tosa_text

    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    flat = [as_signless(v) for v in inputs]
    for got in (
        reference(text, inputs),
        reference(tosa_text, flat),
        run_tosa_text(tosa_text, flat),
    ):
        assert_close(got, expected, rtol=0.0)


@pytest.mark.parametrize(
    ("in_et", "zero_et"), [("f32", "si32"), ("ui32", "f16"), ("f8E4M3FN", "i32")]
)
def test_float_with_32_bit_integer_dequantize_says_why_it_has_no_lowering(
    in_et: str, zero_et: str
) -> None:
    """Accepted (rocMLIR accepts it) and run by the reference in f64, but only f64 holds both
    exactly and IREE computes f64 in f32: the lowering refuses rather than round."""
    p = Program()
    x = p.arg((4,), None, in_et)
    scale = _scale_arg(p, (4,), (1,))
    zero = p.arg((4,), None, zero_et)
    text = p.text([p.op("dequantizelinear", [x, scale, zero], (4,), et="f32")])
    inputs = quant_inputs(text, int_bound=2**31)
    assert np.isfinite(reference(text, inputs)[0]).all()
    with pytest.raises(ConvcanonError, match="only f64 holds both exactly"):
        lower(text)


@st.composite
def wide_quantize_programs(draw: st.DrawFn) -> str:
    """quantizelinear with 32-bit results or zero points: any integer zero-point type."""
    lens = draw(small_lens(1, 3))
    p = Program()
    src = draw(st.sampled_from(["f32", "f16"]))
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), src)
    operands = [x, draw(_per_channel(p, lens, src, scale=True))]
    out_et = draw(st.sampled_from(["si32", "ui32", "i32", "si8", "ui8", "si16", "ui16"]))
    zero_et = draw(st.sampled_from([None, *_INTS]))
    if zero_et is None or not ({out_et, zero_et} & {"si32", "ui32", "i32"}):
        zero_et = draw(st.sampled_from(["si32", "ui32", "i32"]))
    operands.append(draw(_per_channel(p, lens, zero_et, scale=False)))
    y = p.op("quantizelinear", operands, lens, strides=draw(memory_layouts(lens)), et=out_et)
    return p.text([y])


def wide_quantize_inputs(text: str, seed: int) -> list[np.ndarray]:
    """Data of magnitude 2^-2 .. 2^34 (both signs, some exact halves and range edges), scales
    that are powers of two, zero points over their type's whole range."""
    module = parse_file_text(text, "<test>")
    function = entry(module)
    rng = np.random.default_rng(seed)
    edges = [2.0**31, 2.0**31 - 128, 2.0**32, 2.0**32 - 256, 2.0**33, 0.5, 2.5, 1e30]
    inputs: list[np.ndarray] = []
    for arg, ty in zip(function.body.blocks[0].args, function.function_type.inputs, strict=True):
        dtype = type_dtype(ty)
        size = ty.flat_size()  # pyright: ignore[reportAttributeAccessIssue]
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            inputs.append(
                rng.integers(int(info.min), int(info.max), size, endpoint=True).astype(dtype)
            )
        elif (arg.name_hint or "").startswith("scale"):
            inputs.append((2.0 ** rng.integers(-3, 4, size)).astype(dtype))
        else:
            magnitude = 2.0 ** rng.uniform(-2, 34, size)
            magnitude = np.where(rng.random(size) < 0.2, rng.choice(edges, size), magnitude)
            with np.errstate(over="ignore"):  # f16: the largest edges become inf, as data may
                inputs.append((magnitude * rng.choice([-1.0, 1.0], size)).astype(dtype))
    return inputs


def check_bit_exact(text: str, inputs: list[np.ndarray], iree: bool = True) -> None:
    """iree-opt verifies the lowering; our TOSA interpreter and IREE equal the reference bit
    for bit."""
    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    expected = reference(text, inputs)
    flat = [as_signless(v) for v in inputs]
    assert_close(reference(tosa_text, flat), expected, rtol=0.0)
    if iree:
        from convcanon.verify.iree_tosa import run_tosa_text

        assert_close(run_tosa_text(tosa_text, flat), expected, rtol=0.0)


def test_wide_quantize_saturates_exactly_on_iree() -> None:
    @_IREE
    @given(wide_quantize_programs(), st.integers(0, 100))
    def run(text: str, seed: int) -> None:
        check_bit_exact(text, wide_quantize_inputs(text, seed))

    run()


def test_wide_quantize_lowering_matches_reference() -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(wide_quantize_programs(), st.integers(0, 100))
    def run(text: str, seed: int) -> None:
        check_bit_exact(text, wide_quantize_inputs(text, seed), iree=False)

    run()


_BIG = [
    # (result, zero point, x, zero, expected): sums no f32 or i32 holds, saturation at the edges
    ("si32", "si32", 2.0**31 - 128, 0, 2**31 - 128),  # the largest f32 below 2^31
    ("si32", "si32", 2.0**31, 0, 2**31 - 1),
    ("si32", "si32", -(2.0**31), -1, -(2**31)),
    ("si32", "si32", 3e9, -(2**31), 3_000_000_000 - 2**31),
    ("si32", "si32", -3e9, 2**31 - 1, -3_000_000_000 + 2**31 - 1),
    ("ui32", "ui32", 3e9, 0, 3_000_000_000),  # above 2^31: negative i32 bits
    ("ui32", "ui32", 5e9, 0, 2**32 - 1),
    ("ui32", "ui32", -1e9, 2**32 - 1, 2**32 - 1 - 1_000_000_000),
    ("ui32", "ui32", -5e9, 2**32 - 1, 0),
    ("ui32", "ui32", 2.5, 2**32 - 3, 2**32 - 1),  # 2.5 rounds to 2 (even)
    ("si8", "si32", 2.0**31 + 1024, -(2**31), 127),
    ("si8", "si32", 2.0**31, -(2**31), 0),
    ("si8", "si32", -(2.0**31 - 128), 2**31 - 1, 127),
    ("si8", "si32", -(2.0**31), 2**31 - 1, -1),
    ("ui8", "ui32", -(2.0**32 - 256), 2**32 - 1, 255),
    ("si16", "ui32", -(2.0**32), 2**32 - 1, -1),
]


@pytest.mark.parametrize(("out_et", "zero_et", "x", "zero", "expected"), _BIG)
def test_wide_quantize_edges_on_iree(
    out_et: str, zero_et: str, x: float, zero: int, expected: int
) -> None:
    p = Program()
    args = [p.arg((1,), None), _scale_arg(p, (1,), (1,)), p.arg((1,), None, zero_et)]
    text = p.text([p.op("quantizelinear", args, (1,), et=out_et)])
    zero_dtype = arg_dtypes(text)[2]
    inputs = [
        np.array([x], np.float32),
        np.ones(1, np.float32),
        np.array([zero]).astype(zero_dtype),
    ]
    assert reference(text, inputs)[0].astype(np.int64)[0] == expected
    check_bit_exact(text, inputs)


@pytest.mark.xfail(
    strict=True,
    reason="known: the lowering multiplies by the f32 reciprocal of the scale (rocMLIR's "
    "lowering) where MIGraphX divides; the two f32 roundings differ for 9% to 28% of inputs "
    "with |x / scale| above 2^16, so only power-of-two scales are exact there",
)
def test_quantize_divides_rather_than_multiplying_by_the_reciprocal() -> None:
    """7e6 / 3 is 2333333.25 in f32 (rounds to 2333333); 7e6 * f32(1/3) is 2333333.5, which
    rounds to 2333334."""
    p = Program()
    args = [p.arg((1,), None), _scale_arg(p, (1,), (1,))]
    text = p.text([p.op("quantizelinear", args, (1,), et="si32")])
    inputs = [np.array([7e6], np.float32), np.array([3.0], np.float32)]
    assert reference(text, inputs)[0][0] == 2333333
    check_bit_exact(text, inputs)


# -- hand-written programs shaped like what MIGraphX sends -----------------------------------------


def _conv_attrs(padding: Sequence[int], stride: Sequence[int], group: int = 1) -> str:
    nsp = len(stride)
    return (
        f"dilation = {_arr([1] * nsp)}, group = {group} : i64, padding = {_arr(padding)}, "
        f"padding_mode = 0 : i64, stride = {_arr(stride)}"
    )


def int8_quantized_conv() -> str:
    """NHWC f32 activation -> quantizelinear (per-tensor scale, zero point) -> quant_convolution
    with int8 OIHW weights -> dequantizelinear by per-channel scales -> add bias -> relu."""
    p = Program()
    x = p.arg((1, 8, 6, 6), layout_strides((1, 8, 6, 6), (0, 2, 3, 1)))
    sx = _scale_arg(p, (1,), (1,))
    zx = p.arg((1,), (1,), "si8")
    w = p.arg((4, 8, 3, 3), None, "si8")
    sw = _scale_arg(p, (4,), (1,))
    lens = (1, 8, 6, 6)
    bcast = f"out_lens = {_arr(lens)}"
    sxb = p.op("multibroadcast", [sx], lens, bcast, strides=(0, 0, 0, 0))
    zxb = p.op("multibroadcast", [zx], lens, bcast, strides=(0, 0, 0, 0))
    q = p.op("quantizelinear", [x, sxb, zxb], lens, strides=x.strides, et="si8")
    out = (1, 4, 6, 6)
    c = p.op("quant_convolution", [q, w], out, _conv_attrs([1, 1, 1, 1], [1, 1]), et="si32")
    bcast_c = f"axis = 1 : i64, out_lens = {_arr(out)}"
    scale = p.op("broadcast", [sw], out, bcast_c, strides=(0, 1, 0, 0))
    y = p.op("dequantizelinear", [c, scale], out, et="f32")
    return p.text([p.op("relu", [y], out)])


def int8_quantized_dot() -> str:
    """Per-row scales and zero points on the activation, per-column scales on the weight,
    quant_dot int8 -> int32, dequantize by the product of the scales (a literal)."""
    p = Program()
    x = p.arg((2, 5, 16), None)
    sx = _scale_arg(p, (2, 5, 1), None)
    zx = p.arg((2, 5, 1), None, "si8")
    w = p.arg((2, 16, 3), layout_strides((2, 16, 3), (0, 2, 1)), "si8")
    lens, out = (2, 5, 16), (2, 5, 3)
    sxb = p.op("multibroadcast", [sx], lens, f"out_lens = {_arr(lens)}", strides=(5, 1, 0))
    zxb = p.op("multibroadcast", [zx], lens, f"out_lens = {_arr(lens)}", strides=(5, 1, 0))
    q = p.op("quantizelinear", [x, sxb, zxb], lens, et="si8")
    d = p.op("quant_dot", [q, w], out, et="si32")
    s = p.literal("dense<0.0625> : tensor<1xf32>", (1,), (1,), "f32")
    sb = p.op("multibroadcast", [s], out, f"out_lens = {_arr(out)}", strides=(0, 0, 0))
    return p.text([p.op("dequantizelinear", [d, sb], out, et="f32")])


def int4_weight_dot() -> str:
    """An int4 weight packed two per byte: unpack (zero-extended nibbles), dequantize with a
    per-group scale and the zero point 8 (a literal), then an f16 dot, as MIGraphX sends it."""
    p = Program()
    a = p.arg((3, 8), None, "f16")
    packed = p.arg((8, 2), None, "ui8")
    sw = _scale_arg(p, (8, 2, 1), None, "f16")
    u = p.op("unpack", [packed], (8, 4), "axis = 1 : i64", et="ui8")
    zp = p.literal("dense<8> : tensor<1xui8>", (1,), (0,), "ui8")
    zpb = p.op("multibroadcast", [zp], (8, 4), "out_lens = [8, 4]", strides=(0, 0))
    s3 = p.op("multibroadcast", [sw], (8, 2, 2), "out_lens = [8, 2, 2]", strides=(2, 1, 0))
    s2 = p.op("reshape", [s3], (8, 4), "dims = [8, 4]")
    wf = p.op("dequantizelinear", [u, s2, zpb], (8, 4), et="f16")
    return p.text([p.op("dot", [a, wf], (3, 4))])


def transposed_conv_nhwc() -> str:
    """ConvTranspose as MIGraphX sends it: stride 2, padding 1, NHWC gradient, group 1."""
    p = Program()
    x = p.arg((1, 4, 5, 5), layout_strides((1, 4, 5, 5), (0, 2, 3, 1)))
    w = p.arg((4, 3, 4, 4), None)
    out = (1, 3, 10, 10)
    return p.text(
        [p.op("backwards_data_convolution", [x, w], out, _conv_attrs([1, 1, 1, 1], [2, 2]))]
    )


def transposed_conv_3d() -> str:
    """A 3-D ConvTranspose (no transpose_conv3d in TOSA): groups, dilation, uneven padding."""
    p = Program()
    x = p.arg((1, 4, 3, 2, 3), None)
    w = p.arg((4, 3, 2, 3, 2), None)
    attrs = (
        "dilation = [1, 2, 1], group = 2 : i64, padding = [1, 0, 1, 1, 1, 0], "
        "padding_mode = 0 : i64, stride = [2, 1, 2]"
    )
    return p.text([p.op("backwards_data_convolution", [x, w], (1, 6, 4, 5, 5), attrs)])


HAND_WRITTEN = {
    "transposed_conv_3d": transposed_conv_3d,
    "int8_quantized_conv": int8_quantized_conv,
    "int8_quantized_dot": int8_quantized_dot,
    "int4_weight_dot": int4_weight_dot,
    "transposed_conv_nhwc": transposed_conv_nhwc,
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_quant_program_matches_iree(name: str) -> None:
    rtol = 2e-3 if name == "int4_weight_dot" else 1e-4  # an f16 dot
    check(HAND_WRITTEN[name](), rtol=rtol)


def test_quantize_saturates_and_rounds_half_to_even_on_iree() -> None:
    """Ties go to even (2.5 -> 2, -0.5 -> 0, 3.5 -> 4) and far values saturate (127, -128)."""
    text = (
        "func.func @main(%x: !migraphx.shaped<8xf32, 1>, %s: !migraphx.shaped<8xf32, 0>) "
        "-> !migraphx.shaped<8xi8, 1> {\n"
        "  %q = migraphx.quantizelinear %x, %s : <8xf32, 1>, <8xf32, 0> -> <8xi8, 1>\n"
        "  return %q : !migraphx.shaped<8xi8, 1>\n}\n"
    )
    from convcanon.verify.iree_tosa import run_tosa_text

    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    x = np.array([2.5, -0.5, 3.5, 1e6, -1e6, 127.5, -128.5, 0.49], np.float32)
    s = np.array([1.0], np.float32)
    expected = np.array([2, 0, 4, 127, -128, 127, -128, 0], np.int8)
    for engine in (lambda: run_tosa_text(tosa_text, [x, s]), lambda: reference(tosa_text, [x, s])):
        np.testing.assert_array_equal(engine()[0], expected)
    np.testing.assert_array_equal(reference(text, [x, s])[0], expected)


def test_fp8_quantize_saturates_to_the_largest_finite_value_on_iree() -> None:
    """ONNX's float8 QuantizeLinear: x / scale rounded to nearest even fp8, clamped to +-448
    (f8E4M3FN) instead of overflowing to NaN."""
    text = (
        "func.func @main(%x: !migraphx.shaped<6xf32, 1>, %s: !migraphx.shaped<6xf32, 0>) "
        "-> !migraphx.shaped<6xf8E4M3FN, 1> {\n"
        "  %q = migraphx.quantizelinear %x, %s : <6xf32, 1>, <6xf32, 0> -> <6xf8E4M3FN, 1>\n"
        "  return %q : !migraphx.shaped<6xf8E4M3FN, 1>\n}\n"
    )
    import ml_dtypes

    from convcanon.verify.iree_tosa import run_tosa_text

    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    x = np.array([1e6, -1e6, 500.0, 1.0625, 3.0, -0.0], np.float32)
    s = np.array([2.0], np.float32)
    expected = np.array([448, -448, 256, 0.5, 1.5, 0], np.float32)  # 0.53125 -> 0.5 (even)
    for got in (run_tosa_text(tosa_text, [x, s])[0], reference(text, [x, s])[0]):
        assert got.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
        np.testing.assert_array_equal(got.astype(np.float32), expected)


def test_block_scaled_quant_dot_verifies_and_matches_reference() -> None:
    """f4E2M1FN operands scaled per element by f8E8M0FNU (MXFP4); iree-opt and our TOSA
    interpreter only (see the module docstring)."""
    a_t, sa_t = "<2x32xf4E2M1FN, 32x1>", "<2x32xf8E8M0FNU, 32x1>"
    b_t, sb_t = "<32x3xf4E2M1FN, 1x32>", "<32x3xf8E8M0FNU, 3x1>"
    text = (
        f"func.func @main(%a: !migraphx.shaped{a_t}, %sa: !migraphx.shaped{sa_t}, "
        f"%b: !migraphx.shaped{b_t}, %sb: !migraphx.shaped{sb_t}) -> "
        "!migraphx.shaped<2x3xf32, 3x1> {\n"
        f"  %r = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb : {a_t} scaled by "
        f"!migraphx.shaped{sa_t}, {b_t} scaled by !migraphx.shaped{sb_t} -> <2x3xf32, 3x1>\n"
        "  return %r : !migraphx.shaped<2x3xf32, 3x1>\n}\n"
    )
    import ml_dtypes

    rng = np.random.default_rng(1)
    a = rng.choice([-6, -3, -1, -0.5, 0, 0.5, 1.5, 4], 64).astype(ml_dtypes.float4_e2m1fn)
    b = rng.choice([-2, -1, 0, 1, 3, 6], 96).astype(ml_dtypes.float4_e2m1fn)
    sa = (2.0 ** rng.integers(-3, 3, 64)).astype(ml_dtypes.float8_e8m0fnu)
    sb = (2.0 ** rng.integers(-3, 3, 96)).astype(ml_dtypes.float8_e8m0fnu)
    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    got = reference(tosa_text, [a, sa, b, sb])[0]
    av = (a.astype(np.float64) * sa.astype(np.float64)).reshape(2, 32)
    # b is stored column-major (strides 1x32), its scales row-major (3x1)
    bv = b.astype(np.float64).reshape(3, 32).T * sb.astype(np.float64).reshape(32, 3)
    np.testing.assert_allclose(got, (av @ bv).reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(reference(text, [a, sa, b, sb])[0], got, rtol=1e-6)


def test_unsigned_zero_point_dequantizes_by_value() -> None:
    """A ui8 zero point 200 and data 255 dequantize to (255 - 200) * s, not (-1 + 56) * s:
    unsigned bytes are masked after TOSA's sign-extending cast."""
    text = (
        "func.func @main(%x: !migraphx.shaped<4xui8, 1>, %scale: !migraphx.shaped<4xf32, 1>, "
        "%z: !migraphx.shaped<4xui8, 1>) -> !migraphx.shaped<4xf32, 1> {\n"
        "  %d = migraphx.dequantizelinear %x, %scale, %z : <4xui8, 1>, <4xf32, 1>, <4xui8, 1> "
        "-> <4xf32, 1>\n  return %d : !migraphx.shaped<4xf32, 1>\n}\n"
    )
    x = np.array([255, 0, 128, 200], np.uint8)
    s = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    z = np.array([200, 200, 100, 200], np.uint8)
    expected = (x.astype(np.float64) - z) * s
    from convcanon.verify.iree_tosa import run_tosa_text

    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    np.testing.assert_array_equal(reference(text, [x, s, z])[0], expected)
    np.testing.assert_array_equal(reference(tosa_text, [x, s, z])[0], expected)
    np.testing.assert_array_equal(run_tosa_text(tosa_text, [x, s, z])[0], expected)
    assert math.isclose(expected[0], 27.5)


def test_unsigned_quant_dot_and_convolution_multiply_unsigned_values_on_iree() -> None:
    """ui8 x ui8: 255 * 255 per product, not (-1) * (-1) (the top bit flipped, zero point
    -128)."""
    from convcanon.verify.iree_tosa import run_tosa_text

    p = Program()
    a = p.arg((2, 6), None, "ui8")
    b = p.arg((6, 3), layout_strides((6, 3), (1, 0)), "ui8")
    d = p.op("quant_dot", [a, b], (2, 3), et="si32")
    x = p.arg((1, 2, 4, 4), None, "ui8")
    w = p.arg((3, 2, 3, 3), None, "ui8")
    c = p.op("quant_convolution", [x, w], (1, 3, 2, 2), _conv_attrs([0] * 4, [1, 1]), et="si32")
    text = p.text([d, c])
    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    inputs = [np.full(n, 255, np.uint8) for n in (12, 18, 32, 54)]
    expected = [np.full(6, 6 * 255 * 255, np.int32), np.full(12, 18 * 255 * 255, np.int32)]
    for engine in (run_tosa_text, reference):
        got = engine(tosa_text, inputs)
        assert_close([g.view(np.int32) for g in got], expected)
    assert_close(reference(text, inputs), expected)


# Falsifying examples the hypothesis tests found, kept verbatim.
_FOUND = {
    # the windows read only begin padding, so the lowering pads explicitly; that pad filled 0
    # after the ui8 top-bit flip (unsigned 128, minus the zero point -128: 128 * 163 = 20864)
    "ui8_quant_conv3d_reads_only_padding": (
        "func.func @main(%arg0: !migraphx.shaped<1x1x1x1x1xui8, 1x1x1x1x1>, "
        "%arg1: !migraphx.shaped<1x1x1x1x1xui8, 1x1x1x1x1>) -> "
        "(!migraphx.shaped<1x1x1x1x1xsi32, 1x1x1x1x1>) {\n"
        "    %0 = migraphx.quant_convolution %arg0, %arg1 {dilation = [1, 1, 1], "
        "group = 1 : i64, padding = [1, 0, 0, 0, 0, 0], padding_mode = 0 : i64, "
        "stride = [2, 1, 1]} : <1x1x1x1x1xui8, 1x1x1x1x1>, <1x1x1x1x1xui8, 1x1x1x1x1> -> "
        "<1x1x1x1x1xsi32, 1x1x1x1x1>\n"
        "    return %0 : !migraphx.shaped<1x1x1x1x1xsi32, 1x1x1x1x1>\n}\n"
    ),
    # a 2x1 kernel dilated along its unit dim: slicing the dilated kernel's trailing zeros off
    # was a strided copy IREE failed to compile (unrealized_conversion_cast)
    "backwards_conv_dilation_along_unit_kernel_dim": (
        "func.func @main(%arg0: !migraphx.shaped<1x1x1x1xf32, 1x1x1x1>, "
        "%arg1: !migraphx.shaped<1x1x2x1xf32, 2x2x1x1>) -> "
        "(!migraphx.shaped<1x1x2x1xf32, 2x2x1x1>) {\n"
        "    %0 = migraphx.backwards_data_convolution %arg0, %arg1 {dilation = [1, 2], "
        "group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : "
        "<1x1x1x1xf32, 1x1x1x1>, <1x1x2x1xf32, 2x2x1x1> -> <1x1x2x1xf32, 2x2x1x1>\n"
        "    return %0 : !migraphx.shaped<1x1x2x1xf32, 2x2x1x1>\n}\n"
    ),
    # one input channel per group: the per-group channel slice of the (dilated) kernel was a
    # standalone strided copy IREE failed to compile the same way
    "backwards_conv_one_channel_per_group": (
        "func.func @main(%arg0: !migraphx.shaped<1x2x1x1xf32, 2x1x1x1>, "
        "%arg1: !migraphx.shaped<2x1x1x2xf32, 2x2x2x1>) -> "
        "(!migraphx.shaped<1x2x1x3xf32, 6x3x3x1>) {\n"
        "    %0 = migraphx.backwards_data_convolution %arg0, %arg1 {dilation = [1, 2], "
        "group = 2 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : "
        "<1x2x1x1xf32, 2x1x1x1>, <2x1x1x2xf32, 2x2x2x1> -> <1x2x1x3xf32, 6x3x3x1>\n"
        "    return %0 : !migraphx.shaped<1x2x1x3xf32, 6x3x3x1>\n}\n"
    ),
    # a padded integer depthwise conv: IREE 3.13's own decomposition built an ill-typed tosa.pad
    # (i32 padding of an i8 input), so the lowering pads explicitly and gives the conv none
    # ui32 -> f32 lifts negative i32 bits by 2^32 with a select, which took the i1 condition's
    # element type for its result (invalid TOSA that iree-opt refused)
    "ui32_dequantize_with_bias": (
        "func.func @main(%arg0: !migraphx.shaped<1x3x4xui32, 12x4x1>, "
        "%arg1: !migraphx.shaped<1x1x4xf32, 4x4x1>, %arg2: !migraphx.shaped<1x1x4xui32, 4x4x1>) "
        "-> !migraphx.shaped<1x3x4xf32, 12x4x1> {\n"
        "    %0 = migraphx.dequantizelinear %arg0, %arg1, %arg2 : <1x3x4xui32, 12x4x1>, "
        "<1x1x4xf32, 4x4x1>, !migraphx.shaped<1x1x4xui32, 4x4x1> -> <1x3x4xf32, 12x4x1>\n"
        "    return %0 : !migraphx.shaped<1x3x4xf32, 12x4x1>\n}\n"
    ),
    **{
        f"{t}_quant_depthwise_conv1d_with_padding": (
            f"func.func @main(%arg0: !migraphx.shaped<1x2x1x{t}, 2x1x1>, "
            f"%arg1: !migraphx.shaped<2x1x1x{t}, 1x1x1>) -> "
            "(!migraphx.shaped<1x2x2xsi32, 4x2x1>) {\n"
            "    %0 = migraphx.quant_convolution %arg0, %arg1 {dilation = [1], group = 2 : i64, "
            "padding = [0, 1], padding_mode = 0 : i64, stride = [1]} : "
            f"<1x2x1x{t}, 2x1x1>, <2x1x1x{t}, 1x1x1> -> <1x2x2xsi32, 4x2x1>\n"
            "    return %0 : !migraphx.shaped<1x2x2xsi32, 4x2x1>\n}\n"
        )
        for t in ("si8", "ui8")
    },
}


@pytest.mark.parametrize("name", sorted(_FOUND))
def test_found_quant_program_matches_iree(name: str) -> None:
    check(_FOUND[name])


def _padding_read_conv(et: str, nsp: int, depthwise: bool, extent: int) -> str:
    """A quant_convolution with begin pad 1 and stride 2 along the first spatial dim. With
    `extent` 1 its one window lies on padding only and the lowering pads explicitly; a larger
    `extent` gives windows on data and padding (the conv's own pad)."""
    channels = 2 if depthwise else 1
    spatial = (extent, *[1] * (nsp - 1))
    p = Program()
    x = p.arg((1, channels, *spatial), None, et)
    w = p.arg((channels, 1, *[1] * nsp), None, et)
    out_first = extent // 2 + 1
    out = (1, channels, out_first, *[1] * (nsp - 1))
    padding = [1, *[0] * (2 * nsp - 1)]
    attrs = _conv_attrs(padding, [2, *[1] * (nsp - 1)], group=channels)
    return p.text([p.op("quant_convolution", [x, w], out, attrs, et="si32")])


@pytest.mark.parametrize("et", ["ui8", "si8"])
@pytest.mark.parametrize(
    ("nsp", "depthwise"), [(1, False), (2, False), (3, False), (1, True), (2, True)]
)
def test_quant_convolution_explicit_padding_contributes_nothing(
    et: str, nsp: int, depthwise: bool
) -> None:
    """Padded positions add nothing (TOSA reads only in-bounds elements and subtracts the zero
    point from those): an output on padding only is 0, on data its unsigned/signed product."""
    only_padding = _padding_read_conv(et, nsp, depthwise, 1)
    inputs = quant_inputs(only_padding)
    for got in (reference(lower(only_padding), inputs), reference(only_padding, inputs)):
        assert not np.any(got[0])
    check(only_padding)
    check(_padding_read_conv(et, nsp, depthwise, 4))


# IREE 3.13 casts the OCP fp8 types; its TOSA profile check refuses the FNUZ ones.
_FP8_ON_IREE = {"f8E4M3FN": True, "f8E5M2": True, "f8E4M3FNUZ": False, "f8E5M2FNUZ": False}


@pytest.mark.parametrize("et", sorted(_FP8_ON_IREE))
def test_fp8_quant_dot_and_convolution_accumulate_in_f32(et: str) -> None:
    p = Program()
    a = p.arg((2, 3, 8), layout_strides((2, 3, 8), (0, 2, 1)), et)
    b = p.arg((2, 8, 4), None, et)
    d = p.op("quant_dot", [a, b], (2, 3, 4), et="f32")
    x = p.arg((1, 4, 5, 5), layout_strides((1, 4, 5, 5), (0, 2, 3, 1)), et)
    w = p.arg((2, 4, 3, 3), None, et)
    c = p.op("quant_convolution", [x, w], (1, 2, 3, 3), _conv_attrs([0] * 4, [1, 1]), et="f32")
    check(p.text([d, c]), iree=_FP8_ON_IREE[et])


def test_mxfp4_dot_with_block_scales_broadcast_per_32_verifies_and_matches_reference() -> None:
    """MXFP4 as MIGraphX sends it: one f32 scale per 32 elements of K, broadcast and reshaped
    to the operand's lens, converted to f8E8M0FNU, then `quant_dot ... scaled by` (iree-opt and
    our TOSA interpreter only: IREE refuses fp4 casts)."""
    a_t, b_t = "<1x4x64xf4E2M1FN, 256x64x1>", "<1x64x4xf4E2M1FN, 256x4x1>"
    sa_t, sb_t = "<1x4x64xf8E8M0FNU, 256x64x1>", "<1x64x4xf8E8M0FNU, 256x4x1>"
    lines = [
        "%a0 = migraphx.multibroadcast %scale2 {out_lens = [1, 4, 2, 32]} : "
        "<1x4x2x1xf32, 8x2x1x1> -> <1x4x2x32xf32, 8x2x1x0>",
        "%a1 = migraphx.reshape %a0 {dims = [1, 4, 64]} : <1x4x2x32xf32, 8x2x1x0> -> "
        "<1x4x64xf32, 256x64x1>",
        "%b0 = migraphx.multibroadcast %scale3 {out_lens = [1, 2, 32, 4]} : "
        "<1x2x1x4xf32, 8x4x4x1> -> <1x2x32x4xf32, 8x4x0x1>",
        "%b1 = migraphx.reshape %b0 {dims = [1, 64, 4]} : <1x2x32x4xf32, 8x4x0x1> -> "
        "<1x64x4xf32, 256x4x1>",
        f"%sa = migraphx.convert %a1 : <1x4x64xf32, 256x64x1> to {sa_t}",
        f"%sb = migraphx.convert %b1 : <1x64x4xf32, 256x4x1> to {sb_t}",
        f"%r = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb : {a_t} scaled by "
        f"!migraphx.shaped{sa_t}, {b_t} scaled by !migraphx.shaped{sb_t} -> <1x4x4xf32, 16x4x1>",
    ]
    body = "\n".join(f"  {line}" for line in lines)
    text = (
        f"func.func @main(%a: !migraphx.shaped{a_t}, %b: !migraphx.shaped{b_t}, "
        "%scale2: !migraphx.shaped<1x4x2x1xf32, 8x2x1x1>, "
        "%scale3: !migraphx.shaped<1x2x1x4xf32, 8x4x4x1>) -> !migraphx.shaped<1x4x4xf32, 16x4x1> "
        f"{{\n{body}\n  return %r : !migraphx.shaped<1x4x4xf32, 16x4x1>\n}}\n"
    )
    check(text, iree=False)


def test_a_padded_1x1_integer_depthwise_conv_compiles_on_iree() -> None:
    """IREE folds an explicit pad back into a 1x1 integer depthwise conv and then decomposes it
    into an ill-typed tosa.pad (i32 padding of i8): such a conv is lowered as grouped convs."""
    text = (
        "func.func @main(%a: !migraphx.shaped<1x2x1x1xsi8, 2x1x1x1>,"
        " %b: !migraphx.shaped<2x1x1x1xsi8, 1x1x1x1>)"
        " -> !migraphx.shaped<1x2x1x2xsi32, 4x2x2x1> {\n"
        "  %0 = migraphx.quant_convolution %a, %b {dilation = [1, 1], group = 2 : i64,"
        " padding = [0, 0, 0, 1], padding_mode = 0 : i64, stride = [1, 1]}"
        " : <1x2x1x1xsi8, 2x1x1x1>, <2x1x1x1xsi8, 1x1x1x1> -> <1x2x1x2xsi32, 4x2x2x1>\n"
        "  return %0 : !migraphx.shaped<1x2x1x2xsi32, 4x2x2x1>\n}\n"
    )
    assert "tosa.depthwise_conv2d" not in check(text, rtol=0)
