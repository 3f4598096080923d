"""The reference semantics of the quantization ops, checked against independent definitions:
MIGraphX's scatter loop for backwards_data_convolution (and JAX's conv_transpose), JAX for
quant_convolution, Python's integer arithmetic and `round` (half to even) for the rest. Every
program reads its arguments from flat buffers through random strides."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.migraphx import layout
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

# numpy warns of nothing in the reference, whatever the values (no RuntimeWarning of a cast)
pytestmark = pytest.mark.filterwarnings("error")

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _jax_config_restored():
    """These tests turn x64 on; put JAX's configuration back so no other test sees it."""
    import jax

    before = jax.config.values["jax_enable_x64"]
    yield
    jax.config.update("jax_enable_x64", before)


def _shaped(lens: Sequence[int], strides: Sequence[int], et: str) -> str:
    return f"<{'x'.join(map(str, lens))}x{et}, {'x'.join(map(str, strides))}>"


def _arr(values: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


@st.composite
def strides_for(draw: st.DrawFn, lens: Sequence[int]) -> tuple[int, ...]:
    """A permuted layout of `lens`, with a gap after some dims."""
    order = draw(st.permutations(list(range(len(lens)))))
    strides = [0] * len(lens)
    running = 1
    for d in reversed(order):
        strides[d] = running
        running *= lens[d] + (draw(st.sampled_from([0, 0, 1])) if lens[d] > 1 else 0)
    return tuple(strides)


def run_op(
    op: str,
    args: Sequence[tuple[np.ndarray, Sequence[int], str]],
    out: tuple[Sequence[int], str],
    attrs: str = "",
) -> np.ndarray:
    """Run `%r = migraphx.<op>` on logical values stored at the given strides; the logical
    result (read back from its standard-layout flat buffer)."""
    names = [f"%a{k}" for k in range(len(args))]
    types = [_shaped(v.shape, s, et) for v, s, et in args]
    out_lens, out_et = out
    out_strides = layout.standard_strides(out_lens)
    out_type = _shaped(out_lens, out_strides, out_et)
    params = ", ".join(f"{n}: !migraphx.shaped{t}" for n, t in zip(names, types, strict=True))
    attr_text = f" {{{attrs}}}" if attrs else ""
    text = (
        f"func.func @main({params}) -> !migraphx.shaped{out_type} {{\n"
        f"  %r = migraphx.{op} {', '.join(names)}{attr_text} : {', '.join(types)} -> {out_type}\n"
        f"  return %r : !migraphx.shaped{out_type}\n}}\n"
    )
    module = parse_file_text(text, "<test>")
    flat = [layout.write_buffer(v, v.shape, s) for v, s, _ in args]
    (result,) = Interpreter(module, "<test>", {}).run("main", flat)
    return layout.read_buffer(result, out_lens, out_strides)


# -- backwards_data_convolution -----------------------------------------------------------------


def scatter_backwards(
    x: np.ndarray,
    w: np.ndarray,
    stride: Sequence[int],
    dilation: Sequence[int],
    begins: Sequence[int],
    out_spatial: Sequence[int],
    group: int,
) -> np.ndarray:
    """MIGraphX's definition, a loop over input positions and kernel taps: each x[n, k, i]
    times w[k, c, r] lands on y[n, g*C/g + c, i*s - pb + r*d] when inside the output."""
    n, k_in = x.shape[:2]
    c_per_group = w.shape[1]
    k_per_group = k_in // group
    y = np.zeros((n, c_per_group * group, *out_spatial))
    for i in itertools.product(*(range(e) for e in x.shape[2:])):
        for r in itertools.product(*(range(e) for e in w.shape[2:])):
            taps = zip(i, stride, begins, r, dilation, strict=True)
            o = [a * s - b + t * d for a, s, b, t, d in taps]
            if not all(0 <= v < e for v, e in zip(o, out_spatial, strict=True)):
                continue
            for g in range(group):
                ks = slice(g * k_per_group, (g + 1) * k_per_group)
                cs = slice(g * c_per_group, (g + 1) * c_per_group)
                y[(slice(None), cs, *o)] += x[(slice(None), ks, *i)] @ w[(ks, slice(None), *r)]
    return y


@st.composite
def backwards_cases(draw: st.DrawFn) -> dict:
    nsp = draw(st.sampled_from([1, 2, 2, 3]))
    group = draw(st.sampled_from([1, 1, 2, 3]))
    k_in, c_out = group * draw(st.integers(1, 2)), draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dilation = [draw(st.integers(1, 2)) for _ in range(nsp)]
    spatial = [draw(st.integers(1, 4 if nsp == 3 else 5)) for _ in range(nsp)]
    begins, ends, out = [], [], []
    for n, k, s, d in zip(spatial, kernel, stride, dilation, strict=True):
        full = s * (n - 1) + d * (k - 1) + 1
        b = draw(st.integers(0, min(3, full - 1)))
        e = draw(st.integers(0, min(3, full - 1 - b)))
        begins.append(b)
        ends.append(e)
        out.append(full - b - e)
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    x = rng.uniform(-1, 1, (draw(st.integers(1, 2)), k_in, *spatial))
    w = rng.uniform(-1, 1, (k_in, c_out, *kernel))
    return {
        "x": x,
        "w": w,
        "x_strides": draw(strides_for(x.shape)),
        "w_strides": draw(strides_for(w.shape)),
        "stride": stride,
        "dilation": dilation,
        "begins": begins,
        "ends": ends,
        "out": (x.shape[0], c_out * group, *out),
        "group": group,
    }


def _backwards(case: dict, et: str = "f64") -> np.ndarray:
    attrs = (
        f"dilation = {_arr(case['dilation'])}, group = {case['group']} : i64, "
        f"padding = {_arr(case['begins'] + case['ends'])}, padding_mode = 0 : i64, "
        f"stride = {_arr(case['stride'])}"
    )
    return run_op(
        "backwards_data_convolution",
        [(case["x"], case["x_strides"], et), (case["w"], case["w_strides"], et)],
        (case["out"], et),
        attrs,
    )


@_SETTINGS
@given(backwards_cases())
def test_backwards_data_convolution_is_migraphx_scatter_loop(case: dict) -> None:
    expected = scatter_backwards(
        case["x"],
        case["w"],
        case["stride"],
        case["dilation"],
        case["begins"],
        case["out"][2:],
        case["group"],
    )
    np.testing.assert_allclose(_backwards(case), expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(backwards_cases())
def test_backwards_data_convolution_matches_jax_conv_transpose(case: dict) -> None:
    """jax.lax.conv_transpose (transpose_kernel: the gradient of a forward conv), groups split."""
    import jax

    jax.config.update("jax_enable_x64", True)  # restored by the module's autouse fixture
    nsp = case["x"].ndim - 2
    spatial = "DHW"[3 - nsp :]
    specs = (f"NC{spatial}", f"OI{spatial}", f"NC{spatial}")
    k_per, c_per = case["x"].shape[1] // case["group"], case["w"].shape[1]
    parts = []
    for g in range(case["group"]):
        xg = case["x"][:, g * k_per : (g + 1) * k_per]
        wg = case["w"][g * k_per : (g + 1) * k_per]
        # the forward conv's kernel is OI (O = our K): conv_transpose with transpose_kernel
        # swaps and flips it; its padding is the forward conv's, written as the gradient's
        full = [d * (k - 1) for k, d in zip(wg.shape[2:], case["dilation"], strict=True)]
        padding = [
            (f - b, f - e) for f, b, e in zip(full, case["begins"], case["ends"], strict=True)
        ]
        parts.append(
            jax.lax.conv_transpose(
                xg,
                wg,
                strides=case["stride"],
                padding=padding,
                rhs_dilation=case["dilation"],
                dimension_numbers=specs,
                transpose_kernel=True,
            )
        )
    expected = np.concatenate([np.asarray(p) for p in parts], axis=1)
    assert c_per * case["group"] == expected.shape[1]
    np.testing.assert_allclose(_backwards(case), expected, rtol=1e-10, atol=1e-10)


# -- quant_convolution and quant_dot ------------------------------------------------------------


@_SETTINGS
@given(st.data())
def test_quant_convolution_is_exact_integer_conv(data: st.DataObject) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)  # restored by the module's autouse fixture
    group = data.draw(st.sampled_from([1, 2]))
    cin, cout = group * data.draw(st.integers(1, 3)), group * data.draw(st.integers(1, 2))
    kernel = [data.draw(st.integers(1, 3)) for _ in range(2)]
    spatial = [data.draw(st.integers(k, 6)) for k in kernel]
    stride = [data.draw(st.integers(1, 2)) for _ in range(2)]
    pads = [data.draw(st.integers(0, 1)) for _ in range(4)]
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x = rng.integers(-128, 128, (1, cin, *spatial)).astype(np.int8)
    w = rng.integers(-128, 128, (cout, cin // group, *kernel)).astype(np.int8)
    out_spatial = [
        (n + pads[i] + pads[i + 2] - k) // s + 1
        for i, (n, k, s) in enumerate(zip(spatial, kernel, stride, strict=True))
    ]
    attrs = (
        f"dilation = [1, 1], group = {group} : i64, padding = {_arr(pads)}, "
        f"padding_mode = 0 : i64, stride = {_arr(stride)}"
    )
    got = run_op(
        "quant_convolution",
        [(x, data.draw(strides_for(x.shape)), "si8"), (w, data.draw(strides_for(w.shape)), "si8")],
        ((1, cout, *out_spatial), "si32"),
        attrs,
    )
    expected = jax.lax.conv_general_dilated(
        x.astype(np.float64),
        w.astype(np.float64),
        window_strides=stride,
        padding=[(pads[0], pads[2]), (pads[1], pads[3])],
        feature_group_count=group,
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.asarray(expected).astype(np.int64))


def test_quant_dot_wraps_to_32_bits_like_integer_hardware() -> None:
    """Exact int8 products summed in 32 bits: a long enough row of 127 * 127 wraps."""
    k = 140_000  # 140000 * 16129 > 2^31
    a = np.full((1, k), 127, np.int8)
    b = np.full((k, 1), 127, np.int8)
    got = run_op("quant_dot", [(a, (k, 1), "si8"), (b, (1, 1), "si8")], ((1, 1), "si32"))
    exact = k * 127 * 127
    wrapped = (exact + 2**31) % 2**32 - 2**31
    assert got[0, 0] == wrapped != exact


@_SETTINGS
@given(st.data())
def test_quant_dot_is_exact_integer_matmul(data: st.DataObject) -> None:
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = rng.integers(-128, 128, (2, m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (2, k, n)).astype(np.int8)
    got = run_op(
        "quant_dot",
        [(a, data.draw(strides_for(a.shape)), "si8"), (b, data.draw(strides_for(b.shape)), "si8")],
        ((2, m, n), "si32"),
    )
    expected = [
        [[sum(int(a[z, i, t]) * int(b[z, t, j]) for t in range(k)) for j in range(n)]
         for i in range(m)]
        for z in range(2)
    ]  # fmt: skip
    np.testing.assert_array_equal(got, np.array(expected, np.int64))


# -- quantizelinear / dequantizelinear ----------------------------------------------------------

_NUMPY = {
    "si8": np.int8,
    "ui8": np.uint8,
    "si16": np.int16,
    "si32": np.int32,
    "ui32": np.uint32,
}
_RANGES = {et: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for et, t in _NUMPY.items()}


@_SETTINGS
@given(st.data())
def test_quantizelinear_rounds_half_to_even_and_saturates(data: st.DataObject) -> None:
    """Any integer result with a zero point of any integer type (an si32 one with an si8
    result, as rocMLIR sends it): the sum is exact, then saturated."""
    et = data.draw(st.sampled_from(sorted(_RANGES)))
    zero_et = data.draw(st.sampled_from([et, *sorted(_RANGES)]))
    lens = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5)))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    # halves of small integers (exact ties), then values far out of range, even of 32 bits
    spread = rng.choice([1.0, 0.5, 1e3, 1e7], lens)
    x = (rng.integers(-600, 600, lens) / 2.0 * spread).astype(np.float32)
    scale = rng.choice([0.5, 1.0, 2.0, 0.1, 3.0], lens).astype(np.float32)
    low, high = _RANGES[et]
    zero_low, zero_high = _RANGES[zero_et]
    zp = rng.integers(zero_low, zero_high, lens, endpoint=True).astype(_NUMPY[zero_et])
    got = run_op(
        "quantizelinear",
        [
            (x, data.draw(strides_for(lens)), "f32"),
            (scale, data.draw(strides_for(lens)), "f32"),
            (zp, data.draw(strides_for(lens)), zero_et),
        ],
        (lens, et),
    )
    expected = np.empty(lens, np.int64)
    for idx in np.ndindex(*lens):
        quotient = float(np.float32(x[idx]) / np.float32(scale[idx]))  # f32 division
        expected[idx] = min(high, max(low, round(quotient) + int(zp[idx])))  # round: half even
    assert got.dtype == _NUMPY[et]
    np.testing.assert_array_equal(got.astype(np.int64), expected)


def test_quantizelinear_ties_go_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], np.float32)
    got = run_op(
        "quantizelinear", [(x, (1,), "f32"), (np.ones(1, np.float32), (0,), "f32")], ((6,), "si8")
    )
    np.testing.assert_array_equal(got, [0, 2, 2, 0, -2, -2])


@_SETTINGS
@given(st.data())
def test_dequantizelinear_is_difference_times_scale(data: st.DataObject) -> None:
    et = data.draw(st.sampled_from(["si8", "ui8", "si32"]))
    lens = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5)))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    dtype = {"si8": np.int8, "ui8": np.uint8, "si32": np.int32}[et]
    info = np.iinfo(dtype)
    low, high = max(int(info.min), -5000), min(int(info.max), 5000)
    x = rng.integers(low, high + 1, lens).astype(dtype)
    zp = rng.integers(low, high + 1, lens).astype(dtype)
    scale = rng.uniform(0.01, 2, lens).astype(np.float32)
    got = run_op(
        "dequantizelinear",
        [
            (x, data.draw(strides_for(lens)), et),
            (scale, data.draw(strides_for(lens)), "f32"),
            (zp, data.draw(strides_for(lens)), et),
        ],
        (lens, "f32"),
    )
    expected = [
        [(int(x[i, j]) - int(zp[i, j])) * float(scale[i, j]) for j in range(lens[1])]
        for i in range(lens[0])
    ]
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-6)


_DEQUANT_TYPES = {
    "si8": np.int8,
    "ui8": np.uint8,
    "si16": np.int16,
    "ui16": np.uint16,
    "si32": np.int32,
    "ui32": np.uint32,
    "f32": np.float32,
    "f16": np.float16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
}


def _draw_values(rng: np.random.Generator, et: str, lens: tuple[int, ...]) -> np.ndarray:
    dtype = np.dtype(_DEQUANT_TYPES[et])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(int(info.min), int(info.max), lens, endpoint=True).astype(dtype)
    return rng.uniform(-200, 200, lens).astype(dtype)


@_SETTINGS
@given(st.data())
def test_dequantizelinear_of_mixed_types_rounds_the_exact_difference_once(
    data: st.DataObject,
) -> None:
    """Any input and zero-point types: (x - z) exactly (a Fraction), rounded once to f32 (f64
    when a float meets a 32-bit integer), times the scale there, rounded to the result."""
    names = sorted(_DEQUANT_TYPES)
    in_et, zero_et = data.draw(st.sampled_from(names)), data.draw(st.sampled_from(names))
    out_et = data.draw(st.sampled_from(["f32", "f16"]))
    lens = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5)))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    x, zp = _draw_values(rng, in_et, lens), _draw_values(rng, zero_et, lens)
    scale = rng.uniform(0.01, 2, lens).astype(_DEQUANT_TYPES[out_et])
    got = run_op(
        "dequantizelinear",
        [
            (x, data.draw(strides_for(lens)), in_et),
            (scale, data.draw(strides_for(lens)), out_et),
            (zp, data.draw(strides_for(lens)), zero_et),
        ],
        (lens, out_et),
    )
    kinds = {np.dtype(_DEQUANT_TYPES[t]).kind for t in (in_et, zero_et)}
    wide_int = any(t.endswith("32") and t[0] in "su" for t in (in_et, zero_et))
    compute = np.float64 if wide_int and kinds - {"i", "u"} else np.float32

    def exact(values: np.ndarray, idx: tuple[int, ...]) -> Fraction:
        if values.dtype.kind in "iu":
            return Fraction(int(values[idx]))
        return Fraction(float(values[idx]))

    expected = np.empty(lens, _DEQUANT_TYPES[out_et])
    for idx in np.ndindex(*lens):
        difference = compute(float(exact(x, idx) - exact(zp, idx)))  # float(): rounded once
        with np.errstate(over="ignore"):
            expected[idx] = difference * compute(scale[idx])
    np.testing.assert_array_equal(got, expected)


# -- unpack -------------------------------------------------------------------------------------


@_SETTINGS
@given(st.data())
def test_unpack_puts_the_low_nibble_first(data: st.DataObject) -> None:
    lens = tuple(data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(1, 3))))
    axis = data.draw(st.integers(-len(lens), len(lens) - 1))
    out_et = data.draw(st.sampled_from(["ui8", "si8", "si4", "ui4"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    packed = rng.integers(0, 256, lens).astype(np.uint8)
    a = axis % len(lens)
    out = tuple(2 * n if d == a else n for d, n in enumerate(lens))
    got = run_op(
        "unpack",
        [(packed, data.draw(strides_for(lens)), "ui8")],
        (out, out_et),
        f"axis = {axis} : i64",
    )
    for idx in np.ndindex(*lens):
        byte = int(packed[idx])
        for half, nibble in enumerate((byte & 0xF, byte >> 4)):
            if out_et == "si4" and nibble >= 8:
                nibble -= 16
            where = tuple(2 * v + half if d == a else v for d, v in enumerate(idx))
            assert int(got[where].astype(np.float32)) == nibble, (idx, half, byte)
    assert math.prod(got.shape) == 2 * math.prod(lens)
