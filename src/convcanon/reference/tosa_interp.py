"""Reference semantics (numpy) of the TOSA 1.0 ops `migraphx-to-tosa` emits.

One kernel per op name, `kernel(op, args) -> ndarray`, where `args` are the operand values
(`!tosa.shape` operands arrive as int64 vectors). The result is cast to the op's declared element
type, as TOSA specifies; float->int casts round half to even, integer arithmetic wraps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation

from convcanon.migraphx import layout
from convcanon.migraphx.dense import dense_to_numpy
from convcanon.migraphx.shaped_type import numpy_dtype
from convcanon.reference.kernels import budget, special
from convcanon.reference.kernels.contraction import ConvAttributes, conv_general
from convcanon.reference.kernels.pooling import Windows, tap_counts, window_reduce
from convcanon.reference.kernels.precision import truncating_divide
from convcanon.tosa import ops as tosa
from convcanon.tosa.ops import int_values

Kernel = Callable[[Operation, list[np.ndarray]], np.ndarray]


def result_dtype(op: Operation) -> np.dtype:
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    return numpy_dtype(ty.element_type)


def result_shape(op: Operation) -> tuple[int, ...]:
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def _ints(attr: Attribute) -> list[int]:
    return int_values(attr)


def _axis(op: Operation) -> int:
    attr = op.properties["axis"]
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _const(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    attr = op.properties["values"]
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return dense_to_numpy(attr)


def _to(op: Operation, x: np.ndarray) -> np.ndarray:
    """Cast a computed value to the op's result type (float->int: round half to even)."""
    dtype = result_dtype(op)
    if dtype == x.dtype:
        return x
    if dtype == np.bool_:
        return x != 0
    if dtype.kind in "iu" and x.dtype.kind == "f":
        # saturate in f64: an f32 bound of int32 is 2^31, which no longer fits the type
        info = np.iinfo(dtype)
        wide = np.rint(x.astype(np.float64))
        with np.errstate(invalid="ignore"):
            cast = wide.astype(dtype)
        return np.where(wide >= info.max, info.max, np.where(wide <= info.min, info.min, cast))
    with np.errstate(over="ignore"):  # a float too large for a narrower float is inf, as in IEEE
        return x.astype(dtype)


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    """Floats narrower than f64 compute in f32; f64 and integers in their own type."""
    return np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 8 else dtype


def _acc(x: np.ndarray) -> np.ndarray:
    return x.astype(_acc_dtype(x.dtype))


def _conv(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """conv2d/conv3d (NHWC x OHWI) and depthwise_conv2d (NHWC x HWCM)."""
    x, w, bias, xzp, wzp = args
    nsp = x.ndim - 2
    pad = _ints(op.properties["pad"])
    acc = np.dtype(np.int64) if x.dtype.kind in "iu" else np.dtype(np.float32)
    xs = x.astype(acc) - xzp.astype(acc).reshape(())
    ws = w.astype(acc) - wzp.astype(acc).reshape(())
    spatial = tuple(range(1, nsp + 1))
    groups = 1
    if isinstance(op, tosa.DepthwiseConv2DOp):
        kh, kw, c, m = ws.shape
        ws = ws.reshape(kh, kw, 1, c * m)
        rhs_spec = (2, 3, (0, 1))
        groups = c
    else:
        rhs_spec = (nsp + 1, 0, spatial)
    out = conv_general(
        xs,
        ws,
        ConvAttributes(
            window_strides=_ints(op.properties["stride"]),
            padding=[(pad[2 * i], pad[2 * i + 1]) for i in range(nsp)],
            lhs_dilation=[1] * nsp,
            rhs_dilation=_ints(op.properties["dilation"]),
            window_reversal=[False] * nsp,
            lhs_spec=(0, nsp + 1, spatial),
            rhs_spec=rhs_spec,
            out_spec=(0, nsp + 1, spatial),
            feature_group_count=groups,
            batch_group_count=1,
        ),
        preferred_dtype=acc,
    )
    return _to(op, out + bias.astype(acc))


def _pool2d(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """max_pool2d (a NaN propagates, or with nan_mode IGNORE is skipped) and avg_pool2d of
    floats (the sum in f32, divided by the window's input elements); TOSA's integer average
    (zero points, rounding) is not emitted."""
    x = args[0]
    kernel, stride, pad = (_ints(op.properties[k]) for k in ("kernel", "stride", "pad"))
    windows = Windows(
        (1, 2), tuple(kernel), tuple(stride), (1, 1), (pad[0], pad[2]), result_shape(op)[1:3]
    )
    integer = x.dtype.kind in "iu"
    wide = np.dtype(np.int64 if integer else np.float64 if x.dtype == np.float64 else np.float32)
    if isinstance(op, tosa.MaxPool2DOp):
        if integer:
            lowest = int(np.iinfo(np.int64).min)
            return _to(op, window_reduce(x, windows, np.maximum, lowest, wide))
        if tosa.ignores_nan(op):  # NaN where no tap is (padding is never read)
            return _to(op, window_reduce(x, windows, np.fmax, np.nan, wide))
        return _to(op, window_reduce(x, windows, np.maximum, -np.inf, wide))
    if integer:
        raise ValueError(f"avg_pool2d of {x.dtype} is not interpreted (floats only)")
    total = window_reduce(x, windows, np.add, 0, wide)
    counts = tap_counts(windows, x.ndim, x.shape[1:3])
    return _to(op, total / counts.astype(wide))


def _matmul(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    a, b, azp, bzp = args
    # no accumulator attribute: floats accumulate in f32, or in f64 for f64 (its result type)
    acc = np.dtype(np.int64) if a.dtype.kind in "iu" else _acc_dtype(a.dtype)
    lhs = a.astype(acc) - azp.astype(acc).reshape(())
    rhs = b.astype(acc) - bzp.astype(acc).reshape(())
    budget.spend_matmul(lhs, rhs)
    if _is_integer(a.dtype):
        return _to(op, _integer_matmul(lhs, rhs, result_dtype(op), f"'{op.name}'"))
    return _to(op, np.matmul(lhs, rhs))


def _integer_matmul(lhs: np.ndarray, rhs: np.ndarray, out: np.dtype, what: str) -> np.ndarray:
    """The specification's integer MATMUL: each product is apply_mul_s in the output type (its
    low bits) and the products are added over K in order with apply_add_s, whose partial sums
    must fit the output type (a REQUIRE: past it TOSA's result is unpredictable; IREE wraps)."""
    width = out.itemsize * 8
    budget.spend("a call per contracted element", lhs.shape[-1] * budget.OP_STEPS)
    total = np.zeros((*lhs.shape[:-1], rhs.shape[-1]), dtype=np.int64)
    for k in range(lhs.shape[-1]):
        product = lhs[..., :, k, None] * rhs[..., None, k, :]  # int64: wraps to its low bits
        if width in (8, 16, 32):
            product = product.astype(np.dtype(f"int{width}")).astype(np.int64)
        total = _checked_sum(total, product, False, out, what)
    return total


def _transpose(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return layout.c_order(np.transpose(args[0], _ints(op.properties["perms"])))


def _reshape(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return args[0].reshape(tuple(int(n) for n in args[1]))


def _slice(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x, start, size = args
    index = tuple(slice(int(b), int(b) + int(n)) for b, n in zip(start, size, strict=True))
    return layout.c_order(x[index])


def _tile(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return np.tile(args[0], tuple(int(n) for n in args[1]))


def _pad(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    x, padding, value = args
    widths = [(int(padding[2 * i]), int(padding[2 * i + 1])) for i in range(x.ndim)]
    return np.pad(x, widths, constant_values=value.reshape(()))


def _concat(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(args, axis=_axis(op))


def _reduction(fn: Callable[..., np.ndarray]) -> Kernel:
    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        x = args[0]
        if fn is np.sum and _is_integer(x.dtype):
            return _to(op, _integer_reduce_sum(x, _axis(op), f"'{op.name}'"))
        acc = _acc(x) if fn is np.sum else x
        return _to(op, fn(acc, axis=_axis(op), keepdims=True))

    return kernel


def _elementwise(fn: Callable[..., np.ndarray], arity: int = 1) -> Kernel:
    """Float ops compute in f32 (f64 stays f64); integer ops in their own type (wrapping)."""

    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        operands = [_acc(a) for a in args[:arity]]
        with np.errstate(all="ignore"):
            return _to(op, np.asarray(fn(*operands)))

    return kernel


def _maximum(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """nan_mode PROPAGATE (the default): a NaN operand is the result; IGNORE: the other one."""
    return _elementwise(np.fmax if tosa.ignores_nan(op) else np.maximum, 2)(op, args)


def _intdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The specification's INTDIV: truncating; a zero divisor, or a minimum divided by -1 (a
    quotient outside the type), is a REQUIRE that fails: TOSA's result is unpredictable, so it
    is refused (IREE gives the minimum for both)."""
    a, b = np.broadcast_arrays(a, b)
    low, _ = _int_range(a.dtype)
    bad = (b == 0) | ((a == low) & (b == -1))
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError(
            f"'tosa.intdiv' of {a.reshape(-1)[k]} by {b.reshape(-1)[k]}: unpredictable in TOSA "
            "(a REQUIRE of the specification)"
        )
    return truncating_divide(a, b).astype(a.dtype)


def _is_integer(dtype: np.dtype) -> bool:
    """An integer of any width (ml_dtypes' 4-bit ones are numpy kind V, as bf16 and fp8 are)."""
    return dtype.kind in "iu" or dtype.name in ("int4", "uint4")


def _int_range(dtype: np.dtype) -> tuple[int, int]:
    """A signless (numpy: signed) integer type's range, 4-bit included."""
    import ml_dtypes

    info = ml_dtypes.iinfo(dtype)
    return int(info.min), int(info.max)


def _checked_sum(
    a: np.ndarray, b: np.ndarray, subtract: bool, acc: np.dtype, what: str
) -> np.ndarray:
    """a + b (a - b) as TOSA's apply_add_s/apply_sub_s in the integer type `acc`: a result
    outside its range is a REQUIRE that fails, which leaves TOSA's result unpredictable (not a
    wrap, not a clip), so it cannot be evaluated. Exact in int64 below 64 bits; at 64 the
    wrapped int64 result with the sign test of two's complement overflow (no wider array)."""
    wide_a, wide_b = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    with np.errstate(over="ignore"):
        value = wide_a - wide_b if subtract else wide_a + wide_b
    if acc.itemsize == 8:
        other = ~wide_b if subtract else wide_b  # a - b overflows as a + ~b + 1 does
        over = ((wide_a ^ value) & (other ^ value)) < 0
    else:
        low, high = _int_range(acc)
        over = (value < low) | (value > high)
    if over.any():
        k = int(np.flatnonzero(over.reshape(-1))[0])
        sign = "-" if subtract else "+"
        raise ValueError(
            f"{what}: {wide_a.reshape(-1)[k]} {sign} {wide_b.reshape(-1)[k]} is outside {acc}: "
            "unpredictable in TOSA (a REQUIRE of the specification)"
        )
    return value


def _integer_reduce_sum(x: np.ndarray, axis: int, what: str) -> np.ndarray:
    """The specification's integer REDUCE_SUM: it adds along the axis in index order with
    apply_add_s, so every partial sum must fit the type (`_checked_sum`; past it TOSA's result
    is unpredictable, IREE wraps) and a sum that leaves the range on the way is refused even if
    it comes back. The partial sums wrap in int64 only after a step the check refuses."""
    wide = x.astype(np.int64)
    if wide.shape[axis] == 0:
        return np.zeros_like(wide).sum(axis=axis, keepdims=True)
    partial = np.cumsum(wide, axis=axis)
    partial = _checked_sum(partial - wide, wide, False, x.dtype, what)
    return np.take(partial, [-1], axis=axis)


def _negate(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """The specification's NEGATE: on integers (x - input_zp) negated plus output_zp in acc_t
    (i32 up to 32 bits, i64 for 64), each step REQUIREd to fit acc_t, then clipped to the type:
    -(-128) is 127 in i8 (MIGraphX wraps it to -128), -(INT32_MIN) is unpredictable."""
    x, xzp, ozp = args
    if not _is_integer(x.dtype):
        return _to(op, -_acc(x))
    acc = np.dtype(np.int64) if x.dtype.itemsize == 8 else np.dtype(np.int32)
    what = "'tosa.negate'"
    value = _checked_sum(x, xzp.reshape(-1)[:1], True, acc, what)
    value = _checked_sum(np.zeros((), np.int64), value, True, acc, what)
    value = _checked_sum(value, ozp.reshape(-1)[:1], False, acc, what)
    low, high = _int_range(x.dtype)
    return _to(op, np.clip(value, low, high))


def _integer_sum(subtract: bool) -> Kernel:
    """ADD and SUB: on integers the exact result must fit the type (`_checked_sum`; IREE wraps,
    and MIGraphX's wrap is the lowering's to build)."""
    floats = _elementwise(np.subtract if subtract else np.add, 2)

    def kernel(op: Operation, args: list[np.ndarray]) -> np.ndarray:
        a, b = args
        if not _is_integer(a.dtype):
            return floats(op, args)
        return _to(op, _checked_sum(a, b, subtract, a.dtype, f"'{op.name}'"))

    return kernel


def _abs(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """The specification's ABS: an integer minimum has no absolute value in its type (REQUIRE)."""
    (x,) = args
    if _is_integer(x.dtype):
        low, _ = _int_range(x.dtype)
        if x.size and (x.astype(np.int64) == low).any():
            raise ValueError(
                f"'tosa.abs' of {low}, the minimum of {x.dtype}: unpredictable in TOSA "
                "(a REQUIRE of the specification)"
            )
        return _to(op, np.abs(x.astype(np.int64)))
    return _to(op, np.abs(_acc(x)))


def _clamp_bound(attr: Attribute) -> float | int:
    if isinstance(attr, FloatAttr):
        return attr.value.data
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def _clamp(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    lo = _clamp_bound(op.properties["min_val"])
    hi = _clamp_bound(op.properties["max_val"])
    x = _acc(args[0])
    return _to(op, np.minimum(np.maximum(x, lo), hi))


def _select(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return _to(op, np.where(args[0].astype(bool), args[1], args[2]))


def _cast(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    return _to(op, args[0])


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _gather(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    values, indices = args
    return np.take_along_axis(values, indices.astype(np.int64)[:, :, None], axis=1)


def _scatter(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """Rows of `values_in` replaced by those of `input` (TOSA: each index written once)."""
    values, indices, updates = args
    out = values.copy()
    budget.spend_calls("a call per batch", values.shape[0], indices.shape[-1] * values.shape[-1])
    for n in range(values.shape[0]):
        out[n, indices[n].astype(np.int64)] = updates[n]
    return out


TOSA_KERNELS: dict[type[Operation], Kernel] = {
    tosa.ConstOp: _const,
    tosa.ConstShapeOp: _const,
    tosa.Conv2DOp: _conv,
    tosa.DepthwiseConv2DOp: _conv,
    tosa.Conv3DOp: _conv,
    tosa.MaxPool2DOp: _pool2d,
    tosa.AvgPool2DOp: _pool2d,
    tosa.MatMulOp: _matmul,
    tosa.TransposeOp: _transpose,
    tosa.ReshapeOp: _reshape,
    tosa.SliceOp: _slice,
    tosa.TileOp: _tile,
    tosa.PadOp: _pad,
    tosa.ConcatOp: _concat,
    tosa.ReduceSumOp: _reduction(np.sum),
    tosa.ReduceMaxOp: _reduction(np.max),
    tosa.ReduceMinOp: _reduction(np.min),
    tosa.AddOp: _integer_sum(subtract=False),
    tosa.SubOp: _integer_sum(subtract=True),
    tosa.MulOp: _elementwise(np.multiply, 2),
    tosa.MaximumOp: _maximum,
    tosa.MinimumOp: _elementwise(np.minimum, 2),
    tosa.PowOp: _elementwise(np.power, 2),
    tosa.IntDivOp: _elementwise(_intdiv, 2),
    tosa.GreaterOp: _elementwise(np.greater, 2),
    tosa.GreaterEqualOp: _elementwise(np.greater_equal, 2),
    tosa.EqualOp: _elementwise(np.equal, 2),
    tosa.BitwiseAndOp: _elementwise(np.bitwise_and, 2),
    tosa.BitwiseXorOp: _elementwise(np.bitwise_xor, 2),
    tosa.GatherOp: _gather,
    tosa.ScatterOp: _scatter,
    tosa.ExpOp: _elementwise(np.exp),
    tosa.LogOp: _elementwise(np.log),
    tosa.TanhOp: _elementwise(np.tanh),
    tosa.SigmoidOp: _elementwise(_sigmoid),
    tosa.AbsOp: _abs,
    tosa.FloorOp: _elementwise(np.floor),
    tosa.CeilOp: _elementwise(np.ceil),
    tosa.RsqrtOp: _elementwise(_rsqrt),
    tosa.ReciprocalOp: _elementwise(np.reciprocal),
    tosa.ErfOp: _elementwise(special.erf),
    tosa.NegateOp: _negate,
    tosa.ClampOp: _clamp,
    tosa.SelectOp: _select,
    tosa.CastOp: _cast,
}
