"""Lowerings of the quantization ops: one per op, `(lowering, op, operand views) -> view`.

Integers are signless in TOSA; the sign-explicit migraphx type of each operand says how its bits
read (a `ui8` byte 0xFF is 255, an `si8` one -1). 4-bit values travel as i8 (IREE refuses i4
tensors outside conv weights). TOSA has no division or rounding op: quantize multiplies by the
f32 reciprocal of the scale, as rocMLIR does, and lets `tosa.cast` round half to even.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    binary_view,
    elementwise_views,
    is_float,
    logical,
    materialize,
    scalar_like,
    shape_of,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.integer_domain import (
    clamp_i32,
    halves_to_float,
    int_bounds,
    int_difference,
    int_halves,
    int_width,
    shift_left,
    shift_right,
    widen,
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
    lowering_error,
    result_type,
)
from convcanon.migraphx import quant_ops as qx
from convcanon.migraphx.op_base import int_list, int_value, operand_element
from convcanon.migraphx.shaped_type import is_unsigned, numpy_dtype
from convcanon.tosa import ops as tosa
from convcanon.tosa import quant_ops as tq

# The lowerings of this family, each registered against its op class by `@lowers`.
QUANT_LOWERINGS: LoweringTable = {}

# -- element types ---------------------------------------------------------------------------------


def tosa_type(element_type: Attribute) -> Attribute:
    """The TOSA element type of a migraphx one: integers signless, 4-bit ones held in i8."""
    if isinstance(element_type, IntegerType) and element_type.width.data > 1:
        return IntegerType(max(element_type.width.data, 8))
    return element_type


# -- dequantize / quantize -------------------------------------------------------------------------


def _as_compute(em: Emitter, v: View, element_type: Attribute, compute: Attribute) -> View:
    """A view converted by value to the float `compute`, rounded once (tosa.cast rounds a
    signed integer once; ui32 goes by halves)."""
    if is_float(element_type):
        return v if v.element_type == compute else unary_view(em, tosa.CastOp, v, compute)
    if not is_unsigned(element_type):
        return unary_view(em, tosa.CastOp, v, compute)
    high, low = int_halves(em, v, element_type)
    return halves_to_float(em, high, low, v.lens, compute)


@lowers(QUANT_LOWERINGS, qx.DeQuantizeLinearOp)
def _dequantize(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """(x - z) * scale: the difference exact (two integers as i32 halves, else in the compute
    type, which holds both), rounded once to the compute type, multiplied there, rounded to
    the result type."""
    em = lw.em
    x, scale, *zero = args
    out = result_type(op)
    lens, target = out.lens, out.element_type
    types = [operand_element(op, 0)] + ([operand_element(op, 2)] if zero else [])
    wide = [t for t in types if isinstance(t, IntegerType) and int_width(t) > 32]
    if wide and (zero or is_unsigned(wide[0])):  # a lone signed one converts with one cast
        raise lowering_error(op, f"with {wide[0]} operands has no exact TOSA lowering here")
    compute = qx.dequantize_compute_type(types[0], types[1] if zero else None, target)
    if isinstance(compute, Float64Type) and Float64Type() not in [*types, target]:
        raise lowering_error(
            op,
            f"of {types[0]} with a {types[1]} zero point has no exact TOSA lowering: only f64 "
            "holds both exactly, and IREE computes f64 in f32",
        )
    if zero and not any(is_float(t) for t in types):
        high, low = int_difference(em, x, types[0], zero[0], types[1], lens)
        value = halves_to_float(em, high, low, lens, compute)
    else:
        value = _as_compute(em, x, types[0], compute)
        if zero:
            value = binary_view(
                em, tosa.SubOp, value, _as_compute(em, zero[0], types[1], compute), lens
            )
    scale = _as_compute(em, scale, scale.element_type, compute)
    y = elementwise_views(em, tosa.MulOp, [value, scale], lens, hint=declared_frame(op))
    return y if target == compute else unary_view(em, tosa.CastOp, y, target)


def _clamp_float(em: Emitter, v: View, low: float, high: float) -> View:
    """A float tosa.clamp (IREE accepts it, unlike an i32 one)."""
    et = v.element_type
    props: dict[str, Attribute] = {"min_val": FloatAttr(low, et), "max_val": FloatAttr(high, et)}  # type: ignore[arg-type]
    return View(em.add(tosa.ClampOp([v.base], v.base.type, props)), v.perm, v.lens)


def _scaled(em: Emitter, x: View, scale: View, lens: Sequence[int]) -> View:
    """x * reciprocal(scale) in f32 (f64 stays f64)."""
    compute = Float64Type() if isinstance(x.element_type, Float64Type) else Float32Type()
    if x.element_type != compute:
        x = unary_view(em, tosa.CastOp, x, compute)
        scale = unary_view(em, tosa.CastOp, scale, compute)
    inverse = unary_view(em, tosa.ReciprocalOp, scale)
    return elementwise_views(em, tosa.MulOp, [x, inverse], lens)


@lowers(QUANT_LOWERINGS, qx.QuantizeLinearOp)
def _quantize(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """x * reciprocal(scale), rounded half to even, plus the zero point, saturated to the
    result type. With 16-bit results and zero points: tosa.cast to i32 (which rounds and
    saturates), a clamp that leaves room for the zero point, the add, the clamp to the result
    type, the cast (exact after the clamp). Wider ones: see `_quantize_wide`."""
    em = lw.em
    x, scale, *zero = args
    out = result_type(op)
    target = out.element_type
    if is_float(target):
        return _quantize_fp8(lw, op, args)
    zero_type = operand_element(op, 2) if zero else None
    widths = [int_width(target)] + ([int_width(zero_type)] if zero_type is not None else [])
    if max(widths) > 32:
        raise lowering_error(op, "with 64-bit integers has no lowering here")
    scaled = _scaled(em, x, scale, out.lens)
    if max(widths) > 16:
        q = _quantize_wide(em, scaled, zero[0] if zero else None, zero_type, target, out.lens)
        return q if int_width(target) == 32 else unary_view(em, tosa.CastOp, q, tosa_type(target))
    q = unary_view(em, tosa.CastOp, scaled, i32)
    if zero:
        q = clamp_i32(em, q, -(1 << 30), 1 << 30)  # room for any 16-bit zero point
        zp = widen(em, zero[0], operand_element(op, 2))
        q = binary_view(em, tosa.AddOp, q, zp, out.lens)
    low, high = int_bounds(target)
    q = clamp_i32(em, q, low, high)
    return unary_view(em, tosa.CastOp, q, tosa_type(target))


def _quantize_wide(
    em: Emitter,
    scaled: View,
    zero: View | None,
    zero_type: Attribute | None,
    target: Attribute,
    lens: Sequence[int],
) -> View:
    """saturate(round(scaled) + zero) for 32-bit results or zero points, exactly: neither f32
    nor i32 holds every sum, so it is taken as i32 halves (high * 2^16 + low).

    `scaled` is clamped to +-2^33 (beyond it every sum saturates), split into an integer high
    part (floor(q / 2^16), kept 0 below 2^23 where q may have a fraction) and the rest, which
    tosa.cast rounds half to even; the zero point's halves are added, the low carry moved up.
    Saturation compares the high half with the range's; the result is the i32 bits of the
    saturated value (ui32 above 2^31 as negative i32)."""
    compute = scaled.element_type
    q = _clamp_float(em, scaled, -(2.0**33), 2.0**33)
    large = elementwise_views(
        em,
        tosa.GreaterEqualOp,
        [unary_view(em, tosa.AbsOp, q), scalar_like(em, compute, 2.0**23, q)],
        lens,
        i1,
    )
    high_f = unary_view(
        em,
        tosa.FloorOp,
        binary_view(em, tosa.MulOp, q, scalar_like(em, compute, 2.0**-16, q), lens),
    )
    high_f = elementwise_views(
        em, tosa.SelectOp, [large, high_f, scalar_like(em, compute, 0.0, q)], lens
    )
    shifted = binary_view(em, tosa.MulOp, high_f, scalar_like(em, compute, 65536.0, q), lens)
    high = unary_view(em, tosa.CastOp, high_f, i32)
    low = unary_view(em, tosa.CastOp, binary_view(em, tosa.SubOp, q, shifted, lens), i32)
    if zero is not None and zero_type is not None:
        z_high, z_low = int_halves(em, zero, zero_type)
        low = binary_view(em, tosa.AddOp, low, z_low, lens)
        if z_high is not None:
            high = binary_view(em, tosa.AddOp, high, z_high, lens)
    high = binary_view(em, tosa.AddOp, high, shift_right(em, low, 16, arithmetic=True), lens)
    low = binary_view(em, tosa.BitwiseAndOp, low, scalar_like(em, i32, 0xFFFF, low), lens)
    bottom, top = int_bounds(target)
    if int_width(target) < 32:  # a high half of -2..1 keeps high * 2^16 + low inside i32
        high = clamp_i32(em, high, (bottom >> 16) - 1, (top >> 16) + 1)
        value = binary_view(em, tosa.AddOp, shift_left(em, high, 16), low, lens)
        return clamp_i32(em, value, bottom, top)
    over = elementwise_views(
        em, tosa.GreaterOp, [high, scalar_like(em, i32, top >> 16, high)], lens, i1
    )
    under = elementwise_views(
        em, tosa.GreaterOp, [scalar_like(em, i32, bottom >> 16, high), high], lens, i1
    )
    high = clamp_i32(em, high, bottom >> 16, top >> 16)
    low = elementwise_views(em, tosa.SelectOp, [under, scalar_like(em, i32, 0, low), low], lens)
    low = elementwise_views(em, tosa.SelectOp, [over, scalar_like(em, i32, 0xFFFF, low), low], lens)
    return binary_view(em, tosa.AddOp, shift_left(em, high, 16), low, lens)


def _quantize_fp8(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """x * reciprocal(scale) + zero point in f32, clamped to the fp8 type's largest finite value
    (a float tosa.clamp), then tosa.cast (round to nearest even)."""
    import ml_dtypes

    em = lw.em
    x, scale, *zero = (_to_f32(lw.em, v) for v in args)
    out = result_type(op)
    value = _scaled(em, x, scale, out.lens)
    if zero:
        value = binary_view(em, tosa.AddOp, value, zero[0], out.lens)
    largest = float(ml_dtypes.finfo(numpy_dtype(out.element_type)).max)
    return unary_view(em, tosa.CastOp, _clamp_float(em, value, -largest, largest), out.element_type)


# -- quant_dot -------------------------------------------------------------------------------------


def _to_f32(em: Emitter, v: View) -> View:
    return v if v.element_type == f32 else unary_view(em, tosa.CastOp, v, f32)


def _offset_unsigned(em: Emitter, v: View, element_type: Attribute) -> tuple[View, SSAValue]:
    """A ui8 view as (v - 128) in i8 (its top bit flipped) and the zero point -128 that TOSA's
    i8 matmul/conv subtracts back, so the products are of the unsigned values; an i8 view
    as it is with zero point 0."""
    if not is_unsigned(element_type):
        return v, em.zero_point(v.element_type)
    top = scalar_like(em, v.element_type, -128, v)
    flipped = binary_view(em, tosa.BitwiseXorOp, v, top, v.lens)
    return flipped, em.scalar(v.element_type, -128, 1)


def _matmul(
    em: Emitter,
    a: View,
    b: View,
    lens: Sequence[int],
    out_type: Attribute,
    zero_points: tuple[SSAValue, SSAValue] | None = None,
) -> View:
    """[..., M, K] x [..., K, N] with equal batch dims as one batched tosa.matmul."""
    batch = math.prod(lens[:-2])
    m, k, n = a.lens[-2], a.lens[-1], b.lens[-1]
    lhs = em.reshape(logical(em, a), [batch, m, k])
    rhs = em.reshape(logical(em, b), [batch, k, n])
    a_zp, b_zp = zero_points or (em.zero_point(a.element_type),) * 2
    y = em.add(tosa.MatMulOp([lhs, rhs, a_zp, b_zp], TensorType(out_type, [batch, m, n])))
    return View.plain(em.reshape(y, lens))


@lowers(QUANT_LOWERINGS, qx.QuantDotOp)
def _quant_dot(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """int8: tosa.matmul i8 x i8 -> i32; fp8 and block-scaled f4E2M1FN: f32 operands (each
    element times its scale), f32 matmul."""
    em = lw.em
    out = result_type(op)
    lens = out.lens
    source = operand_element(op, 0)
    if len(args) == 4:
        a, b, sa, sb = (_to_f32(em, v) for v in args)
        a = binary_view(em, tosa.MulOp, a, sa, a.lens)
        b = binary_view(em, tosa.MulOp, b, sb, b.lens)
        return _matmul(em, a, b, lens, f32)
    a, b = args
    if is_float(source):
        return _matmul(em, _to_f32(em, a), _to_f32(em, b), lens, f32)
    a, a_zp = _offset_unsigned(em, a, source)
    b, b_zp = _offset_unsigned(em, b, source)
    return _matmul(em, a, b, lens, tosa_type(out.element_type), (a_zp, b_zp))


# -- quant_convolution -----------------------------------------------------------------------------


def _conv_kernel(
    em: Emitter,
    xt: SSAValue,
    wt: SSAValue,
    out_shape: list[int],
    props: dict[str, Attribute],
    group: int,
    depthwise: bool,
    out_type: Attribute,
    zero_points: tuple[SSAValue, SSAValue],
) -> SSAValue:
    """conv2d/conv3d (per-group slices + concat) or depthwise_conv2d on NHWC x OHWI."""
    x_zp, w_zp = zero_points
    bias = em.zero_point(out_type)
    if depthwise:
        kh, kw, channels = shape_of(wt)[1], shape_of(wt)[2], shape_of(xt)[-1]
        hwio = em.transpose(wt, [1, 2, 3, 0])  # OHWI with I = 1 -> HW1O -> HWCM
        hwcm = em.reshape(hwio, [kh, kw, channels, out_shape[-1] // channels])
        ty = TensorType(out_type, out_shape)
        return em.add(tosa.DepthwiseConv2DOp([xt, hwcm, bias, x_zp, w_zp], ty, props))
    cls = tosa.Conv3DOp if len(out_shape) == 5 else tosa.Conv2DOp
    xs, ws = shape_of(xt), shape_of(wt)
    per_in, per_out = xs[-1] // group, ws[0] // group
    parts = []
    for g in range(group):
        xg = em.slice(xt, [0] * (len(xs) - 1) + [g * per_in], [*xs[:-1], per_in])
        wg = em.slice(wt, [g * per_out] + [0] * (len(ws) - 1), [per_out, *ws[1:]])
        ty = TensorType(out_type, [*out_shape[:-1], per_out])
        parts.append(em.add(cls([xg, wg, bias, x_zp, w_zp], ty, props)))
    return em.concat(parts, len(out_shape) - 1)


@lowers(QUANT_LOWERINGS, qx.QuantConvolutionOp)
def _quant_convolution(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """int8 conv with an i32 accumulator (ui8 operands top-bit flipped, zero points -128);
    fp8 operands as f32."""
    assert isinstance(op, qx.QuantConvolutionOp)
    em = lw.em
    x, w = args
    source = operand_element(op, 0)
    out = result_type(op)
    if is_float(source):
        x, w, acc, out_type = _to_f32(em, x), _to_f32(em, w), f32, f32
    else:
        acc = out_type = tosa_type(out.element_type)
    nsp = len(x.lens) - 2
    frame = channels_last(nsp)
    xt, wt = materialize(em, x, frame), materialize(em, w, frame)
    begins, ends = op.explicit_padding()
    strides, dilations = int_list(op, "stride"), int_list(op, "dilation")
    # Any explicit pad here fills 0, which is the value 0 only before a ui8 operand's top bit
    # is flipped: flip after it (the flipped pad then reads -128, the zero point, contributing
    # nothing, as the conv's own padding does).
    xt, begins, ends = fit_strides(em, xt, x.lens[2:], w.lens[2:], strides, dilations, begins, ends)
    group = int_value(op, "group")
    depthwise = nsp <= 2 and group > 1 and group == x.lens[1] and w.lens[1] == 1
    if depthwise and not is_float(source) and any(begins + ends):
        # IREE 3.13 decomposes a padded integer depthwise conv into an ill-typed tosa.pad (i32
        # padding of an i8 input): pad here instead, before the flip, and give the conv none.
        # A 1x1 one it folds that pad back into, so that is lowered as grouped convs instead.
        if math.prod(w.lens[2:]) == 1:
            depthwise = False
        else:
            xt = em.pad_zero(xt, [0, *begins, 0], [0, *ends, 0])
            begins, ends = [0] * nsp, [0] * nsp
    if is_float(source):
        zero_points = (em.zero_point(f32), em.zero_point(f32))
    else:
        (xv, x_zp), (wv, w_zp) = (_offset_unsigned(em, View.plain(v), source) for v in (xt, wt))
        xt, wt, zero_points = xv.base, wv.base, (x_zp, w_zp)
    spatial = list(out.lens[2:])
    if nsp == 1:  # a unit H dim makes it 2-D
        xt = em.reshape(xt, [shape_of(xt)[0], 1, *shape_of(xt)[1:]])
        wt = em.reshape(wt, [shape_of(wt)[0], 1, *shape_of(wt)[1:]])
        begins, ends, spatial = [0, *begins], [0, *ends], [1, *spatial]
        strides, dilations = [1, *strides], [1, *dilations]
    pad = [v for b, e in zip(begins, ends, strict=True) for v in (b, e)]
    props = tosa.conv_properties(pad, strides, dilations, acc)
    out_shape = [out.lens[0], *spatial, out.lens[1]]
    y = _conv_kernel(em, xt, wt, out_shape, props, group, depthwise, out_type, zero_points)
    if nsp == 1:
        y = em.reshape(y, [out.lens[0], out.lens[2], out.lens[1]])
    return View(y, frame, out.lens)


# -- backwards_data_convolution --------------------------------------------------------------------


def _dilate_kernel(em: Emitter, wt: SSAValue, dilation: Sequence[int]) -> SSAValue:
    """OHWI weights with d-1 zero rows/columns after each tap (TOSA's transpose_conv2d has no
    dilation): reshape to [O, KH, 1, KW, 1, I], pad the unit dims to d, reshape. The kernel
    keeps the d-1 trailing zeros of its last tap (they only scatter zeros past the taps' reach,
    which the caller's slice drops): slicing them off is a strided copy IREE 3.13 fails to
    compile for some shapes (`vector.gather` on a strided memref left as an
    unrealized_conversion_cast). A unit kernel dim has no dilation to spread."""
    o, kh, kw, i = shape_of(wt)
    dh, dw = (d if k > 1 else 1 for k, d in zip((kh, kw), dilation, strict=True))
    if dh == dw == 1:
        return wt
    spread = em.reshape(wt, [o, kh, 1, kw, 1, i])
    spread = em.pad_zero(spread, [0] * 6, [0, 0, dh - 1, 0, dw - 1, 0])
    return em.reshape(spread, [o, kh * dh, kw * dw, i])


def _group_block(em: Emitter, t: SSAValue, group: int, g: int, perm: Sequence[int]) -> SSAValue:
    """Group `g`'s block of `t` (its first dim holds `group` blocks), transposed by `perm`. The
    slice is of one contiguous chunk: IREE 3.13 fails to compile some standalone strided
    copies (a channel slice with one channel per group: `vector.gather` on a strided memref
    left as an unrealized_conversion_cast)."""
    if group > 1:
        shape = list(shape_of(t))
        per = shape[0] // group
        blocks = em.reshape(t, [group, per, *shape[1:]])
        block = em.slice(blocks, [g, *[0] * len(shape)], [1, per, *shape[1:]])
        t = em.reshape(block, [per, *shape[1:]])
    return em.transpose(t, perm)


@lowers(QUANT_LOWERINGS, qx.BackwardsDataConvolutionOp)
def _backwards_data_convolution(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """1-D/2-D: tosa.transpose_conv2d per group (no out_pad; the dilation spread into the
    kernel), then a slice drops the padding: the transposed conv scatters x[i] * w[r] to
    i*s + r*d, MIGraphX's output starts at pad_begin. 3-D: a forward conv3d (below)."""
    assert isinstance(op, qx.BackwardsDataConvolutionOp)
    em = lw.em
    x, w = args
    nsp = len(x.lens) - 2
    if nsp == 3:
        return _backwards_data_convolution_3d(lw, op, args)
    out = result_type(op)
    et = out.element_type
    group = int_value(op, "group")
    strides, dilations = int_list(op, "stride"), int_list(op, "dilation")
    begins, _ = op.explicit_padding()
    frame = (0, 3, 1, 2) if nsp == 2 else (0, 2, 1)
    xk = materialize(em, x, (1, 0, 2, 3) if nsp == 2 else (1, 0, 2))  # [K, N, *S]
    wk = materialize(em, w)  # [K, C/g, *R]
    if nsp == 1:
        xk = em.reshape(xk, [*shape_of(xk)[:2], 1, shape_of(xk)[2]])
        wk = em.reshape(wk, [*shape_of(wk)[:2], 1, shape_of(wk)[2]])
        strides, dilations, begins = [1, *strides], [1, *dilations], (0, *begins)
    props = tq.transpose_conv_properties([0, 0, 0, 0], list(strides), float_accumulator(op, et))
    zp, bias = em.zero_point(et), em.zero_point(et)
    parts = []
    for g in range(group):
        xg = _group_block(em, xk, group, g, [1, 2, 3, 0])  # [N, H, W, K/g]
        wg = _group_block(em, wk, group, g, [1, 2, 3, 0])  # [C/g, KH, KW, K/g]
        wg = _dilate_kernel(em, wg, dilations)
        n, h, wdt, _ = shape_of(xg)
        per_out, kh, kw, _ = shape_of(wg)
        ty = TensorType(et, [n, (h - 1) * strides[0] + kh, (wdt - 1) * strides[1] + kw, per_out])
        parts.append(em.add(tq.TransposeConv2DOp([xg, wg, bias, zp, zp], ty, props)))
    y = em.concat(parts, 3)
    spatial = [1, *out.lens[2:]] if nsp == 1 else list(out.lens[2:])
    y = em.slice(y, [0, begins[0], begins[1], 0], [out.lens[0], *spatial, out.lens[1]])
    if nsp == 1:
        y = em.reshape(y, [out.lens[0], out.lens[2], out.lens[1]])
    return View(y, frame, out.lens)


def _interior_pad(em: Emitter, xt: SSAValue, dim: int, stride: int) -> SSAValue:
    """stride-1 zeros between the elements of `dim` (a reshape adds a unit dim after it, a pad
    grows it to `stride`, a reshape merges them, a slice drops the trailing zeros)."""
    if stride == 1:
        return xt
    shape = list(shape_of(xt))
    n = shape[dim]
    spread = em.reshape(xt, [*shape[: dim + 1], 1, *shape[dim + 1 :]])
    high = [0] * (len(shape) + 1)
    high[dim + 1] = stride - 1
    spread = em.pad_zero(spread, [0] * len(high), high)
    merged = [*shape[:dim], n * stride, *shape[dim + 1 :]]
    spread = em.reshape(spread, merged)
    size = [*shape[:dim], (n - 1) * stride + 1, *shape[dim + 1 :]]
    return em.slice(spread, [0] * len(shape), size)


def _backwards_data_convolution_3d(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """TOSA has no transpose_conv3d: a forward conv3d over the input with stride-1 zeros
    between its elements and `d(k-1) - pad` edges, with the kernel flipped (exact; it multiplies
    the inserted zeros)."""
    assert isinstance(op, qx.BackwardsDataConvolutionOp)
    em = lw.em
    x, w = args
    out = result_type(op)
    et = out.element_type
    group = int_value(op, "group")
    strides, dilations = int_list(op, "stride"), int_list(op, "dilation")
    begins, ends = op.explicit_padding()
    frame = (0, 4, 1, 2, 3)
    xt = materialize(em, x, frame)  # [N, D, H, W, K]
    wt = materialize(em, w, (4, 0, 1, 2, 3))  # [C/g, R1, R2, R3, K]
    for axis in (1, 2, 3):
        wt = em.add(tq.ReverseOp([wt], wt.type, {"axis": IntegerAttr(axis, i32)}))
    for i, s in enumerate(strides):
        xt = _interior_pad(em, xt, 1 + i, s)
    kernel = w.lens[2:]
    low = [d * (k - 1) - b for k, d, b in zip(kernel, dilations, begins, strict=True)]
    high = [d * (k - 1) - e for k, d, e in zip(kernel, dilations, ends, strict=True)]
    xt = em.pad_zero(xt, [0, *(max(v, 0) for v in low), 0], [0, *(max(v, 0) for v in high), 0])
    shape = shape_of(xt)
    start = [0, *(max(-v, 0) for v in low), 0]
    size = [n - a - max(-h, 0) for n, a, h in zip(shape, start, [0, *high, 0], strict=True)]
    xt = em.slice(xt, start, size)
    props = tosa.conv_properties([0] * 6, [1, 1, 1], dilations, float_accumulator(op, et))
    per_in, per_out = x.lens[1] // group, w.lens[1]
    zp = em.zero_point(et)
    parts = []
    for g in range(group):
        xs, ws = shape_of(xt), shape_of(wt)
        xg = em.slice(xt, [0, 0, 0, 0, g * per_in], [*xs[:4], per_in])
        wg = em.slice(wt, [0, 0, 0, 0, g * per_in], [*ws[:4], per_in])
        ty = TensorType(et, [out.lens[0], *out.lens[2:], per_out])
        parts.append(em.add(tosa.Conv3DOp([xg, wg, zp, zp, zp], ty, props)))
    return View(em.concat(parts, 4), frame, out.lens)


# -- unpack ----------------------------------------------------------------------------------------


@lowers(QUANT_LOWERINGS, qx.UnpackOp)
def _unpack(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Both nibbles in i32 (shifts and masks), interleaved along the axis by a concat on a new
    unit dim and a reshape, then cast to the result's TOSA type."""
    em = lw.em
    (x,) = args
    axis = qx.unpack_axis(op)
    out = result_type(op)
    wide = View.plain(logical(em, unary_view(em, tosa.CastOp, x, i32)))
    lens = wide.lens

    def const(value: int) -> View:
        return scalar_like(em, i32, value, wide)

    def shift(cls: type[tosa.TosaOp], v: View, amount: int) -> View:
        if cls is tq.ArithmeticRightShiftOp:
            ty = TensorType(i32, list(v.lens))
            base = em.add(cls([v.base, const(amount).base], ty, {"round": IntegerAttr(0, 1)}))
            return View.plain(base)
        return binary_view(em, cls, v, const(amount), lens)

    if qx.unpacked_signed(out.element_type):
        low = shift(tq.ArithmeticRightShiftOp, shift(tq.LogicalLeftShiftOp, wide, 28), 28)
        high = shift(tq.ArithmeticRightShiftOp, shift(tq.LogicalLeftShiftOp, wide, 24), 28)
    else:
        low = binary_view(em, tosa.BitwiseAndOp, wide, const(15), lens)
        high = binary_view(
            em, tosa.BitwiseAndOp, shift(tq.LogicalRightShiftOp, wide, 4), const(15), lens
        )
    stacked = [*lens[: axis + 1], 1, *lens[axis + 1 :]]
    parts = [em.reshape(v.base, stacked) for v in (low, high)]
    both = em.reshape(em.concat(parts, axis + 1), out.lens)
    return unary_view(em, tosa.CastOp, View.plain(both), tosa_type(out.element_type))
