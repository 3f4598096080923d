"""Lowerings of the migraphx ops that compute: `(lowering, op, operand views) -> result view`.

Elementwise ops, comparisons, reductions, softmax, dot, convolution and literals; the ops that
only move elements are `shape_lowerings`, the quantization family `quant_lowerings`. Inside a
function every migraphx value is a `View` (see the emitter), so layouts flow through the graph
without transposes until an op needs a dim order; integers are computed as `integer_domain`
says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    TensorType,
    bf16,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    binary_view,
    element_type_of,
    elementwise_views,
    in_frame,
    is_float,
    logical,
    materialize,
    scalar_like,
    shape_of,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.integer_domain import (
    bound_attr,
    float_to_integer,
    from_int_domain,
    in_int_domain,
    int_width,
    shift_right,
    unsigned32_to_f32,
    unsigned_div32,
    widen,
    wrapping_sum,
    wrapping_unary,
    zero_extend,
)
from convcanon.conversion.migraphx_to_tosa.op_lowering import (
    LoweringContext,
    LoweringTable,
    channels_last,
    declared_frame,
    fit_strides,
    lowers,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    float_accumulator,
    integer_width,
    lowering_error,
    result_element,
    result_type,
)
from convcanon.migraphx import ops as mx
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.boundary_ops import LiteralOp
from convcanon.migraphx.op_base import int_list, int_value, operand_element
from convcanon.migraphx.shaped_type import is_unsigned, numpy_dtype, signless
from convcanon.tosa import ops as tosa

# -- elementwise -----------------------------------------------------------------------------------

# The lowerings of this family, each registered against its op class by `@lowers`.
CORE_LOWERINGS: LoweringTable = {}

_BINARY: dict[type[Operation], type[tosa.TosaOp]] = {
    mx.AddOp: tosa.AddOp,
    mx.SubOp: tosa.SubOp,
    mx.MulOp: tosa.MulOp,
    mx.MaxOp: tosa.MaximumOp,
    mx.MinOp: tosa.MinimumOp,
    mx.PowOp: tosa.PowOp,
}
_UNARY: dict[type[Operation], type[tosa.TosaOp]] = {
    mx.ExpOp: tosa.ExpOp,
    mx.LogOp: tosa.LogOp,
    mx.TanhOp: tosa.TanhOp,
    mx.SigmoidOp: tosa.SigmoidOp,
    mx.NegOp: tosa.NegateOp,
    mx.AbsOp: tosa.AbsOp,
    mx.FloorOp: tosa.FloorOp,
    mx.CeilOp: tosa.CeilOp,
    mx.RsqrtOp: tosa.RsqrtOp,
    mx.RecipOp: tosa.ReciprocalOp,
    mx.ErfOp: tosa.ErfOp,
}


@lowers(CORE_LOWERINGS, *_BINARY)
def _binary(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    lens = result_type(op).lens
    element = result_element(op)
    if integer_width(element) is None:
        return elementwise_views(lw.em, _BINARY[type(op)], args, lens, hint=declared_frame(op))
    if isinstance(op, mx.AddOp | mx.SubOp):
        return wrapping_sum(lw.em, _BINARY[type(op)], args, element, lens, declared_frame(op))
    if isinstance(op, mx.MulOp):  # TOSA's MUL keeps the low bits: the sign does not matter
        args = [widen(lw.em, a, element) for a in args]
        out = elementwise_views(lw.em, _BINARY[type(op)], args, lens, hint=declared_frame(op))
        return from_int_domain(lw.em, out, signless(element))
    if isinstance(op, mx.PowOp):
        raise lowering_error(op, f"on {element} has no exact TOSA lowering (integer pow)")
    args = [in_int_domain(lw.em, a, element) for a in args]
    out = elementwise_views(lw.em, _BINARY[type(op)], args, lens, hint=declared_frame(op))
    return from_int_domain(lw.em, out, element)


def refuse_integer(op: Operation, what: str) -> None:
    """TOSA 1.0 computes `what` on floating-point values only (IREE refuses the op on integers
    as in no profile); MIGraphX computes it in double and truncates, which no TOSA op does."""
    element = result_element(op)
    if integer_width(element) is not None:
        raise lowering_error(
            op, f"on {element} has no exact TOSA lowering ({what} takes floating-point values)"
        )


@lowers(CORE_LOWERINGS, *_UNARY)
def _unary(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Integers: floor and ceil are the value, neg and abs wrap as in MIGraphX
    (`wrapping_unary`), the functions of floating-point values are refused."""
    (x,) = args
    element = result_element(op)
    if integer_width(element) is not None:
        if isinstance(op, mx.FloorOp | mx.CeilOp) or (
            isinstance(op, mx.AbsOp) and is_unsigned(element)
        ):
            return x
        if isinstance(op, mx.AbsOp | mx.NegOp):
            return wrapping_unary(lw.em, _UNARY[type(op)], x, element)
        refuse_integer(op, _UNARY[type(op)].name)
    return unary_view(lw.em, _UNARY[type(op)], x)


@lowers(CORE_LOWERINGS, mx.DivOp)
def _div(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Floats: a * reciprocal(b) computed in f32 (f64 stays) and rounded once to the result type,
    so an f16/bf16 quotient is finite wherever a / b is. Integers: truncating tosa.intdiv on i32
    (narrower types widened by their sign). Integer division by zero is undefined in MIGraphX."""
    a, b = args
    em = lw.em
    lens, hint = result_type(op).lens, declared_frame(op)
    et = a.element_type
    if is_float(et):
        wide = f32 if et != f32 and numpy_dtype(et).itemsize < 4 else et
        a, b = (v if v.element_type == wide else unary_view(em, tosa.CastOp, v, wide) for v in args)
        inverse = unary_view(em, tosa.ReciprocalOp, b)
        quotient = elementwise_views(em, tosa.MulOp, [a, inverse], lens, hint=hint)
        return quotient if wide == et else unary_view(em, tosa.CastOp, quotient, et)
    element = result_element(op)
    width = integer_width(element)
    if width is None or width > 32:
        raise lowering_error(
            op, f"on {element} has no exact TOSA lowering (tosa.intdiv is signed 32-bit)"
        )
    if width == 32 and is_unsigned(element):
        return unsigned_div32(em, a, b, lens, hint)
    wide_args = [widen(em, v, element) for v in args]
    quotient = elementwise_views(em, tosa.IntDivOp, wide_args, lens, hint=hint)
    return from_int_domain(em, quotient, element)


@lowers(CORE_LOWERINGS, mx.SqrtOp)
def _sqrt(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """TOSA has no sqrt: reciprocal(rsqrt(x)) (exact at 0 and inf)."""
    refuse_integer(op, "tosa.rsqrt")
    return unary_view(lw.em, tosa.ReciprocalOp, unary_view(lw.em, tosa.RsqrtOp, args[0]))


@lowers(CORE_LOWERINGS, mx.ReluOp)
def _relu(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    (x,) = args
    element = result_element(op)
    width = integer_width(element)
    if is_unsigned(element) or width == 1:
        return x  # never below zero: unsigned, or a bool
    if width is not None and width > 16:  # TOSA's integer clamp is i8/i16: max(x, 0)
        zero = scalar_like(lw.em, x.element_type, 0, x)
        return elementwise_views(lw.em, tosa.MaximumOp, [x, zero], x.lens)
    et = x.element_type
    props = {"min_val": bound_attr(et, 0), "max_val": bound_attr(et, math.inf)}
    clamp = tosa.ClampOp([x.base], x.base.type, props)
    return View(lw.em.add(clamp), x.perm, x.lens)


@lowers(CORE_LOWERINGS, mx.ClipOp)
def _clip(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    element = result_element(op)
    x, lo, hi = (in_int_domain(lw.em, v, element) for v in args)
    lens = result_type(op).lens
    hint = declared_frame(op)
    low = elementwise_views(lw.em, tosa.MaximumOp, [x, lo], lens, hint=hint)
    out = elementwise_views(lw.em, tosa.MinimumOp, [low, hi], lens, hint=hint)
    return from_int_domain(lw.em, out, element)


def _to_bool(lw: LoweringContext, view: View) -> View:
    et = view.element_type
    if et == i1:
        return view
    return unary_view(lw.em, tosa.CastOp, view, i1)


@lowers(CORE_LOWERINGS, mx.WhereOp)
def _where(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    cond, a, b = args
    views = [_to_bool(lw, cond), a, b]
    lens = result_type(op).lens
    return elementwise_views(
        lw.em, tosa.SelectOp, views, lens, a.element_type, hint=declared_frame(op)
    )


@lowers(CORE_LOWERINGS, mx.ConvertOp)
def _convert(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """tosa.cast, with MIGraphX's meaning: float->int truncates toward zero (TOSA's cast rounds
    to nearest); an unsigned source is zero-extended first; a float->unsigned goes through i32
    so 200.0 -> ui8 is 200 (TOSA saturates at the signed bound); int->int narrowing wraps."""
    (x,) = args
    em = lw.em
    src_mx, dst_mx = operand_element(op, 0), result_element(op)
    dst = signless(dst_mx)
    if x.element_type == dst and is_unsigned(src_mx) == is_unsigned(dst_mx):
        return x
    if x.element_type == dst and not is_float(dst):
        return x  # same bits (si8 <-> ui8)
    widening = is_float(dst) or (integer_width(dst) or 0) > (integer_width(src_mx) or 0)
    if is_unsigned(src_mx) and widening:  # narrowing keeps the low bits: no extension needed
        if integer_width(src_mx) == 64 and is_float(dst):
            raise lowering_error(op, f"{src_mx} -> {dst_mx} has no exact TOSA lowering")
        if integer_width(src_mx) == 32 and is_float(dst):
            x = unsigned32_to_f32(em, x)
        else:
            x = zero_extend(em, x, src_mx)
    if is_float(x.element_type) and not is_float(dst) and dst != i1:
        return float_to_integer(em, x, dst_mx)
    return _cast(em, x, dst)


def _cast(em: Emitter, x: View, dst: Attribute) -> View:
    """tosa.cast, through f32 or i32 where TOSA casts no such pair directly (IREE refuses
    them): two floats neither of which is f32 (f16 <-> bf16, fp8 <-> f16), i1 or an integer and
    an fp8 or a float other than f32, i64 and an integer narrower than i32 (TOSA casts i64 only
    to and from i32; the hop sign-extends, `_convert` zero-extends an unsigned source first).
    Each hop is exact or rounds once, as the direct cast would."""
    src = x.element_type
    if src == dst:
        return x
    floats = [t for t in (src, dst) if is_float(t)]
    via: Attribute | None = None
    if floats and f32 not in floats:
        narrow = any(numpy_dtype(t).itemsize == 1 for t in floats)
        if len(floats) == 2 or narrow or i1 in (src, dst):
            via = f32
    elif (
        64 in (integer_width(src), integer_width(dst))
        and min(integer_width(src) or 64, integer_width(dst) or 64) < 32
    ):
        via = i32
    if via is not None:
        x = unary_view(em, tosa.CastOp, x, via)
    return unary_view(em, tosa.CastOp, x, dst)


# -- comparisons -----------------------------------------------------------------------------------

_COMPARE: dict[type[Operation], tuple[type[tosa.TosaOp], bool]] = {
    mx.GreaterOp: (tosa.GreaterOp, False),
    mx.GreaterOrEqualOp: (tosa.GreaterEqualOp, False),
    mx.LessOp: (tosa.GreaterOp, True),
    mx.LessOrEqualOp: (tosa.GreaterEqualOp, True),
    mx.EqualOp: (tosa.EqualOp, False),
}


@lowers(CORE_LOWERINGS, *_COMPARE)
def _compare(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """tosa.greater/greater_equal/equal (less: operands swapped) on i32 or the float type, then
    1/0 in the result type with a select (a cast from i1 to a float is outside TOSA's profile)."""
    em = lw.em
    cls, swap = _COMPARE[type(op)]
    element = operand_element(op, 0)
    a, b = (in_int_domain(em, v, element) for v in args)
    if swap:
        a, b = b, a
    lens, hint = result_type(op).lens, declared_frame(op)
    cond = elementwise_views(em, cls, [a, b], lens, i1, hint=hint)
    out = signless(result_element(op))
    if out == i1:
        return cond
    rank = len(cond.base_shape)
    one, zero = (View.plain(em.scalar(out, v, rank)) for v in (1, 0))
    return elementwise_views(em, tosa.SelectOp, [cond, one, zero], lens, out)


# -- reductions and softmax ------------------------------------------------------------------------

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


@lowers(CORE_LOWERINGS, *_REDUCE)
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


@lowers(CORE_LOWERINGS, mx.SoftmaxOp)
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


# -- dot -------------------------------------------------------------------------------------------


@lowers(CORE_LOWERINGS, mx.DotOp)
def _dot(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """[..., M, K] x [..., K, N]: batch dims flattened into tosa.matmul's batch.

    When the rhs is the same matrix for every batch (its batch dims are broadcast), the lhs batch
    folds into M instead: one [1, B*M, K] x [1, K, N] matmul, and the rhs is never tiled.
    """
    a, b = args
    em = lw.em
    lens = result_type(op).lens
    rank = len(lens)
    batch = math.prod(lens[:-2])
    m, k, n = a.lens[-2], a.lens[-1], b.lens[-1]
    shared_rhs = batch > 1 and all(d in b.broadcast_dims() for d in range(rank - 2) if lens[d] > 1)
    if shared_rhs:  # one matrix: a broadcast K or N dim of it is tiled, never its batch
        matrix = in_frame(em, b, range(rank))
        k_stored, n_stored = shape_of(matrix)[-2:]
        tiled = em.tile(matrix, [1] * (rank - 2) + [k // k_stored, n // n_stored])
        rhs = em.reshape(tiled, [1, k, n])
        lhs = em.reshape(logical(em, a), [1, batch * m, k])
        rows = batch * m
        batch = 1
    else:
        lhs = em.reshape(logical(em, a), [batch, m, k])
        rhs = em.reshape(logical(em, b), [batch, k, n])
        rows = m
    et = a.element_type
    # f16/bf16 products accumulate in f32 and round once (an f16 accumulator loses ~K/2 ulps).
    # Bytes as TOSA's i8 x i8 -> i32 (exact below 2^17 products; an i8 sum would overflow, a
    # REQUIRE), narrowed back: the low 8 bits of the product sum do not depend on the sign.
    acc = f32 if et in (f16, bf16) else i32 if _bytes(op) and k < 1 << 17 else et
    shape = [batch, rows, n]
    if integer_width(result_element(op)) == 16 and k < 1 << 16:
        result = View.plain(em.reshape(_matmul16(em, lhs, rhs, shape), lens))
        return unary_view(em, tosa.CastOp, result, et)
    zp = em.zero_point(et)
    out = em.add(tosa.MatMulOp([lhs, rhs, zp, zp], TensorType(acc, shape)))
    result = View.plain(em.reshape(out, lens))
    return result if acc == et else unary_view(em, tosa.CastOp, result, et)


def _matmul16(em: Emitter, lhs: SSAValue, rhs: SSAValue, shape: list[int]) -> SSAValue:
    """A 16-bit product sum modulo 2^16 (as i32) from TOSA's i8 x i8 -> i32 matmuls (it has no
    i16 x i16 -> i16; i48 accumulation aside). Each value is 256 * high + low with low its
    low byte as i8 and high (x - low) / 256 wrapped to i8 (only its low 8 bits reach the low
    16 bits of a product): the sum is low * low + 256 * (high * low + low * high) modulo 2^16,
    the high * high part being a multiple of 2^16. Below 2^16 products every step is exact."""
    zp = em.zero_point(i8)

    def limbs(x: SSAValue) -> tuple[SSAValue, SSAValue]:
        value = View.plain(x)
        low = unary_view(em, tosa.CastOp, value, i8)
        rest = binary_view(
            em,
            tosa.SubOp,
            unary_view(em, tosa.CastOp, value, i32),
            unary_view(em, tosa.CastOp, low, i32),
            value.lens,
        )
        high = unary_view(em, tosa.CastOp, shift_right(em, rest, 8, arithmetic=True), i8)
        return low.base, high.base

    def matmul(a: SSAValue, b: SSAValue) -> View:
        return View.plain(em.add(tosa.MatMulOp([a, b, zp, zp], TensorType(i32, shape))))

    (a_low, a_high), (b_low, b_high) = limbs(lhs), limbs(rhs)
    cross = binary_view(em, tosa.AddOp, matmul(a_high, b_low), matmul(a_low, b_high), shape)
    cross = unary_view(em, tosa.CastOp, unary_view(em, tosa.CastOp, cross, i8), i32)
    cross = binary_view(em, tosa.MulOp, cross, scalar_like(em, i32, 256, cross), shape)
    return binary_view(em, tosa.AddOp, cross, matmul(a_low, b_low), shape).base


def _bytes(op: Operation) -> bool:
    """An 8-bit integer result (si8 or ui8; C++ converts the wider sum back: a wrap)."""
    return integer_width(result_element(op)) == 8


# -- convolution -----------------------------------------------------------------------------------


@lowers(CORE_LOWERINGS, mx.ConvolutionOp)
def _conv(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    assert isinstance(op, mx.ConvolutionOp)
    em = lw.em
    x, w = args
    nsp = len(x.lens) - 2
    out_lens = result_type(op).lens
    et = x.element_type
    if not is_float(et):
        raise lowering_error(op, f"convolution on {et} has no TOSA lowering here (floats only)")
    group = int_value(op, "group")
    begins, ends = op.explicit_padding()
    strides = int_list(op, "stride")
    dilations = int_list(op, "dilation")
    frame = channels_last(nsp)
    xt = materialize(em, x, frame)  # [N, *S, C]
    wt = materialize(em, w, frame)  # [O, *K, I]
    kernel = w.lens[2:]
    xt, begins, ends = fit_strides(em, xt, x.lens[2:], kernel, strides, dilations, begins, ends)
    if nsp == 1:  # a unit H dim makes it 2-D
        xt = em.reshape(xt, [shape_of(xt)[0], 1, *shape_of(xt)[1:]])
        wt = em.reshape(wt, [shape_of(wt)[0], 1, *shape_of(wt)[1:]])
        begins, ends = [0, *begins], [0, *ends]
        strides, dilations = [1, *strides], [1, *dilations]
    pad = [v for b, e in zip(begins, ends, strict=True) for v in (b, e)]
    tosa_nsp = max(nsp, 2)
    out_spatial = list(out_lens[2:]) if nsp > 1 else [1, out_lens[2]]
    channels, out_channels = x.lens[1], out_lens[1]
    props = tosa.conv_properties(pad, strides, dilations, float_accumulator(op, et))
    zp = em.zero_point(et)
    out_shape = [out_lens[0], *out_spatial]
    if group == 1:
        cls = tosa.Conv3DOp if tosa_nsp == 3 else tosa.Conv2DOp
        y = _conv_op(em, cls, xt, wt, out_shape + [out_channels], props, zp)
    elif tosa_nsp == 2 and group == channels and w.lens[1] == 1:
        multiplier = out_channels // channels
        # OHWI with I = 1 -> HW1O -> HWCM (O = c * M + m)
        hwio = em.transpose(wt, [1, 2, 3, 0])
        kh, kw = shape_of(hwio)[:2]
        hwcm = em.reshape(hwio, [kh, kw, channels, multiplier])
        y = _conv_op(em, tosa.DepthwiseConv2DOp, xt, hwcm, out_shape + [out_channels], props, zp)
    else:
        cls = tosa.Conv3DOp if tosa_nsp == 3 else tosa.Conv2DOp
        per_in, per_out = channels // group, out_channels // group
        parts = []
        for g in range(group):
            xs, ws = shape_of(xt), shape_of(wt)
            xg = em.slice(xt, [0] * (len(xs) - 1) + [g * per_in], [*xs[:-1], per_in])
            wg = em.slice(wt, [g * per_out] + [0] * (len(ws) - 1), [per_out, *ws[1:]])
            parts.append(_conv_op(em, cls, xg, wg, out_shape + [per_out], props, zp))
        y = em.concat(parts, len(out_shape))
    if nsp == 1:
        y = em.reshape(y, [out_lens[0], out_lens[2], out_lens[1]])
    return View(y, frame, out_lens)


def _conv_op(
    em: Emitter,
    cls: type[tosa.TosaOp],
    xt: SSAValue,
    wt: SSAValue,
    out_shape: list[int],
    props: dict[str, Attribute],
    zp: SSAValue,
) -> SSAValue:
    et = element_type_of(xt)
    bias = em.zero_point(et)  # a tensor<1xT> bias broadcasts over the output channels
    return em.add(cls([xt, wt, bias, zp, zp], TensorType(et, out_shape), props))


# -- literal ---------------------------------------------------------------------------------------


@lowers(CORE_LOWERINGS, LiteralOp)
def _literal(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """A splat stays a broadcast `tensor<1x..x1>` constant; anything else is a full constant."""
    assert isinstance(op, LiteralOp)
    ty = result_type(op)
    value = op.value
    value_type = value.get_type()
    assert isinstance(value_type, TensorType)
    shape = tuple(value_type.get_shape())
    element = signless(ty.element_type)
    full = shape == ty.lens and not (value.is_splat() and math.prod(shape) > 1)
    if full and element == ty.element_type:
        return View.plain(lw.em.const(value))
    values: list[Any] = list(value.get_values()) if full else [next(iter(value.get_values()))]
    if element != ty.element_type:  # the same bits in the signless type (ui8 200 -> i8 -56)
        dtype = numpy_dtype(ty.element_type)
        values = np.asarray(values, dtype=dtype).view(dtype.str.replace("u", "i")).tolist()
    if full:
        return View.plain(lw.em.const(tosa.dense(element, shape, values)))
    const = lw.em.const(tosa.dense(element, [1] * len(ty.lens), values))
    return View(const, tuple(range(len(ty.lens))), ty.lens)


# The ops that compute on their elements' values (not data movement, casts or contractions):
# TOSA's fp8 extensions (f8E4M3FN, f8E5M2) have none of them, so the function lowering runs
# these on f32 and rounds once (as MIGraphX's fp8 arithmetic does, through float).
ELEMENTWISE_OPS: frozenset[type[Operation]] = frozenset(
    {*_BINARY, *_UNARY, *_COMPARE, mx.DivOp, mx.SqrtOp, mx.ReluOp, mx.ClipOp, mx.SoftmaxOp}
)
