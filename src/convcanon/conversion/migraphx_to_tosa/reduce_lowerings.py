"""Lowerings of the migraphx reductions and softmax: `(lowering, op, operand views) -> result view`.

A reduction reads its input in the base's own dim order (no transpose); narrow floats reduce in
f32 and round once; an integer sum wraps modulo 2^width as MIGraphX computes it, built from
TOSA reductions none of whose partial sums leaves its type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import Attribute, Operation

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    binary_view,
    elementwise_views,
    is_float,
    scalar_like,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.integer_domain import (
    from_int_domain,
    in_int_domain,
    int_width,
    shift_right,
    unsigned_div32,
    widen,
    zero_extend,
)
from convcanon.conversion.migraphx_to_tosa.op_lowering import (
    LoweringContext,
    LoweringTable,
    declared_frame,
    lowers,
    refuse_integer,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    integer_width,
    lowering_error,
    result_element,
)
from convcanon.migraphx import ops as mx
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import int_value
from convcanon.migraphx.shaped_type import is_unsigned, numpy_dtype, signless
from convcanon.tosa import ops as tosa

# The lowerings of this family, each registered against its op class by `@lowers`.
REDUCE_LOWERINGS: LoweringTable = {}


_REDUCE: dict[type[Operation], type[tosa.TosaOp]] = {
    mx.ReduceSumOp: tosa.ReduceSumOp,
    mx.ReduceMeanOp: tosa.ReduceSumOp,
    mx.ReduceMaxOp: tosa.ReduceMaxOp,
    mx.ReduceMinOp: tosa.ReduceMinOp,
}


def reduce_view(
    em: Emitter, cls: type[tosa.TosaOp], x: View, axes: Sequence[int], mean: bool
) -> View:
    """Reduce logical `axes` in the base's own dim order (no transpose).

    A broadcast dim holds one value n times: max/min/mean leave it, a sum multiplies by n.
    """
    base, shape = x.base, x.base_shape
    real = 1  # elements combined by tosa reductions
    repeat = 1  # copies folded away on broadcast dims
    for a in sorted(set(axes)):
        b = x.perm[a]
        if shape[b] > 1:
            base = em.reduce(cls, base, b)
            real *= shape[b]
        elif x.lens[a] > 1:
            repeat *= x.lens[a]
    lens = tuple(1 if i in set(axes) else n for i, n in enumerate(x.lens))
    out = View(base, x.perm, lens)
    et, rank = x.element_type, len(x.base_shape)
    if mean and real > 1:
        if is_float(et):
            scale = View.plain(em.scalar(et, 1.0 / real, rank))
            return elementwise_views(em, tosa.MulOp, [out, scale], lens)
        divisor = View.plain(em.scalar(et, real, rank))
        return elementwise_views(em, tosa.IntDivOp, [out, divisor], lens)
    if cls is tosa.ReduceSumOp and not mean and repeat > 1:
        return elementwise_views(
            em, tosa.MulOp, [out, View.plain(em.scalar(et, repeat, rank))], lens
        )
    return out


@lowers(REDUCE_LOWERINGS, *_REDUCE)
def _reduce(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Integers reduce on i32 (TOSA's integer profile has no i8/i16 reduce_sum), widened by
    their sign and narrowed back (a sum wraps, as in MIGraphX); unsigned max/min compare with the
    sign bit flipped."""
    (x,) = args
    em = lw.em
    assert isinstance(op, mx.ReduceOp)
    axes = op.reduced_axes()
    mean = isinstance(op, mx.ReduceMeanOp)
    element = result_element(op)
    width = integer_width(element)
    if width is None:
        wide = in_f32(em, x)
        out = reduce_view(em, _REDUCE[type(op)], wide, axes, mean)
        return out if wide is x else unary_view(em, tosa.CastOp, out, x.element_type)
    if isinstance(op, mx.ReduceMaxOp | mx.ReduceMinOp):
        out = reduce_view(em, _REDUCE[type(op)], in_int_domain(em, x, element), axes, mean)
        return from_int_domain(em, out, element)
    if mean and width > 32:
        raise lowering_error(
            op, f"on {element} has no exact TOSA lowering (tosa.intdiv is signed 32-bit)"
        )
    count = math.prod(x.lens[a] for a in axes)
    if count >= 1 << 31:
        raise lowering_error(op, f"of {count} {element} values has no exact TOSA lowering here")
    if isinstance(op, mx.ReduceMeanOp):
        return _integer_mean(em, op, x, element, axes, count)
    return wrapping_reduce_sum(em, x, element, axes)


def _integer_mean(
    em: Emitter, op: mx.ReduceMeanOp, x: View, element: Attribute, axes: Sequence[int], count: int
) -> View:
    """MIGraphX's GPU mean (`integer_sum_type`): the sum wrapped to the type it sums in,
    divided by the count with tosa.intdiv (ui32 sums with `unsigned_div32`), narrowed back.
    Where that sum is on i32 and cannot leave it, the exact sum divided by the number of
    distinct values (a broadcast dim's copies cancel)."""
    width = int_width(element)
    accumulator = op.integer_sum_type()
    if width < 32 and accumulator.width.data == 32:
        if count <= 1 << (31 - width):
            out = reduce_view(em, tosa.ReduceSumOp, widen(em, x, element), axes, mean=True)
            return from_int_domain(em, out, signless(element))
        x, element = widen(em, x, element), accumulator
    total = widen(em, wrapping_reduce_sum(em, x, element, axes), element)
    lens, hint = total.lens, declared_frame(op)
    divisor = scalar_like(em, i32, count, total)
    if int_width(element) == 32 and is_unsigned(element):
        quotient = unsigned_div32(em, total, divisor, lens, hint)
    else:
        quotient = elementwise_views(em, tosa.IntDivOp, [total, divisor], lens, hint=hint)
    return from_int_domain(em, quotient, signless(result_element(op)))


def wrapping_reduce_sum(em: Emitter, x: View, element: Attribute, axes: Sequence[int]) -> View:
    """The sum modulo 2^width, as MIGraphX computes it (its GPU kernels add in the type, its
    reference target in 64 bits and converts back), with no partial sum of a TOSA REDUCE_SUM
    outside its type (a REQUIRE: TOSA's result would be unpredictable, though IREE wraps): on
    i32 where `count` values of the type cannot overflow it, else on i64 and narrowed back
    (narrowing casts wrap); 64-bit values as the sums of their signed upper and unsigned lower
    32 bits, the lower sum's carry moved up and the upper sum wrapped to 32 bits before it is
    shifted into place, so every step is exact. At most 2^31 values (the caller checks)."""
    width = int_width(element)
    count = math.prod(x.lens[a] for a in axes)
    if width < 64:
        wide = widen(em, x, element)
        if width == 32 or count > 1 << (31 - width):
            wide = zero_extend(em, x, element) if width == 32 else wide
            if wide.element_type != i64:
                wide = unary_view(em, tosa.CastOp, wide, i64)
        out = reduce_view(em, tosa.ReduceSumOp, wide, axes, mean=False)
        if out.element_type == i64:
            out = unary_view(em, tosa.CastOp, out, i32)
        return from_int_domain(em, out, signless(element))
    mask = scalar_like(em, i64, (1 << 32) - 1, x)
    upper = reduce_view(em, tosa.ReduceSumOp, shift_right(em, x, 32, arithmetic=True), axes, False)
    lower = binary_view(em, tosa.BitwiseAndOp, x, mask, x.lens)
    lower = reduce_view(em, tosa.ReduceSumOp, lower, axes, mean=False)
    lens = lower.lens
    upper = binary_view(em, tosa.AddOp, upper, shift_right(em, lower, 32, arithmetic=True), lens)
    upper = unary_view(em, tosa.CastOp, unary_view(em, tosa.CastOp, upper, i32), i64)
    shifted = binary_view(em, tosa.MulOp, upper, scalar_like(em, i64, 1 << 32, upper), lens)
    low_bits = binary_view(
        em, tosa.BitwiseAndOp, lower, scalar_like(em, i64, (1 << 32) - 1, lower), lens
    )
    return binary_view(em, tosa.AddOp, shifted, low_bits, lens)


def in_f32(em: Emitter, x: View) -> View:
    """Floats narrower than f32 widened to f32 (exactly): reductions and softmax compute there
    and round once at the end, as the reference does. (It also keeps f16 max reductions away from
    IREE 3.13's llvm-cpu, which cannot link `fmaxf` for them.)"""
    et = x.element_type
    if not is_float(et) or et == f32 or numpy_dtype(et).itemsize >= 4:
        return x
    return unary_view(em, tosa.CastOp, x, f32)


@lowers(REDUCE_LOWERINGS, mx.SoftmaxOp)
def _softmax(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """exp(x - max(x)) * reciprocal(sum(exp(x - max(x)))) along the axis, in x's dim order."""
    refuse_integer(op, "tosa.exp")
    (narrow,) = args
    em = lw.em
    x = in_f32(em, narrow)
    axis = rules.normalize_axis(int_value(op, "axis"), len(x.lens))
    peak = reduce_view(em, tosa.ReduceMaxOp, x, [axis], mean=False)
    shifted = elementwise_views(em, tosa.SubOp, [x, peak], x.lens)
    e = unary_view(em, tosa.ExpOp, shifted)
    total = reduce_view(em, tosa.ReduceSumOp, e, [axis], mean=False)
    inverse = unary_view(em, tosa.ReciprocalOp, total)
    out = elementwise_views(em, tosa.MulOp, [e, inverse], x.lens)
    return out if x is narrow else unary_view(em, tosa.CastOp, out, narrow.element_type)
