"""Element types: the accumulation type of a contraction and the cast of its result, and kernels
on element bits (reduce_precision, integers narrower than their container)."""

from __future__ import annotations

import numpy as np

from convcanon.reference.kernels import budget


def truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer a / b rounded toward zero, as C divides (numpy floors), exactly at every width;
    `b` holds no zero. A minimum divided by -1 wraps to itself."""
    quotient = np.floor_divide(a, b)
    if a.dtype.kind == "i":
        quotient = quotient + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return quotient


def accumulation_dtype(*dtypes: np.dtype) -> np.dtype:
    """Ints accumulate in int64, floats in at least float32 (f64 stays f64), complex likewise."""
    kinds = {d.kind for d in dtypes}
    if "c" in kinds:
        wide = any(d == np.complex128 or d.itemsize >= 8 and d.kind == "f" for d in dtypes)
        return np.dtype(np.complex128 if wide else np.complex64)
    if kinds & {"f", "V"} or any(d.kind not in "iub" for d in dtypes):
        wide = any(d.itemsize >= 8 for d in dtypes if d.kind == "f")
        return np.dtype(np.float64 if wide else np.float32)
    return np.dtype(np.int64)


def cast_result(x: np.ndarray, dtype: np.dtype | None, acc: np.dtype) -> np.ndarray:
    """Cast an accumulator to the result type (ints wrap modulo 2^bits, bools are `!= 0`)."""
    target = np.dtype(dtype) if dtype is not None else None
    if target is None:
        return x
    if target == np.bool_:
        return x != 0
    if acc.kind == "i" and target.kind in "iu":
        return x.astype(target)  # two's complement wrap-around, as StableHLO specifies
    return x.astype(target)


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """`stablehlo.reduce_precision`: round to nearest even at `mantissa_bits`, then flush
    exponents the narrower format cannot hold to zero or infinity (XLA's bit algorithm)."""
    budget.plan("reduce_precision", 8 * x.nbytes)
    info = np.finfo(x.dtype)
    src_mantissa, width = info.nmant, x.dtype.itemsize * 8
    src_exponent = width - 1 - src_mantissa
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    bits = np.asarray(x, order="C").view(unsigned).copy()
    one = unsigned.type(1)
    if mantissa_bits < src_mantissa:
        shift = unsigned.type(src_mantissa - mantissa_bits)
        last = one << shift
        bias = (last >> one) - one
        lsb = (bits & last) >> shift
        bits = ((bits + lsb + bias) & ~(last - one)).astype(unsigned)
    if exponent_bits < src_exponent:
        sign = one << unsigned.type(width - 1)
        exponent_mask = unsigned.type(((1 << src_exponent) - 1) << src_mantissa)
        bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflow = exponent > unsigned.type((bias + reduced_bias) << src_mantissa)
        underflow = exponent <= unsigned.type((bias - reduced_bias) << src_mantissa)
        signed_zero = bits & sign
        bits = np.where(
            overflow, signed_zero | exponent_mask, np.where(underflow, signed_zero, bits)
        )
    out = bits.astype(unsigned).view(x.dtype)
    return np.where(np.isnan(x), x, out)  # XLA keeps NaN, even with no mantissa bits left


_WRAP_CHUNK = 1 << 16  # elements widened to int64 at a time


def wrap_integer(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """Wrap values held in a wider container to a `bits`-wide integer (i2/i4/ui2/ui4), a chunk
    at a time: every narrow result passes here, outside any kernel's plan, so its int64
    temporaries are bounded, not 8 bytes an element."""
    modulus = 1 << bits
    flat = np.asarray(x, order="C").reshape(-1)
    out = np.empty(flat.size, x.dtype)
    for start in range(0, flat.size, _WRAP_CHUNK):
        wide = flat[start : start + _WRAP_CHUNK].astype(np.int64) % modulus
        if signed:
            wide = np.where(wide >= modulus // 2, wide - modulus, wide)
        out[start : start + wide.size] = wide.astype(x.dtype)
    return out.reshape(x.shape)
