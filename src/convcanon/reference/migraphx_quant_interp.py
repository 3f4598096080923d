"""Reference semantics (numpy) of the migraphx quantization ops and the TOSA ops their lowering
adds (transpose_conv2d, shifts).

As MIGraphX computes them (its `op/*.hpp`):
- dequantizelinear: `(x - zero_point) * scale`, the difference exact (MIGraphX takes it in
  int64 or double), then rounded once to f32 (f64 where f32 cannot hold both operands), the
  product rounded to the scale's type; input and zero point may be of different types;
- quantizelinear: `saturate(round_half_even(x / scale) + zero_point)` into the result type, the
  sum exact whatever the zero point's integer type; the division is in f32 (f64 for f64); NaN
  has no integer and is undefined in MIGraphX itself;
- quant_dot / quant_convolution: exact integer products and sums, wrapped to 32 bits; fp8 and
  the block-scaled f4E2M1FN form accumulate in f32 (each element times its scale first);
- backwards_data_convolution: `y[n, g*C/g + c, i*s - pb + r*d] += x[n, k, i] * w[k, c, r]`;
- unpack: two nibbles per byte along `axis`, low nibble first; 4-bit signed results are
  sign-extended, all others zero-extended.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation

from convcanon.migraphx import quant_ops as qx
from convcanon.migraphx.op_base import int_list, int_value, operand_element
from convcanon.migraphx.shaped_type import ShapedType, numpy_dtype
from convcanon.reference.kernels import budget
from convcanon.reference.kernels.contraction import ConvAttributes, conv_general
from convcanon.reference.migraphx_conv import migraphx_conv
from convcanon.tosa import quant_ops as tq
from convcanon.tosa.ops import int_values

Kernel = Callable[[Operation, list[np.ndarray]], np.ndarray]


def _element(ty: Attribute) -> Attribute:
    assert isinstance(ty, ShapedType | TensorType)
    return ty.element_type


def _result_dtype(op: Operation) -> np.dtype:
    return numpy_dtype(_element(op.results[0].type))


def _compute(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def as_int(x: np.ndarray) -> np.ndarray:
    """Integers (ml_dtypes int4/uint4 included) as int64, by value."""
    if x.dtype.kind in "iub":
        return x.astype(np.int64)
    return x.astype(np.float32).astype(np.int64)


def as_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Convert to the float `dtype` (ints by value, once)."""
    if x.dtype.kind == "V" and x.dtype.name.startswith(("int", "uint")):
        x = as_int(x)
    return x.astype(dtype)


def saturate(q: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clamp integers to the range of `dtype` (ml_dtypes 4-bit types included) and convert."""
    if dtype.name in ("int4", "uint4"):
        low, high = (-8, 7) if dtype.name == "int4" else (0, 15)
        return np.clip(q, low, high).astype(np.float32).astype(dtype)
    bounds = np.iinfo(dtype)
    return np.clip(q, int(bounds.min), int(bounds.max)).astype(dtype)


def _integral(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu" or x.dtype.name in ("int4", "uint4")


def _dequantize(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """The difference exactly (int64 for two integers; else in f64, which rounds it as the
    compute type would), rounded to the compute type, times the scale there, then rounded to
    the result type."""
    x, scale, *zero = args
    zero_type = operand_element(op, 2) if zero else None
    result = _element(op.results[0].type)
    compute = numpy_dtype(qx.dequantize_compute_type(operand_element(op, 0), zero_type, result))
    if zero and _integral(x) and _integral(zero[0]):
        value = (as_int(x) - as_int(zero[0])).astype(compute)
    else:
        wide = as_float(x, np.dtype(np.float64))
        value = (wide - as_float(zero[0], np.dtype(np.float64)) if zero else wide).astype(compute)
    with np.errstate(over="ignore"):  # to f16: beyond 65504 is inf, as on every engine
        return (value * scale.astype(compute)).astype(numpy_dtype(result))


def _quantize(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x, scale, *zero = args
    wide = _compute(x.dtype)
    dtype = _result_dtype(op)
    if dtype.name.startswith("float8"):
        import ml_dtypes

        largest = float(ml_dtypes.finfo(dtype).max)
        with np.errstate(all="ignore"):
            value = x.astype(np.float32) / scale.astype(np.float32)
            if zero:
                value = value + zero[0].astype(np.float32)
        return np.clip(value, -largest, largest).astype(dtype)
    with np.errstate(all="ignore"):
        quotient = np.rint(x.astype(wide) / scale.astype(wide))
    limit = float(1 << 40)  # beyond every integer type we quantize to, and exact in f32/f64
    q = np.clip(np.nan_to_num(quotient, nan=0.0), -limit, limit).astype(np.int64)
    if zero:
        q = q + as_int(zero[0])
    return saturate(q, _result_dtype(op))


def _wrap32(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """int64 accumulators wrapped to the 32-bit result (unsigned or signed)."""
    return x.astype(np.uint32 if dtype.kind == "u" else np.int32).astype(dtype)


def _quant_dot(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    dtype = _result_dtype(op)
    budget.spend_matmul(args[0], args[1])
    if len(args) == 4:
        a, b, sa, sb = (v.astype(np.float32) for v in args)
        return np.matmul(a * sa, b * sb).astype(dtype)
    a, b = args
    if dtype.kind in "iu":
        return _wrap32(np.matmul(as_int(a), as_int(b)), dtype)
    return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(dtype)


def _quant_convolution(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, qx.QuantConvolutionOp)
    x, w = args
    dtype = _result_dtype(op)
    integral = dtype.kind in "iu"
    x, w = (as_int(v) if integral else v.astype(np.float32) for v in (x, w))
    wide = np.dtype(np.int64) if integral else np.dtype(np.float32)
    out = migraphx_conv(op, x, w, wide)
    return _wrap32(out, dtype) if integral else out.astype(dtype)


def backwards_data_conv(
    x: np.ndarray,
    w: np.ndarray,
    *,
    stride: list[int],
    dilation: list[int],
    begins: tuple[int, ...],
    ends: tuple[int, ...],
    group: int,
    out_dtype: np.dtype,
) -> np.ndarray:
    """The transposed convolution as a forward one: the input dilated by the stride, padded by
    `d(R-1) - pad`, the filter flipped and regrouped to [C, K/group, *R]."""
    nsp = x.ndim - 2
    k, c_per_group = w.shape[:2]
    kernel = w.shape[2:]
    regrouped = w.reshape(group, k // group, c_per_group, *kernel).swapaxes(1, 2)
    regrouped = regrouped.reshape(group * c_per_group, k // group, *kernel)
    spatial = tuple(range(2, 2 + nsp))
    wide = _compute(out_dtype)
    padding = [
        (d * (r - 1) - b, d * (r - 1) - e)
        for r, d, b, e in zip(kernel, dilation, begins, ends, strict=True)
    ]
    out = conv_general(
        x.astype(wide),
        regrouped.astype(wide),
        ConvAttributes(
            window_strides=[1] * nsp,
            padding=padding,
            lhs_dilation=stride,
            rhs_dilation=dilation,
            window_reversal=[True] * nsp,
            lhs_spec=(0, 1, spatial),
            rhs_spec=(1, 0, spatial),
            out_spec=(0, 1, spatial),
            feature_group_count=group,
            batch_group_count=1,
        ),
        preferred_dtype=wide,
    )
    return out.astype(out_dtype)


def _backwards_data_convolution(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, qx.BackwardsDataConvolutionOp)
    x, w = args
    begins, ends = op.explicit_padding()
    return backwards_data_conv(
        x,
        w,
        stride=int_list(op, "stride"),
        dilation=int_list(op, "dilation"),
        begins=begins,
        ends=ends,
        group=int_value(op, "group"),
        out_dtype=_result_dtype(op),
    )


def unpack_nibbles(x: np.ndarray, axis: int, signed: bool) -> np.ndarray:
    """Bytes -> nibble values (int64), the low nibble first along `axis`."""
    byte = as_int(x) & 0xFF
    low, high = byte & 0xF, byte >> 4
    if signed:
        low, high = (np.where(v >= 8, v - 16, v) for v in (low, high))
    stacked = np.stack([low, high], axis=axis + 1)
    shape = list(x.shape)
    shape[axis] *= 2
    return stacked.reshape(shape)


def _unpack(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    out = _element(op.results[0].type)
    values = unpack_nibbles(args[0], qx.unpack_axis(op), qx.unpacked_signed(out))
    dtype = _result_dtype(op)
    if dtype.kind == "V":  # int4/uint4 hold the values as they are
        return values.astype(np.float32).astype(dtype)
    return values.astype(dtype)


QUANT_KERNELS: dict[type[Operation], Kernel] = {
    qx.DeQuantizeLinearOp: _dequantize,
    qx.QuantizeLinearOp: _quantize,
    qx.QuantDotOp: _quant_dot,
    qx.QuantConvolutionOp: _quant_convolution,
    qx.BackwardsDataConvolutionOp: _backwards_data_convolution,
    qx.UnpackOp: _unpack,
}


# -- TOSA ops the quantization lowerings add ------------------------------------------------------


def _tosa_dtype(op: Operation) -> np.dtype:
    return numpy_dtype(_element(op.results[0].type))


def _transpose_conv2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """NHWC input, OHWI weight: out[n, iy*sy + pt + ky, ix*sx + pl + kx, oc] += x * w."""
    x, w, bias, x_zp, w_zp = args
    integral = x.dtype.kind in "iu"
    acc = np.dtype(np.int64) if integral else np.dtype(np.float32)
    xs = x.astype(acc) - x_zp.astype(acc).reshape(())
    ws = w.astype(acc) - w_zp.astype(acc).reshape(())
    top, bottom, left, right = int_values(op.properties["out_pad"])
    out = backwards_data_conv(
        xs.transpose(0, 3, 1, 2),
        ws.transpose(3, 0, 1, 2),
        stride=int_values(op.properties["stride"]),
        dilation=[1, 1],
        begins=(-top, -left),
        ends=(-bottom, -right),
        group=1,
        out_dtype=acc if integral else np.dtype(np.float32),
    ).transpose(0, 2, 3, 1)
    out = out + bias.astype(acc)
    dtype = _tosa_dtype(op)
    return _wrap32(out, dtype) if integral else out.astype(dtype)


def _shift_amount(b: np.ndarray) -> np.ndarray:
    return b.astype(np.int64)


def _logical_shift(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    """A shift of the value's bits as an unsigned integer of its width (an i64's mask, 2^64 - 1,
    does not fit the int64 the shift was done in: a traceback), read back as signed."""

    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        a, b = args
        dtype = _tosa_dtype(op)
        unsigned = np.dtype(f"u{dtype.itemsize}")
        value = fn(a.astype(unsigned).astype(np.uint64), _shift_amount(b).astype(np.uint64))
        return value.astype(unsigned).view(dtype)

    return kernel


def _arithmetic_right_shift(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """`round = true` adds the last bit shifted out, as the specification does for a shift of
    at least 1 (it was an assertion: a traceback)."""
    a, b = (x.astype(np.int64) for x in args)
    shifted = a >> b
    rounding = op.properties.get("round")
    if isinstance(rounding, IntegerAttr) and rounding.value.data:
        shifted += np.where(b > 0, (a >> np.maximum(b - 1, 0)) & 1, 0)
    return shifted.astype(_tosa_dtype(op))


def _reverse(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    axis = op.properties["axis"]
    assert isinstance(axis, IntegerAttr)
    return np.ascontiguousarray(np.flip(args[0], axis.value.data))


TOSA_QUANT_KERNELS: dict[type[Operation], Kernel] = {
    tq.ReverseOp: _reverse,
    tq.TransposeConv2DOp: _transpose_conv2d,
    tq.LogicalLeftShiftOp: _logical_shift(lambda a, b: a << b),
    tq.LogicalRightShiftOp: _logical_shift(lambda a, b: a >> b),
    tq.ArithmeticRightShiftOp: _arithmetic_right_shift,
}
