"""Integer arithmetic of MIGraphX's types on TOSA's: what the core and the quantization lowerings
both need to compute exactly on signless integers.

TOSA is signless and its integer profile computes on i32: a migraphx integer is widened to i32
by its sign (`widen`), compared with the sign bit flipped when unsigned (`in_int_domain`),
narrowed back by wrapping (`from_int_domain`); a value of 32 bits that f32 cannot hold goes as
two i32 halves (`int_halves`); TOSA has no unsigned division, no truncation, no float-to-integer
conversion with MIGraphX's meaning: `unsigned_div32`, `trunc`, `float_to_integer` build them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, TensorType, f32, i1, i32, i64
from xdsl.ir import Attribute

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    binary_view,
    elementwise_views,
    scalar_like,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import integer_width
from convcanon.migraphx.shaped_type import is_unsigned, signless
from convcanon.tosa import ops as tosa
from convcanon.tosa import quant_ops as tq


def widen(em: Emitter, x: View, element: Attribute) -> View:
    """An integer narrower than 32 bits as i32, sign- or zero-extended by its migraphx type
    (unsigned nibbles, bytes and halves masked after the sign-extending cast: a ui4 value
    arrives as i4 or i8 bits)."""
    width = integer_width(element)
    if width is None or width >= 32:
        return x
    wide = x if x.element_type == i32 else unary_view(em, tosa.CastOp, x, i32)
    if not is_unsigned(element):
        return wide
    mask = View.plain(em.scalar(i32, (1 << width) - 1, len(wide.base_shape)))
    return elementwise_views(em, tosa.BitwiseAndOp, [wide, mask], wide.lens)


def zero_extend(em: Emitter, x: View, element: Attribute) -> View:
    """An unsigned integer as a wider signless one holding the same non-negative value
    (i32 for up to 16 bits, i64 for 32 bits)."""
    width = integer_width(element)
    if width is None or not is_unsigned(element) or width >= 64:
        return x
    if width < 32:
        return widen(em, x, element)
    wide = unary_view(em, tosa.CastOp, x, i64)
    mask = View.plain(em.scalar(i64, (1 << 32) - 1, len(wide.base_shape)))
    return elementwise_views(em, tosa.BitwiseAndOp, [wide, mask], wide.lens)


def order_bits(em: Emitter, x: View, element: Attribute) -> View:
    """Unsigned 32/64-bit values with the sign bit flipped: signed order is then unsigned order
    (its own inverse)."""
    width = integer_width(element)
    if width is None or width < 32 or not is_unsigned(element):
        return x
    flip = View.plain(em.scalar(x.element_type, -(1 << (width - 1)), len(x.base_shape)))
    return elementwise_views(em, tosa.BitwiseXorOp, [x, flip], x.lens)


def in_int_domain(em: Emitter, x: View, element: Attribute) -> View:
    """A value where TOSA's signed integer ops give the migraphx type's answer."""
    return order_bits(em, widen(em, x, element), element)


def from_int_domain(em: Emitter, x: View, element: Attribute) -> View:
    """Back to the migraphx type's bits (narrowing casts wrap, so sums and products stay exact)."""
    x = order_bits(em, x, element)
    target = signless(element)
    return x if x.element_type == target else unary_view(em, tosa.CastOp, x, target)


def wrapping_sum(
    em: Emitter,
    cls: type[tosa.TosaOp],
    args: Sequence[View],
    element: Attribute,
    lens: Sequence[int],
    hint: Sequence[int] | None,
) -> View:
    """a + b or a - b (`cls`: tosa.AddOp or SubOp) modulo 2^width, as MIGraphX's C++ computes
    it, with no TOSA ADD/SUB overflowing (a REQUIRE: TOSA's result would be unpredictable, though
    IREE wraps). Below 32 bits on i32, where the exact result fits, narrowed back (narrowing
    casts wrap); 32 bits likewise on i64; 64 bits as 2 * (a >> 1 +- b >> 1) + (a & 1 +- b & 1)
    with the low parts' carry moved into the high part first, so that the doubling (a MUL, whose
    i64 result is its low 64 bits) and the last add stay in range."""
    width = int_width(element)
    if width < 64:
        wide = [
            unary_view(em, tosa.CastOp, v, i64) if width == 32 else widen(em, v, element)
            for v in args
        ]
        out = elementwise_views(em, cls, wide, lens, hint=hint)
        return from_int_domain(em, out, signless(element))
    halves = [shift_right(em, v, 1, arithmetic=True) for v in args]
    odd = [binary_view(em, tosa.BitwiseAndOp, v, scalar_like(em, i64, 1, v), v.lens) for v in args]
    high = elementwise_views(em, cls, halves, lens, hint=hint)
    low = elementwise_views(em, cls, odd, lens, hint=hint)  # -1 .. 2
    high = binary_view(em, tosa.AddOp, high, shift_right(em, low, 1, arithmetic=True), lens)
    low = binary_view(em, tosa.BitwiseAndOp, low, scalar_like(em, i64, 1, low), lens)
    doubled = binary_view(em, tosa.MulOp, high, scalar_like(em, i64, 2, high), lens)
    return binary_view(em, tosa.AddOp, doubled, low, lens)


def wrapping_unary(em: Emitter, cls: type[tosa.TosaOp], x: View, element: Attribute) -> View:
    """Integer negate or abs as MIGraphX computes it: C++ promotes the value to int and converts
    the result back, so the answer wraps modulo 2^width (-(-128) and abs(-128) are -128 in
    int8). TOSA's NEGATE saturates instead (i8/i16 clip to the type; IREE clips i32 too) and
    NEGATE/ABS of a 32/64-bit minimum is outside TOSA (REQUIRE): narrower types run on i32,
    where no value overflows, and wrap when narrowed back; 32/64-bit ones map the minimum to
    itself with a select and give the op max(x, minimum + 1), which it can negate."""
    width = int_width(element)
    if width < 32:
        wide = unary_view(em, cls, widen(em, x, element))
        return from_int_domain(em, wide, signless(element))
    et = x.element_type
    minimum = scalar_like(em, et, -(1 << (width - 1)), x)
    safe = binary_view(
        em, tosa.MaximumOp, x, scalar_like(em, et, 1 - (1 << (width - 1)), x), x.lens
    )
    at_minimum = elementwise_views(em, tosa.EqualOp, [x, minimum], x.lens, i1)
    return elementwise_views(em, tosa.SelectOp, [at_minimum, x, unary_view(em, cls, safe)], x.lens)


def unsigned_div32(em: Emitter, a: View, b: View, lens: Sequence[int], hint: Sequence[int]) -> View:
    """Unsigned 32-bit a / b from signed i32 ops. A divisor of 2^31 or more (negative as i32)
    goes into a at most once: the quotient is a >= b, compared unsigned (both sign bits
    flipped). A smaller one divides a's upper 31 bits h = a >> 1 (logical) with tosa.intdiv,
    both non-negative: h = q1 * b + r1, so a = 2 * q1 * b + (2 * r1 + a's low bit), and the
    rest is b at most once, tested as r1 + low >= b - r1 (2 * r1 + low may not fit i32)."""

    def const(value: int) -> View:
        return View.plain(em.scalar(i32, value, len(lens)))

    def op(cls: type[tosa.TosaOp], *views: View, et: Attribute | None = None) -> View:
        return elementwise_views(em, cls, list(views), lens, et, hint)

    large = op(tosa.GreaterOp, const(0), b, et=i1)
    divisor = op(tosa.SelectOp, large, const(1), b)
    high = op(tq.LogicalRightShiftOp, a, const(1))
    low_bit = op(tosa.BitwiseAndOp, a, const(1))
    q1 = op(tosa.IntDivOp, high, divisor)
    r1 = op(tosa.SubOp, high, op(tosa.MulOp, q1, divisor))
    carry = op(tosa.GreaterEqualOp, op(tosa.AddOp, r1, low_bit), op(tosa.SubOp, divisor, r1), et=i1)
    small = op(
        tosa.AddOp, op(tq.LogicalLeftShiftOp, q1, const(1)), unary_view(em, tosa.CastOp, carry, i32)
    )
    sign = const(-(1 << 31))
    above = op(
        tosa.GreaterEqualOp, op(tosa.BitwiseXorOp, a, sign), op(tosa.BitwiseXorOp, b, sign), et=i1
    )
    return op(tosa.SelectOp, large, unary_view(em, tosa.CastOp, above, i32), small)


def bound_attr(et: Attribute, value: float) -> Attribute:
    if isinstance(et, IntegerType):
        low, high = int_bounds(et)
        return IntegerAttr(int(max(min(value, high), low)), et)
    return FloatAttr(value, et)  # type: ignore[arg-type]


def float_to_integer(em: Emitter, x: View, target: Attribute, out: Attribute | None = None) -> View:
    """Truncation toward zero where the value fits `target`; elsewhere (undefined in MIGraphX)
    MIGraphX's reference target's values: out-of-range values clamp to the bounds, NaN is 0.

    In f32 (exact for f16 and bf16): NaN to 0, truncate, clamp into the largest range of f32
    values inside the bounds, cast (unsigned values past the signed bound move down by 2^width
    first, so the signed cast keeps their bits; narrower unsigned types cast through i32), and
    the values past a bound select it. `out`: the integer type of the result (default: the
    signless `target`; int4 values come out in i8, which holds them)."""
    width = integer_width(target) or 0
    unsigned = is_unsigned(target)
    low, high = int_bounds(target)
    if x.element_type != f32:
        x = unary_view(em, tosa.CastOp, x, f32)
    rank = len(x.base_shape)

    def scalar(element: Attribute, value: float) -> View:
        return View.plain(em.scalar(element, value, rank))

    number = elementwise_views(em, tosa.EqualOp, [x, x], x.lens, i1)
    x = elementwise_views(em, tosa.SelectOp, [number, x, scalar(f32, 0.0)], x.lens, f32)
    x = trunc(em, x)
    low_f = float(np.float32(low))  # powers of two (or 0): exact
    high_f = float(np.nextafter(np.float32(2.0**width if unsigned else 2.0 ** (width - 1)), 0))
    above = elementwise_views(em, tosa.GreaterOp, [x, scalar(f32, high_f)], x.lens, i1)
    below = elementwise_views(em, tosa.GreaterOp, [scalar(f32, low_f), x], x.lens, i1)
    bounds = {"min_val": bound_attr(f32, low_f), "max_val": bound_attr(f32, high_f)}
    x = View(em.add(tosa.ClampOp([x.base], x.base.type, bounds)), x.perm, x.lens)
    carrier = i32 if width <= 32 else signless(target)
    carrier_width = max(width, 32)
    if unsigned and width == carrier_width:  # ui32, ui64: the upper half as negative bits
        half = scalar(f32, 2.0 ** (width - 1))
        upper = elementwise_views(em, tosa.GreaterEqualOp, [x, half], x.lens, i1)
        moved = elementwise_views(em, tosa.SubOp, [x, scalar(f32, 2.0**width)], x.lens)
        x = elementwise_views(em, tosa.SelectOp, [upper, moved, x], x.lens, f32)
    x = unary_view(em, tosa.CastOp, x, carrier)

    def bits(value: int) -> int:  # `value` as the carrier's two's complement bits
        return value - (1 << carrier_width) if value >= 1 << (carrier_width - 1) else value

    x = elementwise_views(em, tosa.SelectOp, [above, scalar(carrier, bits(high)), x], x.lens)
    x = elementwise_views(em, tosa.SelectOp, [below, scalar(carrier, bits(low)), x], x.lens)
    dst = out or signless(target)
    return x if x.element_type == dst else unary_view(em, tosa.CastOp, x, dst)


def unsigned32_to_f32(em: Emitter, x: View) -> View:
    """ui32 bits (in i32) -> f32, rounded once: high and low 16 bits convert exactly and their
    sum rounds (TOSA's profile has no i64 -> f32 cast)."""
    rank = len(x.base_shape)
    high_bits = View.plain(em.scalar(i32, -(1 << 16), rank))
    low_bits = View.plain(em.scalar(i32, (1 << 16) - 1, rank))
    high = unary_view(
        em, tosa.CastOp, elementwise_views(em, tosa.BitwiseAndOp, [x, high_bits], x.lens), f32
    )
    low = unary_view(
        em, tosa.CastOp, elementwise_views(em, tosa.BitwiseAndOp, [x, low_bits], x.lens), f32
    )
    zero = View.plain(em.scalar(f32, 0.0, rank))
    wrapped = elementwise_views(em, tosa.GreaterOp, [zero, high], x.lens, i1)
    lifted = elementwise_views(
        em, tosa.AddOp, [high, View.plain(em.scalar(f32, 2.0**32, rank))], x.lens
    )
    high = elementwise_views(em, tosa.SelectOp, [wrapped, lifted, high], x.lens, f32)
    return elementwise_views(em, tosa.AddOp, [high, low], x.lens)


def trunc(em: Emitter, x: View) -> View:
    """Rounded toward zero (TOSA has no trunc): ceil below zero, floor above."""
    rank = len(x.base_shape)
    zero = View.plain(em.scalar(x.element_type, 0, rank))
    negative = elementwise_views(em, tosa.GreaterOp, [zero, x], x.lens, i1)
    up = unary_view(em, tosa.CeilOp, x)
    down = unary_view(em, tosa.FloorOp, x)
    return elementwise_views(em, tosa.SelectOp, [negative, up, down], x.lens, x.element_type)


def shift_right(em: Emitter, v: View, amount: int, arithmetic: bool) -> View:
    """An i32 (or, sign-filling, i64) view shifted right by a constant, sign-filling or
    zero-filling."""
    et = v.element_type
    count = scalar_like(em, et, amount, v)
    if not arithmetic:
        return binary_view(em, tq.LogicalRightShiftOp, v, count, v.lens)
    ty = TensorType(et, list(v.base_shape))
    props: dict[str, Attribute] = {"round": IntegerAttr(0, 1)}
    return View(em.add(tq.ArithmeticRightShiftOp([v.base, count.base], ty, props)), v.perm, v.lens)


def int_halves(em: Emitter, x: View, element_type: Attribute) -> tuple[View | None, View]:
    """An integer view as i32 (high, low) with value = high * 2^16 + low, each small enough
    for f32 to hold exactly; integers of up to 16 bits are all low (no high half)."""
    wide = widen(em, x, element_type)
    if int_width(element_type) < 32:
        return None, wide
    high = shift_right(em, wide, 16, arithmetic=not is_unsigned(element_type))
    low = binary_view(em, tosa.BitwiseAndOp, wide, scalar_like(em, i32, 0xFFFF, wide), wide.lens)
    return high, low


def halves_to_float(
    em: Emitter, high: View | None, low: View, lens: Sequence[int], compute: Attribute
) -> View:
    """high * 2^16 + low in the float `compute`, rounded once (both parts convert exactly)."""
    value = unary_view(em, tosa.CastOp, low, compute)
    if high is None:
        return value
    upper = unary_view(em, tosa.CastOp, high, compute)
    upper = binary_view(em, tosa.MulOp, upper, scalar_like(em, compute, 65536.0, upper), upper.lens)
    return binary_view(em, tosa.AddOp, upper, value, lens)


def int_difference(
    em: Emitter, x: View, x_type: Attribute, z: View, z_type: Attribute, lens: Sequence[int]
) -> tuple[View | None, View]:
    """x - z as i32 halves, exact whatever the two integer types (no sum overflows i32)."""
    x_high, x_low = int_halves(em, x, x_type)
    z_high, z_low = int_halves(em, z, z_type)
    low = binary_view(em, tosa.SubOp, x_low, z_low, lens)
    if z_high is None:
        return x_high, low
    if x_high is None:
        zero = scalar_like(em, i32, 0, z_high)
        return binary_view(em, tosa.SubOp, zero, z_high, z_high.lens), low
    return binary_view(em, tosa.SubOp, x_high, z_high, lens), low


def int_width(element_type: Attribute) -> int:
    """The width of what the caller knows to be an integer type."""
    width = integer_width(element_type)
    assert width is not None, element_type
    return width


def int_bounds(element_type: Attribute) -> tuple[int, int]:
    """The smallest and largest value of an integer type."""
    width = int_width(element_type)
    if is_unsigned(element_type):
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def clamp_i32(em: Emitter, x: View, low: int, high: int) -> View:
    """maximum then minimum: IREE's TOSA profile check refuses an i32 tosa.clamp."""
    above = binary_view(em, tosa.MaximumOp, x, scalar_like(em, i32, low, x), x.lens)
    return binary_view(em, tosa.MinimumOp, above, scalar_like(em, i32, high, x), x.lens)


def shift_left(em: Emitter, v: View, amount: int) -> View:
    return binary_view(em, tq.LogicalLeftShiftOp, v, scalar_like(em, i32, amount, v), v.lens)
