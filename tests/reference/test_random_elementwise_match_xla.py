"""Every elementwise op the interpreter implements agrees with XLA on random operands of every
element type it takes (hypothesis): f16, bf16, f32, f64, signed and unsigned integers of each
width, booleans; values over many magnitudes with signed zeros, infinities, NaN and each
integer type's bounds mixed in; shapes of rank 0 to 3, empty ones included. The fixed-example
tests drew f32 and i32/u8 alone.

Exact ops (integer arithmetic, bit ops, compares, rounding, converts between integers, min/max)
must equal XLA bit for bit, signed zeros included; approximated ones (exp, log, tanh, ...)
within a few steps of their type. XLA's CPU backend flushes subnormal f32, f64 and bf16 values
to zero (the interpreter keeps them, as the spec does), so those are drawn never and compared
as zero. XLA runs in verify's engine process (the spec's NaN semantics)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.reference.hlo.values import TensorType
from convcanon.verify.engines import ENGINES

pytest.importorskip("jax")

PER_OP = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FLOATS = ["f16", "bf16", "f32", "f64"]
SIGNED = ["i8", "i16", "i32", "i64"]
UNSIGNED = ["ui8", "ui16", "ui32", "ui64"]
INTEGERS = SIGNED + UNSIGNED
FLUSHED = {"bf16", "f32", "f64"}  # XLA CPU flushes their subnormals (f16 it computes in f32)

# op -> (arity, element types, exact): exact ops must equal XLA's bits; the others are within
# ULPS steps of their type (engines approximate transcendental functions)
EXACT, APPROXIMATE = True, False
OPS: dict[str, tuple[int, list[str], bool]] = {
    "add": (2, FLOATS + INTEGERS + ["i1"], EXACT),
    "subtract": (2, FLOATS + INTEGERS, EXACT),
    "multiply": (2, FLOATS + INTEGERS + ["i1"], EXACT),
    "divide": (2, FLOATS + INTEGERS, EXACT),
    "remainder": (2, FLOATS + INTEGERS, EXACT),
    "maximum": (2, FLOATS + INTEGERS + ["i1"], EXACT),
    "minimum": (2, FLOATS + INTEGERS + ["i1"], EXACT),
    "power": (2, FLOATS + INTEGERS, APPROXIMATE),
    "atan2": (2, FLOATS, APPROXIMATE),
    "and": (2, INTEGERS + ["i1"], EXACT),
    "or": (2, INTEGERS + ["i1"], EXACT),
    "xor": (2, INTEGERS + ["i1"], EXACT),
    "shift_left": (2, INTEGERS, EXACT),
    "shift_right_logical": (2, INTEGERS, EXACT),
    "shift_right_arithmetic": (2, INTEGERS, EXACT),
    "negate": (1, FLOATS + INTEGERS, EXACT),
    "abs": (1, FLOATS + SIGNED, EXACT),
    "sign": (1, FLOATS + SIGNED, EXACT),
    "not": (1, INTEGERS + ["i1"], EXACT),
    "popcnt": (1, INTEGERS, EXACT),
    "count_leading_zeros": (1, INTEGERS, EXACT),
    "floor": (1, FLOATS, EXACT),
    "ceil": (1, FLOATS, EXACT),
    "round_nearest_afz": (1, FLOATS, EXACT),
    "round_nearest_even": (1, FLOATS, EXACT),
    "is_finite": (1, FLOATS, EXACT),
    "sqrt": (1, FLOATS, APPROXIMATE),
    "rsqrt": (1, FLOATS, APPROXIMATE),
    "cbrt": (1, FLOATS, APPROXIMATE),
    "exponential": (1, FLOATS, APPROXIMATE),
    "exponential_minus_one": (1, FLOATS, APPROXIMATE),
    "log": (1, FLOATS, APPROXIMATE),
    "log_plus_one": (1, FLOATS, APPROXIMATE),
    "logistic": (1, FLOATS, APPROXIMATE),
    "tanh": (1, FLOATS, APPROXIMATE),
    "sine": (1, FLOATS, APPROXIMATE),
    "cosine": (1, FLOATS, APPROXIMATE),
    "tan": (1, FLOATS, APPROXIMATE),
}
ULPS = 8


def _dtype(element: str) -> np.dtype:
    return TensorType((), element).dtype


def _type(element: str, shape: tuple[int, ...]) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{element}>"


def _values(rng: np.random.Generator, element: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of `element`: floats over magnitudes 1e-3..1e4 (around 1 too, where
    rounding ties sit) with specials mixed in; integers over the whole type with its edges;
    fair booleans. No subnormal a flushing engine would read as zero."""
    dtype = _dtype(element)
    if element == "i1":
        return rng.random(shape) < 0.5
    if element in INTEGERS:
        info = np.iinfo(dtype)
        full = rng.integers(int(info.min), int(info.max), shape, dtype=dtype, endpoint=True)
        edges = np.array([info.min, info.max, 0, 1, 2, 3, info.max - 1], dtype=dtype)
        if info.min < 0:
            edges = np.concatenate([edges, np.array([-1, -2, info.min + 1], dtype=dtype)])
        small = rng.integers(-3, 65, shape).astype(dtype)  # shift amounts, small divisors
        pick = rng.integers(0, 3, shape)
        return np.where(pick == 0, full, np.where(pick == 1, small, rng.choice(edges, shape)))
    magnitude = 10.0 ** rng.uniform(-3, 4, shape)
    halves = np.round(rng.uniform(-8, 8, shape) * 2) / 2  # ties for the rounding ops
    wide = np.where(rng.random(shape) < 0.2, halves, rng.standard_normal(shape) * magnitude)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5])
    wide = np.where(rng.random(shape) < 0.15, rng.choice(specials, shape), wide)
    with np.errstate(all="ignore"):
        values = wide.astype(dtype)
    return _flush(values, element)


def _flush(values: np.ndarray, element: str) -> np.ndarray:
    """Subnormals of a type XLA flushes as the signed zero it reads them as."""
    if element not in FLUSHED or values.dtype.kind == "b":
        return values
    wide = values.astype(np.float64)
    tiny = float(ml_dtypes.finfo(values.dtype).smallest_normal)
    flushed = np.where((wide != 0) & (np.abs(wide) < tiny), np.copysign(0.0, wide), wide)
    return flushed.astype(values.dtype)


def _module(op: str, arity: int, element: str, result: str, shape: tuple[int, ...]) -> str:
    t, r = _type(element, shape), _type(result, shape)
    args = ", ".join(f"%a{i}: {t}" for i in range(arity))
    operands = ", ".join(f"%a{i}" for i in range(arity))
    signature = f"({', '.join([t] * arity)}) -> {r}"
    return (
        f"func.func @main({args}) -> {r} {{\n"
        f'  %0 = "stablehlo.{op}"({operands}) : {signature}\n'
        f"  return %0 : {r}\n}}\n"
    )


def assert_same_as_xla(ours: np.ndarray, xla: np.ndarray, element: str, exact: bool, what: str):
    """Equal element for element (NaN where XLA has NaN, signed zeros alike), or for an
    approximate op within ULPS steps of the type at XLA's value."""
    assert ours.dtype == xla.dtype and ours.shape == xla.shape, (what, ours.dtype, xla.dtype)
    if ours.dtype.kind in "biu":
        bad = ours != xla
    else:
        mine, theirs = _flush(ours, element), _flush(xla, element)
        a, b = mine.astype(np.float64), theirs.astype(np.float64)
        same = (a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b))
        if not exact:
            eps = float(ml_dtypes.finfo(ours.dtype).eps)
            tiny = float(ml_dtypes.finfo(ours.dtype).smallest_normal)
            with np.errstate(all="ignore"):
                near = np.abs(a - b) <= ULPS * eps * np.maximum(np.abs(b), tiny)
            same |= near & np.isfinite(a) & np.isfinite(b)
        bad = ~same
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} differ; first at {list(where)}: "
            f"ours {ours[where]!r}, XLA {xla[where]!r}"
        )


def run_both(text: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ours = ENGINES["reference"](text, "case.mlir", "main", inputs)
    return ours, ENGINES["xla"](text, "case.mlir", "main", inputs)


@st.composite
def shapes(draw: st.DrawFn, max_rank: int = 3) -> tuple[int, ...]:
    rank = draw(st.integers(0, max_rank))
    return tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))


@pytest.mark.parametrize("op", sorted(OPS))
@PER_OP
@given(data=st.data())
def test_random_elementwise_op_matches_xla(op: str, data: st.DataObject) -> None:
    arity, elements, exact = OPS[op]
    element = data.draw(st.sampled_from(elements), label="element")
    shape = data.draw(shapes(), label="shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    result = "i1" if op == "is_finite" else element
    inputs = [_values(rng, element, shape) for _ in range(arity)]
    ours, xla = run_both(_module(op, arity, element, result, shape), inputs)
    assert_same_as_xla(ours[0], xla[0], element, exact, f"{op} on {_type(element, shape)}")


@PROPERTY
@given(data=st.data())
def test_random_compare_matches_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(FLOATS + INTEGERS + ["i1"]), label="element")
    direction = data.draw(st.sampled_from(["EQ", "NE", "LT", "LE", "GT", "GE"]))
    if element in FLOATS:
        kind = data.draw(st.sampled_from(["FLOAT", "TOTALORDER"]))
    else:
        kind = "UNSIGNED" if element in UNSIGNED or element == "i1" else "SIGNED"
    shape = data.draw(shapes(), label="shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    t, r = _type(element, shape), _type("i1", shape)
    text = (
        f"func.func @main(%a: {t}, %b: {t}) -> {r} {{\n"
        f"  %0 = stablehlo.compare {direction}, %a, %b, {kind} : ({t}, {t}) -> {r}\n"
        f"  return %0 : {r}\n}}\n"
    )
    a = _values(rng, element, shape)
    b = np.where(rng.random(shape) < 0.3, a, _values(rng, element, shape)).astype(a.dtype)
    ours, xla = run_both(text, [a, b])
    assert_same_as_xla(ours[0], xla[0], "i1", EXACT, f"compare {direction} {kind} on {t}")


@PROPERTY
@given(data=st.data())
def test_random_convert_matches_xla(data: st.DataObject) -> None:
    """Between any two of the types: rounding, saturating float -> int, wrapping int -> int."""
    source = data.draw(st.sampled_from(FLOATS + INTEGERS + ["i1"]), label="source")
    target = data.draw(st.sampled_from(FLOATS + INTEGERS + ["i1"]), label="target")
    shape = data.draw(shapes(), label="shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    t, r = _type(source, shape), _type(target, shape)
    text = (
        f"func.func @main(%a: {t}) -> {r} {{\n"
        f"  %0 = stablehlo.convert %a : ({t}) -> {r}\n"
        f"  return %0 : {r}\n}}\n"
    )
    ours, xla = run_both(text, [_values(rng, source, shape)])
    assert_same_as_xla(ours[0], xla[0], target, EXACT, f"convert {t} -> {r}")


@PROPERTY
@given(data=st.data())
def test_random_select_and_clamp_match_xla(data: st.DataObject) -> None:
    """select with a tensor or scalar predicate; clamp with scalar or tensor bounds."""
    element = data.draw(st.sampled_from(FLOATS + INTEGERS), label="element")
    shape = data.draw(shapes(), label="shape")
    scalar_pred, scalar_bounds = data.draw(st.booleans()), data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    t = _type(element, shape)
    p = _type("i1", () if scalar_pred else shape)
    bound = _type(element, () if scalar_bounds else shape)
    text = (
        f"func.func @main(%p: {p}, %a: {t}, %b: {t}, %lo: {bound}, %hi: {bound}) -> ({t}, {t}) {{\n"
        f"  %0 = stablehlo.select %p, %a, %b : {p}, {t}\n"
        f"  %1 = stablehlo.clamp %lo, %a, %hi : ({bound}, {t}, {bound}) -> {t}\n"
        f"  return %0, %1 : {t}, {t}\n}}\n"
    )
    bound_shape = () if scalar_bounds else shape
    inputs = [
        _values(rng, "i1", () if scalar_pred else shape),
        _values(rng, element, shape),
        _values(rng, element, shape),
        _values(rng, element, bound_shape),
        _values(rng, element, bound_shape),
    ]
    ours, xla = run_both(text, inputs)
    for mine, theirs, what in zip(ours, xla, ("select", "clamp"), strict=True):
        assert_same_as_xla(mine, theirs, element, EXACT, f"{what} on {t}")


@pytest.mark.parametrize("element", FLOATS)
@pytest.mark.parametrize("op", ["maximum", "minimum", "sign"])
def test_signed_zeros_order_like_xla(op: str, element: str) -> None:
    """Found by the property test: numpy's maximum and minimum return either zero of a pair
    and its sign(-0) is +0; XLA (and IEEE) order -0 below +0 and keep sign(-0) = -0."""
    arity = OPS[op][0]
    zeros = np.array([0.0, -0.0, 0.0, -0.0]).astype(_dtype(element))
    inputs = [zeros, zeros[[1, 0, 3, 2]].copy(), zeros[[0, 0, 3, 3]].copy()][:arity]
    ours, xla = run_both(_module(op, arity, element, element, (4,)), inputs)
    assert_same_as_xla(ours[0], xla[0], element, EXACT, f"{op} of signed zeros")


@pytest.mark.parametrize("element", FLOATS)
def test_clamp_orders_signed_zeros_like_xla(element: str) -> None:
    """Found by a random draw (f16, seed 158): clamp took numpy's maximum and minimum, which
    return either zero of a pair, so clamp(+0, -0, hi) gave -0 where XLA gives +0."""
    signs = np.array([0.0, -0.0]).astype(_dtype(element))
    lo, x, hi = (a.reshape(-1).copy() for a in np.meshgrid(signs, signs, signs, indexing="ij"))
    t = _type(element, (8,))
    text = (
        f"func.func @main(%lo: {t}, %x: {t}, %hi: {t}) -> {t} {{\n"
        f"  %0 = stablehlo.clamp %lo, %x, %hi : {t}\n  return %0 : {t}\n}}\n"
    )
    ours, xla = run_both(text, [lo, x, hi])
    assert_same_as_xla(ours[0], xla[0], element, EXACT, f"clamp of signed zeros on {t}")


@pytest.mark.parametrize("element", INTEGERS)
def test_integer_power_takes_the_exponent_as_xla_does(element: str) -> None:
    """Found by the property test: XLA (and IREE's lowering) square six times, so 3**64 is 1,
    and an exponent with its top bit set is negative in an unsigned type too (255**129 in ui8
    is 255, as (-1)**-127); numpy raised by the whole exponent."""
    dtype = _dtype(element)
    top = np.iinfo(dtype).max if element in UNSIGNED else -1
    base = np.array([3, 3, 3, 2, top, top, 1, 0, 5, 7], dtype=dtype)
    high = np.array(np.iinfo(dtype).max, dtype=dtype)  # 127...: top bit clear
    exponent = np.array([64, 65, 63, 8, 1, 2, 3, 4, 100, 127], dtype=dtype)
    exponent[[4, 5, 6, 7]] = ~exponent[[4, 5, 6, 7]]  # top bit set: "negative"
    exponent[9] = high
    ours, xla = run_both(_module("power", 2, element, element, (10,)), [base, exponent])
    assert_same_as_xla(ours[0], xla[0], element, EXACT, f"power on {element}")


COMPLEX_OPS = {
    "add": 2,
    "subtract": 2,
    "multiply": 2,
    "divide": 2,
    "power": 2,
    "negate": 1,
    "sign": 1,
    "exponential": 1,
    "exponential_minus_one": 1,
    "log": 1,
    "log_plus_one": 1,
    "logistic": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "tanh": 1,
    "sine": 1,
    "cosine": 1,
    "tan": 1,
}
COMPLEX_ULPS = 64


def _complex_values(rng: np.random.Generator, element: str, shape: tuple[int, ...]):
    """Finite complex values, parts over magnitudes 1e-12..30 (exp and cosh stay finite: at
    overflow XLA's formulas give NaN where C99's give signed zeros), some on an axis."""
    parts = []
    for _ in range(2):
        wide = rng.standard_normal(shape) * 10.0 ** rng.uniform(-12, 1.5, shape)
        parts.append(np.where(rng.random(shape) < 0.15, 0.0, wide))
    dtype = np.complex64 if element == "complex<f32>" else np.complex128
    return (parts[0] + 1j * parts[1]).astype(dtype)


@pytest.mark.parametrize("op", sorted(COMPLEX_OPS))
@PER_OP
@given(data=st.data())
def test_random_complex_op_matches_xla(op: str, data: st.DataObject) -> None:
    """Within COMPLEX_ULPS steps of 1 + |result|, scaled by 1 + the largest operand's modulus
    (a condition number's stand-in: exp(z) moves by |z| steps when z is rounded). Steps of 1
    too: XLA's complex formulas lose to cancellation what numpy's keep (its sin(2e-8 j) in
    complex<f64> is off by 1e-9 of itself), so smaller differences say which engine is more
    precise, not which is wrong. complex<f32> results are judged against XLA's complex<f64>
    value: ours may be off by as much as XLA's complex<f32> plus that."""
    arity = COMPLEX_OPS[op]
    element = data.draw(st.sampled_from(["complex<f32>", "complex<f64>"]), label="element")
    shape = data.draw(shapes(), label="shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    inputs = [_complex_values(rng, element, shape) for _ in range(arity)]
    if op == "power":  # 0 ** w is 0 (numpy, C++'s std::pow, StableHLO's interpreter); XLA: NaN
        inputs[0] = np.where(inputs[0] == 0, 1, inputs[0]).astype(inputs[0].dtype)
    ours, xla = (
        r[0].astype(np.complex128)
        for r in run_both(_module(op, arity, element, element, shape), inputs)
    )
    wide = _module(op, arity, "complex<f64>", "complex<f64>", shape)
    truth = ENGINES["xla"](wide, "case.mlir", "main", [x.astype(np.complex128) for x in inputs])[0]
    eps = float(np.finfo(np.float32 if element == "complex<f32>" else np.float64).eps)
    largest = np.max([np.abs(x.astype(np.complex128)) for x in inputs], axis=0)
    with np.errstate(all="ignore"):
        allowed = COMPLEX_ULPS * eps * (1 + np.abs(truth)) * (1 + largest) + np.abs(xla - truth)
        bad = ~(
            (np.abs(ours - truth) <= allowed) | (ours == truth) | (np.isnan(ours) & np.isnan(xla))
        )
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{op} on {element}: {int(bad.sum())} of {bad.size} differ; first at {list(where)}: "
            f"inputs {[x[where] for x in inputs]}, ours {ours[where]}, XLA {xla[where]}, "
            f"XLA in complex<f64> {truth[where]}"
        )


@pytest.mark.parametrize("element", ["complex<f32>", "complex<f64>"])
def test_complex_log1p_expm1_and_logistic_match_xla_at_their_edges(element: str) -> None:
    """Found by the property test: numpy's complex log1p formed 1 + x (the real part of
    log1p(1e-20 + 1e-10j) was 0, not 1.5e-20), its expm1 of 7739.6 + 0j was inf + NaN j and
    1 / (1 + exp(-x)) NaN where exp overflows; XLA gives 1.5e-20, inf + 0j and 0."""
    dtype = np.complex64 if element == "complex<f32>" else np.complex128
    x = np.array([1e-20 + 1e-10j, -0.0024026372j, 7739.6 + 0j, -2223.5 - 0.0082j], dtype)
    for op in ("log_plus_one", "exponential_minus_one", "logistic"):
        ours, xla = run_both(_module(op, 1, element, element, (4,)), [x])
        part = "f32" if element == "complex<f32>" else "f64"
        for component in (np.real, np.imag):
            mine, theirs = (np.ascontiguousarray(component(v)) for v in (ours[0], xla[0]))
            assert_same_as_xla(mine, theirs, part, APPROXIMATE, f"{op} {component.__name__}")
