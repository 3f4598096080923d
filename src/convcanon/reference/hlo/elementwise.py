"""Elementwise ops: arithmetic, comparisons, conversions, and the memory plan each makes (read
from types alone, so a module can be refused before its inputs exist)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir

from convcanon.reference.hlo.attributes import enum_word, int_attr
from convcanon.reference.hlo.machine import Handler, Machine
from convcanon.reference.hlo.values import TensorType
from convcanon.reference.kernels import budget, precision


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C-style division truncating toward zero (numpy floors)."""
    if a.dtype.kind == "b":
        return a
    if a.dtype.kind not in "iu":
        return np.divide(a, b)
    safe = np.where(b == 0, 1, b)
    q = precision.truncating_divide(a, safe)
    return np.where(b == 0, np.array(-1).astype(a.dtype), q)


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, a, np.fmod(a, safe))
    budget.spend("its long divisions", STEPS_PER_DIVISION_BIT * _division_bits(a, b))
    return np.fmod(a, b)


_EXPONENT_CHUNK = 1 << 20  # elements whose exponents are compared at once
STEPS_PER_DIVISION_BIT = 2  # 0.7 ns a bit (1,991 bits in 1.44 us, 331 in 0.14 us)


def _division_bits(a: np.ndarray, b: np.ndarray) -> int:
    """The bits of the long division C's `fmod` does: one per binary digit `a`'s exponent is
    above `b`'s (`1e300 % 3e-300`, 2,000 bits, takes 1.4 us an element; `7.0 % 3.0`, none,
    7 ns). Counted in chunks, so no temporary as large as `a`."""
    a, b = np.broadcast_arrays(a, b)
    bits = 0
    for start in range(0, a.size, _EXPONENT_CHUNK):
        above = np.frexp(a.flat[start : start + _EXPONENT_CHUNK])[1].astype(np.int64)
        above -= np.frexp(b.flat[start : start + _EXPONENT_CHUNK])[1]
        bits += int(np.maximum(above, 0).sum())
    return bits


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.add(a, b)


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_and(a, b) if a.dtype == np.bool_ else np.multiply(a, b)


def _subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_xor(a, b) if a.dtype == np.bool_ else np.subtract(a, b)


def _shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    return np.where((b < 0) | (b >= bits), 0, np.left_shift(a, np.clip(b, 0, bits - 1)))


def _shift_right_logical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    unsigned = a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "i" else a
    shifted = np.right_shift(unsigned, np.clip(b, 0, bits - 1).astype(unsigned.dtype))
    shifted = np.where((b < 0) | (b >= bits), 0, shifted).astype(unsigned.dtype)
    return shifted.view(a.dtype) if a.dtype.kind == "i" else shifted


def _shift_right_arithmetic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sign fill from the top bit, also for unsigned types (as XLA does)."""
    bits = a.dtype.itemsize * 8
    signed = np.dtype(f"i{a.dtype.itemsize}")
    amount = np.where((b < 0) | (b >= bits), bits - 1, b)  # out of range: sign fill
    shifted = np.right_shift(np.asarray(a, order="C").view(signed), amount.astype(signed))
    return shifted.view(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integers as XLA and IREE raise them: six squarings, so only the exponent's low 6 bits
    count (3**64 is 1), and an exponent whose top bit is set (negative, also in an unsigned
    type) gives 1 for a base of 1, +-1 for a base of all ones (-1), else 0."""
    if a.dtype.kind not in "iu":
        return np.power(a, b)
    signed = np.dtype(f"i{a.dtype.itemsize}")
    base, exponent = (np.asarray(v, order="C").view(signed) for v in (a, b))
    result = np.power(a, (exponent & 63).astype(a.dtype))
    odd = (exponent & 1) == 1
    reciprocal = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
    return np.where(exponent < 0, reciprocal.astype(signed).view(a.dtype), result)


def _zeros_ordered(a: np.ndarray, b: np.ndarray, picked: np.ndarray, low: bool) -> np.ndarray:
    """`picked` (a max or min of floats) with -0 below +0, as IEEE's maximum and minimum and
    XLA order them: numpy returns either zero of a pair (ml_dtypes' bf16 and fp8 too)."""
    if "float" not in picked.dtype.name:  # float16..64, bfloat16, float8_*; not complex or ints
        return picked
    both = (a == 0) & (b == 0)
    negative = np.signbit(a) | np.signbit(b) if low else np.signbit(a) & np.signbit(b)
    return np.where(both, np.where(negative, -0.0, 0.0).astype(picked.dtype), picked)


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _int_divide,
    "remainder": _remainder,
    "maximum": lambda a, b: _zeros_ordered(a, b, np.maximum(a, b), low=False),
    "minimum": lambda a, b: _zeros_ordered(a, b, np.minimum(a, b), low=True),
    "and": lambda a, b: np.logical_and(a, b) if a.dtype == np.bool_ else np.bitwise_and(a, b),
    "or": lambda a, b: np.logical_or(a, b) if a.dtype == np.bool_ else np.bitwise_or(a, b),
    "xor": lambda a, b: np.logical_xor(a, b) if a.dtype == np.bool_ else np.bitwise_xor(a, b),
    "power": _power,
    "atan2": np.arctan2,
    "shift_left": _shift_left,
    "shift_right_logical": _shift_right_logical,
    "shift_right_arithmetic": _shift_right_arithmetic,
    "complex": lambda a, b: a + 1j * b.astype(np.complex128),
}


def _round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero; `floor(|x| + 0.5)` would round 0.49999997 up in f32."""
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)); a complex exp(-x) that overflows gives 0, as XLA's (numpy's
    1 / (inf + inf j) is NaN)."""
    e = np.exp(-x)
    result = 1 / (1 + e)
    return np.where(np.isinf(e), 0, result).astype(result.dtype) if x.dtype.kind == "c" else result


def _log_plus_one(x: np.ndarray) -> np.ndarray:
    """log(1 + x); complex too without forming 1 + x, whose rounding lost the real part of a
    small x (log1p(1e-20 + 1e-10j) has real part 1.5e-20, numpy gave 0): the real part is
    log|1 + x| = log1p(re (2 + re) + im^2) / 2 where that sum is small."""
    if x.dtype.kind != "c":
        return np.log1p(x)
    re, im = np.real(x), np.imag(x)
    small = np.abs(x) < 0.5
    near = 0.5 * np.log1p(np.where(small, re * (2 + re) + im * im, 0))
    real = np.where(small, near, np.log(np.abs(1 + x)))
    return (real + 1j * np.arctan2(im, 1 + re)).astype(x.dtype)


def _cbrt(x: np.ndarray) -> np.ndarray:
    """The cube root; of a complex x the principal one, |x|^(1/3) at a third of its argument,
    in double precision, as StableHLO's reference interpreter computes it (numpy's cbrt takes
    no complex, and neither XLA nor IREE lowers one)."""
    if x.dtype.kind != "c":
        return np.cbrt(x)
    wide = x.astype(np.complex128)
    root = np.abs(wide) ** (1 / 3) * np.exp(1j * np.angle(wide) / 3)
    return root.astype(x.dtype)


def _exp_minus_one(x: np.ndarray) -> np.ndarray:
    """exp(x) - 1; a complex x with a zero imaginary part is expm1 of its real part (numpy
    made exp(7739.6 + 0j) - 1 inf + NaN j, XLA inf + 0j)."""
    result = np.expm1(x)
    if x.dtype.kind != "c":
        return result
    re, im = np.real(x), np.imag(x)
    return np.where(im == 0, (np.expm1(re) + 1j * im).astype(x.dtype), result)


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _popcnt(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}"))


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zeros by binary search on the bits (float log2 is wrong above 2^53)."""
    bits = x.dtype.itemsize * 8
    u = np.asarray(x, order="C").view(f"u{x.dtype.itemsize}").astype(np.uint64)
    zeros = np.zeros(u.shape, np.int64)
    width = bits
    while width > 1:
        width //= 2
        high = u >> np.uint64(bits - width)
        empty = high == 0
        zeros += np.where(empty, width, 0)
        u = np.where(empty, u << np.uint64(width), u) & np.uint64((1 << bits) - 1)
    zeros += (u >> np.uint64(bits - 1)) == 0
    return zeros.astype(x.dtype)


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag))
    return np.where(x == 0, x, np.sign(x))  # sign(-0) is -0; numpy's is +0


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "negate": np.negative,
    "abs": np.abs,
    "exponential": np.exp,
    "exponential_minus_one": _exp_minus_one,
    "log": np.log,
    "log_plus_one": _log_plus_one,
    "logistic": _logistic,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": _cbrt,
    "tanh": np.tanh,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "floor": np.floor,
    "ceil": np.ceil,
    "round_nearest_afz": _round_afz,
    "round_nearest_even": np.rint,
    "sign": _sign,
    "not": _not,
    "popcnt": _popcnt,
    "count_leading_zeros": _clz,
    "is_finite": np.isfinite,
    "real": np.real,
    "imag": np.imag,
}


@functools.cache
def _computes_in_f32(dtype: np.dtype) -> bool:
    """Cached: asked at every op a loop runs, and a dtype's name is slow to build."""
    if dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize == 1):
        return True
    return dtype.name == "bfloat16" or dtype.type.__module__.startswith("ml_dtypes")


def compute_dtype(x: np.ndarray) -> np.ndarray:
    """bf16/f8 compute in float32 (ml_dtypes ufunc coverage is partial); the result rounds back."""
    return x.astype(np.float32) if _computes_in_f32(x.dtype) else x


def plan_elementwise(
    name: str, args: Sequence[np.ndarray], temporaries: int = 2, width: int = 4
) -> None:
    """An elementwise op's peak: operands widened for computing (bf16/f8 in f32), then up to
    `temporaries` full-size values as wide as the widest operand (at least `width` bytes)."""
    size = max((a.size for a in args), default=1)
    widened = sum(a.size * 4 for a in args if a.dtype.kind == "V" or a.dtype.itemsize < 2)
    width = max([width, *(a.dtype.itemsize for a in args)])
    budget.plan(name, widened + temporaries * size * width)


TYPE_PLANS: dict[Handler, tuple[int, int]] = {}


def _unary_handler(fn: Callable[[np.ndarray], np.ndarray]) -> Handler:
    def handle(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
        plan_elementwise(op.name, args)
        with np.errstate(all="ignore"):
            return [fn(compute_dtype(args[0]))]

    TYPE_PLANS[handle] = (2, 4)
    return handle


def _binary_handler(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Handler:
    def handle(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
        plan_elementwise(op.name, args, temporaries=3)
        with np.errstate(all="ignore"):
            return [fn(compute_dtype(args[0]), compute_dtype(args[1]))]

    TYPE_PLANS[handle] = (3, 4)
    return handle


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered like IEEE totalOrder: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""
    x = np.asarray(x, order="C")
    signed = x.view(f"i{x.dtype.itemsize}").astype(np.int64)
    magnitude = signed & np.int64((1 << (8 * x.dtype.itemsize - 1)) - 1)
    return np.where(signed < 0, -magnitude - 1, magnitude)


def _compare(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    direction = enum_word(op.attributes["comparison_direction"])
    kind = enum_word(op.attributes["compare_type"]) if "compare_type" in op.attributes else ""
    plan_elementwise(op.name, args, temporaries=3)
    a, b = args
    if kind == "TOTALORDER" and a.dtype.kind in "fV":
        a, b = _total_order_key(a), _total_order_key(b)
    elif kind == "UNSIGNED" and a.dtype.kind == "i":
        a, b = (np.asarray(v, order="C").view(f"u{v.dtype.itemsize}") for v in (a, b))
    elif a.dtype.kind == "c" and direction not in ("EQ", "NE"):
        a, b = np.real(a), np.real(b)
    with np.errstate(all="ignore"):
        return [_COMPARE[direction](compute_dtype(a), compute_dtype(b))]


def _select(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.where(args[0], args[1], args[2])]


def _clamp(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    """min(max(x, lo), hi) with the maximum and minimum of this table: -0 below +0, as XLA."""
    lo, x, hi = args
    return [BINARY["minimum"](BINARY["maximum"](x, lo), hi)]


def _convert(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    x = args[0]
    target = rt[0].dtype
    plan_elementwise(op.name, [x], temporaries=4, width=8)  # float -> int goes through f64
    if x.dtype.kind == "c" and target.kind != "c":
        x = np.real(x)
    if x.dtype.kind in "fV" and target.kind in "iu":
        return [_float_to_int(x, rt[0])]
    if target == np.bool_:
        return [x != 0]
    with np.errstate(all="ignore"):  # a float too big for the narrower type becomes inf
        return [x.astype(target)]


def _float_to_int(x: np.ndarray, result: TensorType) -> np.ndarray:
    """Float to integer as XLA converts: truncated, NaN to 0, saturated at the bounds of the
    declared type (i4 at -8..7, not the byte it is kept in), infinities too. The bound is
    compared as a float, never cast: f64(INT64_MAX) is 2**63, which cast wrapped to INT64_MIN."""
    import ml_dtypes

    target = result.dtype
    info = ml_dtypes.iinfo(result.declared_dtype)
    wide = np.trunc(x.astype(np.float64))
    high, low = wide >= float(info.max), wide <= float(info.min)  # NaN is neither
    inside = np.where(high | low | np.isnan(wide), 0.0, wide).astype(target)
    return np.where(high, target.type(info.max), np.where(low, target.type(info.min), inside))


def _bitcast_convert(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    flat = np.asarray(args[0], order="C").reshape(-1)  # a view to another width needs 1-d
    return [flat.view(rt[0].dtype).reshape(rt[0].shape)]


def _reduce_precision(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    x = args[0]
    wide = compute_dtype(x)
    exponent = int_attr(op, "exponent_bits", 8)
    mantissa = int_attr(op, "mantissa_bits", 23)
    return [precision.reduce_precision(wide, exponent, mantissa)]


TYPE_PLANS[_compare] = (3, 4)


TYPE_PLANS[_convert] = (4, 8)


HANDLERS: dict[str, Handler] = {
    **{name: _unary_handler(fn) for name, fn in _UNARY.items()},
    **{name: _binary_handler(fn) for name, fn in BINARY.items()},
    "compare": _compare,
    "select": _select,
    "clamp": _clamp,
    "convert": _convert,
    "bitcast_convert": _bitcast_convert,
    "reduce_precision": _reduce_precision,
}
