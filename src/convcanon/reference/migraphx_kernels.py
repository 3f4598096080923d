"""Reference semantics (numpy) of the migraphx ops: `OP_TABLE` maps each op class to its
`kernel(op, args) -> ndarray`.

A kernel sees logical arrays: inside a function every `!migraphx.shaped` value is its logical
numpy array (strides only matter in memory, at the function's boundary). The kernels of the
quantization ops and the TOSA ops are other families (`migraphx_quant_interp`, `tosa_interp`),
joined with this one by `migraphx_interp.op_table`; the families do not import each other.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Operation

from convcanon.migraphx import layout
from convcanon.migraphx import ops as mx
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.boundary_ops import AsLogicalShapeOp, AsUnderlyingShapeOp, LiteralOp
from convcanon.migraphx.concat_ops import ConcatOp
from convcanon.migraphx.norm_ops import BatchNormInferenceOp
from convcanon.migraphx.op_base import int_list, int_value
from convcanon.migraphx.pad_ops import PadOp
from convcanon.migraphx.pool_ops import PoolingOp
from convcanon.migraphx.shaped_type import ShapedType, lowest_value, numpy_dtype
from convcanon.reference.kernels import budget, movement, special
from convcanon.reference.kernels.pooling import Windows, tap_counts, window_reduce
from convcanon.reference.kernels.precision import truncating_divide
from convcanon.reference.migraphx_conv import migraphx_conv

Kernel = Callable[[Operation, list[np.ndarray]], np.ndarray]
KernelTable = dict[type[Operation], Kernel]


def type_dtype(ty: Attribute) -> np.dtype:
    if isinstance(ty, ShapedType | TensorType):
        return numpy_dtype(ty.element_type)
    raise TypeError(f"no numpy dtype for {ty}")


def result_dtype(op: Operation) -> np.dtype:
    return type_dtype(op.results[0].type)


@functools.cache
def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Arithmetic precision: f64 stays, other floats (f16, bf16, fp8) compute in f32; 4-bit
    integers and bools in int64, as C++ promotes them to int and converts the result back: an
    int4 keeps the low bits (-(-8) is -8, where ml_dtypes' own arithmetic leaves 8 in an int4),
    a bool is true where nonzero (-true is true; numpy has no negative of a bool)."""
    if dtype == np.float64:
        return dtype
    if dtype.name in NIBBLE_BOUNDS or dtype == np.bool_:
        return np.dtype(np.int64)
    if dtype.kind in "fV" or dtype.name.startswith(("bfloat", "float8")):
        return np.dtype(np.float32)
    return dtype


def _lift(args: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [a.astype(compute_dtype(a.dtype)) for a in args]


def _elementwise(fn: Callable[..., np.ndarray]) -> Kernel:
    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        with np.errstate(all="ignore"):  # overflow to inf is the rounding the type defines
            return np.asarray(fn(*_lift(args))).astype(result_dtype(op))

    return kernel


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b: floats in f32 (f64 stays) and rounded once to the result type, so an f16/bf16
    quotient is finite wherever a / b is; integers truncate toward zero, exactly (through f64,
    as here before, a 64-bit quotient past 2^53 was rounded: (2^64 - 1) / 1 gave 0), and wrap
    as C++ converts back (-128 / -1 is -128 in int8). Integer division by zero (and a 32/64-bit
    minimum by -1) is undefined in MIGraphX itself: 0 (the wrap) here, whatever the engine
    gives."""
    if a.dtype.kind in "iu":
        zero = b == 0
        quotient = truncating_divide(a, np.where(zero, 1, b).astype(b.dtype))
        return np.where(zero, 0, quotient).astype(a.dtype)
    return a / b


def _pow(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """MIGraphX's pow is `std::pow(x, y)`: integers too are raised in double and the result
    converted back, truncating (2^-1 is 0; numpy's integer power wraps instead and refuses a
    negative exponent). A result outside the type (or NaN) is undefined in C++; there the
    value MIGraphX's GPU conversion gives, the bound (NaN: 0), as `convert_to_integer` does."""
    dtype = result_dtype(op)
    if not is_integer_dtype(dtype):
        return _float_pow(op, args)
    x, y = (integer_values(a).astype(np.float64) for a in args)
    with np.errstate(all="ignore"):
        z = np.power(x, y)
    # past 2^53 a double is rounded, and numpy's power rounds some exact halves differently
    # from C's pow (3^34: ...568 where pow gives ...570): those elements take C's pow itself
    rounded = np.isfinite(z) & (np.abs(z) >= 2.0**53)
    if count := int(np.count_nonzero(rounded)):  # paid for as erf's Python loop is
        budget.spend("a Python call per element", special.PYTHON_CALL_STEPS * count)
        z[rounded] = [_c_pow(a, b) for a, b in zip(x[rounded], y[rounded], strict=True)]
    return convert_to_integer(z, dtype)[0]


def _c_pow(x: float, y: float) -> float:
    """C's pow (math.pow calls it), with an overflow as the infinity C returns."""
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.copysign(math.inf, x) if y % 2 == 1 else math.inf


_float_pow = _elementwise(np.power)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _where(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    cond, a, b = args
    return np.where(cond != 0, a, b).astype(result_dtype(op))


def _index_operand(op: Operation, indices: np.ndarray, length: int) -> np.ndarray:
    """Indices counted from the end when negative; outside [-length, length) is undefined in
    MIGraphX, so refused here."""
    wide = indices.astype(np.int64)
    if wide.size and (wide.min() < -length or wide.max() >= length):
        raise ValueError(
            f"an index is outside [-{length}, {length}) (undefined in MIGraphX): "
            f"min {wide.min()}, max {wide.max()}"
        )
    return np.where(wide < 0, wide + length, wide)


def _gather(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    data, indices = args
    axis = rules.normalize_axis(int_value(op, "axis"), data.ndim)
    picked = _index_operand(op, indices, data.shape[axis])
    return layout.c_order(np.take(data, picked, axis=axis))


def _scatter_none(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """Positions written twice are undefined in MIGraphX; the last write wins here."""
    data, indices, updates = args
    axis = rules.normalize_axis(int_value(op, "axis"), data.ndim)
    target: list[Any] = list(np.indices(indices.shape))
    target[axis] = _index_operand(op, indices, data.shape[axis])
    out = layout.c_order(data.copy())
    out[tuple(target)] = updates
    return out


def _convert(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """MIGraphX's convert. To an integer see `convert_to_integer` (a float outside the range is
    undefined, refused here as an out-of-range gather index is). Between floats where
    ml_dtypes' rules differ from MIGraphX's: to fp8 FNUZ it saturates finite values at the
    largest one (inf and NaN are NaN), to e8m0 it keeps the f32 exponent field (truncation;
    inf/NaN 0xFF), to fp4 a NaN is +0. Overflow to inf is the rounding the type defines."""
    x, dtype = args[0], result_dtype(op)
    if is_integer_dtype(dtype):
        values, undefined = convert_to_integer(x, dtype)
        if undefined.any():
            low, high = integer_bounds(dtype)
            bad = x.reshape(-1)[int(np.flatnonzero(undefined.reshape(-1))[0])]
            raise ValueError(
                f"a value converts outside {dtype}'s range [{low}, {high}] (undefined in "
                f"MIGraphX, a C++ conversion of an out-of-range float): {bad}"
            )
        return values
    with np.errstate(all="ignore"):
        return _convert_to_float(x, dtype)


def _convert_to_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if is_integer_dtype(x.dtype):
        x = integer_values(x)
    is_float = x.dtype.kind == "f" or (x.dtype.kind == "V" and "float" in x.dtype.name)
    if dtype.name not in _MIGRAPHX_CASTS or not is_float:
        return x.astype(dtype)
    wide = x.astype(np.float32)
    if dtype.name == "float8_e8m0fnu":
        return ((np.abs(wide).view(np.uint32) >> 23) & 0xFF).astype(np.uint8).view(dtype)
    if dtype.name == "float4_e2m1fn":
        return np.where(np.isnan(wide), np.float32(0), wide).astype(dtype)
    import ml_dtypes

    top = float(ml_dtypes.finfo(dtype).max)
    return np.where(np.isfinite(wide), np.clip(wide, -top, top), np.nan).astype(dtype)


NIBBLE_BOUNDS = {"int4": (-8, 7), "uint4": (0, 15)}
"""The 4-bit integer types (ml_dtypes' names) and their value ranges."""


def is_integer_dtype(dtype: np.dtype) -> bool:
    """Integers of any width (ml_dtypes' 4-bit ones included); bool is not one."""
    return dtype.kind in "iu" or dtype.name in NIBBLE_BOUNDS


def integer_bounds(dtype: np.dtype) -> tuple[int, int]:
    if dtype.name in NIBBLE_BOUNDS:
        return NIBBLE_BOUNDS[dtype.name]
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def integer_values(x: np.ndarray) -> np.ndarray:
    """Integers (4-bit ones included) as int64 or uint64 arrays of the same values."""
    if x.dtype.name in NIBBLE_BOUNDS:
        return x.astype(np.int8).astype(np.int64)
    return x.astype(np.uint64 if x.dtype == np.uint64 else np.int64)


def convert_to_integer(x: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """MIGraphX's convert of `x` to the integer `dtype`: (values, where they are undefined).

    From an integer (or bool) it keeps the low bits (two's complement, as C++'s conversion and
    MIGraphX's kernels do): always defined. From a float it truncates toward zero; a NaN, an
    infinity or a value whose truncation is outside the range is undefined (MIGraphX's GPU
    kernels convert with a C++ cast there; its reference target clamps, NaN to 0). The values
    returned there are that clamp, the lowering's too."""
    low, high = integer_bounds(dtype)
    bits = 4 if dtype.name in NIBBLE_BOUNDS else dtype.itemsize * 8
    if x.dtype == np.bool_ or is_integer_dtype(x.dtype):
        wide = integer_values(x.astype(np.int8) if x.dtype == np.bool_ else x)
        low_bits = wide.astype(np.uint64) & np.uint64((1 << bits) - 1)
        if low < 0:  # the top bit is the sign
            signed = low_bits.view(np.int64)
            if bits < 64:
                signed = np.where(signed >= 1 << (bits - 1), signed - (1 << bits), signed)
            return _as_integer(signed, dtype), np.zeros(x.shape, dtype=bool)
        return _as_integer(low_bits, dtype), np.zeros(x.shape, dtype=bool)
    wide = x.astype(np.float64)  # exact for every float type MIGraphX has
    nan = np.isnan(wide)
    whole = np.trunc(np.where(nan, 0.0, wide))
    below, above = whole < float(low), whole >= 2.0 ** (bits - (1 if low < 0 else 0))
    inside = np.where(below | above, 0.0, whole)
    values = inside.astype(np.uint64 if dtype == np.uint64 else np.int64)
    values = np.where(below, low, np.where(above, high, values))
    return _as_integer(values, dtype), nan | below | above


def _as_integer(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """In-range integer values as `dtype` (4-bit types through int8, which holds them)."""
    if dtype.name in NIBBLE_BOUNDS:
        return values.astype(np.int8).astype(dtype)
    return values.astype(dtype)


_MIGRAPHX_CASTS = ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn")


def _transpose(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return layout.c_order(np.transpose(args[0], int_list(op, "permutation")))


def _out_lens(op: Operation) -> tuple[int, ...]:
    ty = op.results[0].type
    assert isinstance(ty, ShapedType)
    return ty.lens


def _reshape(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return args[0].reshape(_out_lens(op))


def _broadcast(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    out = int_list(op, "out_lens")
    axis = int_value(op, "axis")
    shape = [1] * len(out)
    shape[axis : axis + x.ndim] = x.shape
    return layout.c_order(np.broadcast_to(x.reshape(shape), out))


def _multibroadcast(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, mx.MultiBroadcastOp)
    placed = args[0].reshape(op.placement())
    return layout.c_order(np.broadcast_to(placed, int_list(op, "out_lens")))


def _slice(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (x,) = args
    index = [slice(None)] * x.ndim
    axes, starts, ends = (int_list(op, k) for k in ("axes", "starts", "ends"))
    for axis, start, end in zip(axes, starts, ends, strict=True):
        a = rules.normalize_axis(axis, x.ndim)
        lo, hi = rules.slice_bounds(x.shape[a], start, end)
        index[a] = slice(lo, hi)
    return layout.c_order(x[tuple(index)])


def _concat(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, ConcatOp)
    budget.plan("concat", budget.nbytes(_out_lens(op), result_dtype(op)))
    return np.concatenate(args, axis=op.concat_axis())


def _pad(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """MIGraphX's reference pad: constant mode writes `fill` (its f32 value clamped to the
    type, `PadOp.fill`) where the shifted index leaves the input (a negative pad crops);
    reflect and edge read a mirrored or clamped input element everywhere."""
    assert isinstance(op, PadOp)
    (x,) = args
    begins, ends = op.begins_ends()
    mode = op.pad_mode()
    if mode == "constant":
        fill = op.fill(result_dtype(op))
        return layout.c_order(movement.pad(x, fill, begins, ends, [0] * x.ndim))
    return movement.mirror_pad(x, begins, ends, mode)


def _batch_norm(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """MIGraphX's reference batch norm: `scale * (x - mean)` in the element type (f16 and bf16
    rounded at each step, as their C++ arithmetic is), then divided by `sqrt(variance +
    epsilon)` and `bias` added in double, rounded once to the element type."""
    assert isinstance(op, BatchNormInferenceOp)
    x, scale, bias, mean, variance = args
    dtype, lens = result_dtype(op), op.parameter_lens()
    wide = compute_dtype(dtype)
    scale, bias, mean, variance = (p.reshape(lens) for p in (scale, bias, mean, variance))
    centered = (x.astype(wide) - mean.astype(wide)).astype(dtype)
    scaled = (scale.astype(wide) * centered.astype(wide)).astype(dtype)
    root = np.sqrt(variance.astype(np.float64) + op.epsilon_value())
    return _convert_to_float(scaled.astype(np.float64) / root + bias.astype(np.float64), dtype)


def _reduction(fn: Callable[..., np.ndarray]) -> Kernel:
    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        (x,) = _lift(args)
        assert isinstance(op, mx.ReduceOp)
        axes = tuple(op.reduced_axes())
        return np.asarray(fn(x, axis=axes, keepdims=True)).astype(result_dtype(op))

    return kernel


def _reduce_mean(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """Floats: the mean in f32 (f64 stays). Integers as MIGraphX's GPU target computes them
    (its reference target differs where the sum leaves the type: see `integer_sum_type`): the
    sum wrapped to `integer_sum_type`, divided by the count truncating, converted back."""
    dtype = result_dtype(op)
    if not is_integer_dtype(dtype):
        return _float_mean(op, args)
    assert isinstance(op, mx.ReduceMeanOp)
    wide = integer_values(args[0])
    axes = tuple(op.reduced_axes())
    total = np.sum(wide, axis=axes, keepdims=True, dtype=wide.dtype)  # modulo 2^64
    accumulator = numpy_dtype(op.integer_sum_type())
    wrapped, _ = convert_to_integer(total, accumulator)
    count = np.asarray(math.prod(wide.shape[a] for a in axes), dtype=accumulator)
    return convert_to_integer(truncating_divide(wrapped, count), dtype)[0]


_float_mean = _reduction(np.mean)


def _softmax(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    (x,) = _lift(args)
    axis = rules.normalize_axis(int_value(op, "axis"), x.ndim)
    with np.errstate(invalid="ignore"):  # a row all -inf (fully masked) is NaN, as in MIGraphX
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return (e / np.sum(e, axis=axis, keepdims=True)).astype(result_dtype(op))


def _dot(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    a, b = _lift(args)
    budget.spend_matmul(a, b)
    return np.matmul(a, b).astype(result_dtype(op))


def _convolution(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, mx.ConvolutionOp)
    x, w = args
    return migraphx_conv(op, x, w, result_dtype(op))


def _pooling(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """MIGraphX's reference pooling: max folds std::max from the type's lowest value (so a NaN
    is skipped and nothing is below lowest), average and lpnorm fold in double; the average
    divides by the taps MIGraphX counts (`clip_ends`; 0 where none), lpnorm takes the p-th root;
    the double converts back as C++ does (to an integer: truncating)."""
    assert isinstance(op, PoolingOp)
    x, dtype, window = args[0], result_dtype(op), op.window()
    axes = tuple(range(2, x.ndim))
    windows = Windows(
        axes, window.lengths, window.stride, window.dilations, window.begins, window.out_spatial
    )
    clips = window.clip_ends(x.shape[2:])
    for axis, s, b, o, clip in zip(
        axes, window.stride, window.begins, window.out_spatial, clips, strict=True
    ):
        if (o - 1) * s - b > clip:
            raise ValueError(
                f"the last window of dim {axis} starts at {(o - 1) * s - b}, past the end of its "
                f"clipped input ({clip}): MIGraphX refuses it (`POOLING: invalid attributes`)"
            )
    integer = is_integer_dtype(dtype) or dtype == np.bool_
    wide = np.dtype(np.uint64 if dtype == np.uint64 else np.int64) if integer else np.float64
    if window.mode == "max":
        lowest = lowest_value(dtype)
        folded = window_reduce(x, windows, np.fmax, lowest, np.dtype(wide))
        return _from_double(np.fmax(folded, lowest), dtype)
    if window.mode == "lpnorm":
        p = window.lp_order
        total = window_reduce(x, windows, np.add, 0.0, np.dtype(np.float64), _power(p))
        return _from_double(total ** (1 / p), dtype)
    total = window_reduce(x, windows, np.add, 0.0, np.dtype(np.float64))
    counts = tap_counts(windows, x.ndim, clips, from_zero=not window.count_include_pad)
    return _from_double(np.where(counts > 0, total / np.maximum(counts, 1), 0.0), dtype)


def _power(p: int) -> Callable[[np.ndarray], None]:
    """|x|^p in place."""

    def transform(x: np.ndarray) -> None:
        np.power(np.abs(x, out=x), p, out=x)

    return transform


def _from_double(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    if is_integer_dtype(dtype):
        return convert_to_integer(x, dtype)[0]
    return _convert_to_float(x, dtype)


def dense_value(attr: DenseIntOrFPElementsAttr, dtype: np.dtype) -> np.ndarray:
    """A dense attribute's values as an array of its own shape (splats filled)."""
    ty = attr.get_type()
    assert isinstance(ty, TensorType)
    shape = tuple(ty.get_shape())
    values = list(attr.get_values())
    if len(values) == 1:
        return np.full(shape, values[0], dtype=compute_dtype(dtype)).astype(dtype)
    return np.asarray(values, dtype=compute_dtype(dtype)).astype(dtype).reshape(shape)


def _literal(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    assert isinstance(op, LiteralOp)
    value = dense_value(op.value, result_dtype(op))
    lens = _out_lens(op)
    if value.shape != lens:
        value = np.broadcast_to(value.reshape(-1)[:1].reshape((1,) * len(lens)), lens)
    return layout.c_order(value)


def _as_logical(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    ty = op.results[0].type
    assert isinstance(ty, ShapedType)
    return layout.read_buffer(args[0], ty.lens, ty.stride_values)


def _as_underlying(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    ty = op.operands[0].type
    assert isinstance(ty, ShapedType)
    return layout.write_buffer(args[0], ty.lens, ty.stride_values)


def _identity(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return args[0].astype(result_dtype(op), copy=True)


# op class -> its kernel
OP_TABLE: KernelTable = {
    mx.ReluOp: _elementwise(lambda x: np.maximum(x, 0)),
    mx.ExpOp: _elementwise(np.exp),
    mx.LogOp: _elementwise(np.log),
    mx.TanhOp: _elementwise(np.tanh),
    mx.SigmoidOp: _elementwise(_sigmoid),
    mx.NegOp: _elementwise(np.negative),
    mx.AbsOp: _elementwise(np.abs),
    mx.FloorOp: _elementwise(np.floor),
    mx.CeilOp: _elementwise(np.ceil),
    mx.SqrtOp: _elementwise(np.sqrt),
    mx.RsqrtOp: _elementwise(lambda x: 1 / np.sqrt(x)),
    mx.RecipOp: _elementwise(lambda x: 1 / x),
    mx.ErfOp: _elementwise(special.erf),
    mx.AddOp: _elementwise(np.add),
    mx.SubOp: _elementwise(np.subtract),
    mx.MulOp: _elementwise(np.multiply),
    mx.DivOp: _elementwise(_div),
    mx.MaxOp: _elementwise(np.maximum),
    mx.MinOp: _elementwise(np.minimum),
    mx.PowOp: _pow,
    mx.GreaterOp: _elementwise(np.greater),
    mx.GreaterOrEqualOp: _elementwise(np.greater_equal),
    mx.LessOp: _elementwise(np.less),
    mx.LessOrEqualOp: _elementwise(np.less_equal),
    mx.EqualOp: _elementwise(np.equal),
    mx.SqueezeOp: _reshape,
    mx.UnsqueezeOp: _reshape,
    mx.FlattenOp: _reshape,
    mx.GatherOp: _gather,
    mx.ScatterNoneOp: _scatter_none,
    mx.ClipOp: _elementwise(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    mx.WhereOp: _where,
    mx.ConvertOp: _convert,
    mx.ContiguousOp: _identity,
    mx.TransposeOp: _transpose,
    mx.ReshapeOp: _reshape,
    mx.BroadcastOp: _broadcast,
    mx.MultiBroadcastOp: _multibroadcast,
    mx.SliceOp: _slice,
    ConcatOp: _concat,
    PadOp: _pad,
    mx.ReduceSumOp: _reduction(np.sum),
    mx.ReduceMeanOp: _reduce_mean,
    mx.ReduceMaxOp: _reduction(np.max),
    mx.ReduceMinOp: _reduction(np.min),
    mx.SoftmaxOp: _softmax,
    mx.DotOp: _dot,
    mx.ConvolutionOp: _convolution,
    PoolingOp: _pooling,
    BatchNormInferenceOp: _batch_norm,
    LiteralOp: _literal,
    AsLogicalShapeOp: _as_logical,
    AsUnderlyingShapeOp: _as_underlying,
}
