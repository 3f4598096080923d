"""Lowerings of the migraphx ops that compute: `(lowering, op, operand views) -> result view`.

Elementwise ops, comparisons, dot, convolution and literals; reductions and softmax are
`reduce_lowerings`, the ops that only move elements `shape_lowerings`, the quantization family
`quant_lowerings`. Inside a
function every migraphx value is a `View` (see the emitter), so layouts flow through the graph
without transposes until an op needs a dim order; integers are computed as `integer_domain`
says.
"""

from __future__ import annotations

import math
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
    refuse_integer,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    float_accumulator,
    integer_width,
    lowering_error,
    result_element,
    result_type,
)
from convcanon.migraphx import ops as mx
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
# TOSA's fp8 extensions (f8E4M3FN, f8E5M2) have none of them (pooling: not as IREE runs them),
# so the function lowering runs these on f32 and rounds once (as MIGraphX's fp8 arithmetic
# does, through float).
ELEMENTWISE_OPS: frozenset[type[Operation]] = frozenset(
    {
        *_BINARY,
        *_UNARY,
        *_COMPARE,
        mx.DivOp,
        mx.SqrtOp,
        mx.ReluOp,
        mx.ClipOp,
        mx.SoftmaxOp,
        mx.PoolingOp,
    }
)
