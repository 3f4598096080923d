"""`types=conformant`: element types outside TOSA 1.0's profiles travel as storage integers.

IREE, and any backend holding to the TOSA 1.0 profiles, refuses tensors of f8E4M3FNUZ,
f8E5M2FNUZ, f8E8M0FNU, f4E2M1FN and i4. In the conformant form none exists: inside a function a
value of such a type is an i8 tensor of its code (fp8/e8m0: the byte, fp4: 0..15) or, for
si4/ui4, of its value; at the function boundary the buffers are MIGraphX's (4-bit values packed
two to a byte, low nibble first; see `convcanon.tosa.storage`). Ops that only move data work on
the storage as it is; every other op sees its foreign floats decoded exactly to f32 (a table
gather) and its foreign results encoded back with MIGraphX's rounding and saturation (compares,
selects, an exact power-of-two scale and TOSA's round-half-even cast), its int4 results wrapped
to 4 bits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float4E2M1FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E8M0FNUType,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import Emitter, View, shape_of
from convcanon.migraphx.dense import dense_to_numpy
from convcanon.migraphx.shaped_type import ShapedType, numpy_dtype
from convcanon.tosa import ops as tosa
from convcanon.tosa import quant_ops as tq
from convcanon.tosa.storage import (
    COUNT_ATTR,
    ELEMENT_ATTR,
    is_foreign,
    is_int4,
    is_packed,
    storage_bytes,
)

# -- formats ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fp8Format:
    """A sign-exponent-mantissa fp8 type with FNUZ encoding (0x80 is NaN, no -0, no inf)."""

    mantissa_bits: int
    bias: int

    @property
    def min_exponent(self) -> int:
        return 1 - self.bias

    @property
    def max_exponent(self) -> int:
        """The exponent of 0x7F, the largest finite code (FNUZ has no inf to reserve)."""
        return ((1 << 7) - 1 >> self.mantissa_bits) - self.bias

    @property
    def largest(self) -> float:
        mantissa = (1 << self.mantissa_bits) - 1
        return (1 + mantissa / (1 << self.mantissa_bits)) * 2.0**self.max_exponent


FNUZ_FORMATS: dict[type[Attribute], Fp8Format] = {
    Float8E4M3FNUZType: Fp8Format(3, 8),
    Float8E5M2FNUZType: Fp8Format(2, 16),
}


def decode_table(element_type: Attribute) -> list[float]:
    """The f32 value of every code of a foreign float type (as MLIR's type defines it: FNUZ
    0x80 and e8m0 0xFF are NaN, e8m0 0x00 is 2^-127, fp4 code 8 is -0)."""
    dtype = numpy_dtype(element_type)
    codes = np.arange(16 if isinstance(element_type, Float4E2M1FNType) else 256, dtype=np.uint8)
    return [float(v) for v in codes.view(dtype).astype(np.float32)]


# -- the boundary ----------------------------------------------------------------------------------


def element_of(ty: Attribute) -> Attribute | None:
    if isinstance(ty, ShapedType):
        return ty.element_type
    if isinstance(ty, TensorType):
        return ty.element_type
    return None


def element_count(ty: Attribute) -> int:
    if isinstance(ty, ShapedType):
        return ty.flat_size()
    assert isinstance(ty, TensorType)
    return math.prod(ty.get_shape())


def storage_tensor_type(ty: Attribute) -> TensorType:
    """The flat i8 storage buffer of a value of a foreign element type."""
    element = element_of(ty)
    assert element is not None
    return TensorType(i8, [storage_bytes(element, element_count(ty))])


def storage_attrs(ty: Attribute) -> DictionaryAttr:
    """What a caller needs to pack and unpack the buffer: the element type and count."""
    element = element_of(ty)
    assert element is not None
    count = IntegerAttr(element_count(ty), i64)
    return DictionaryAttr({ELEMENT_ATTR: element, COUNT_ATTR: count})


def unpack_boundary(em: Emitter, flat: SSAValue, ty: Attribute) -> SSAValue:
    """A storage argument as one i8 per element (the code, or an int4's value)."""
    element = element_of(ty)
    assert element is not None
    if not is_packed(element):
        return flat
    count = element_count(ty)
    nbytes = shape_of(flat)[0]
    wide = em.add(tosa.CastOp([flat], TensorType(i32, [nbytes])))
    low = _nibble(em, wide, 0, element)
    high = _nibble(em, wide, 4, element)
    parts = [em.reshape(v, [nbytes, 1]) for v in (low, high)]
    both = em.reshape(em.concat(parts, 1), [2 * nbytes])
    both = em.slice(both, [0], [count])
    return em.add(tosa.CastOp([both], TensorType(i8, [count])))


def pack_boundary(em: Emitter, flat: SSAValue, ty: Attribute) -> SSAValue:
    """One i8 per element packed into MIGraphX's buffer (two nibbles a byte, low first)."""
    element = element_of(ty)
    assert element is not None
    if not is_packed(element):
        return flat
    count = element_count(ty)
    nbytes = storage_bytes(element, count)
    wide = em.add(tosa.CastOp([flat], TensorType(i32, [count])))
    wide = em.pad_zero(wide, [0], [2 * nbytes - count])
    pairs = em.reshape(wide, [nbytes, 2])
    rank2 = (nbytes, 1)
    low = em.slice(pairs, [0, 0], list(rank2))
    high = em.slice(pairs, [0, 1], list(rank2))
    mask = em.scalar(i32, 15, 2)
    low = em.elementwise(tosa.BitwiseAndOp, [low, mask])
    high = em.elementwise(tosa.BitwiseAndOp, [high, mask])
    high = em.elementwise(tq.LogicalLeftShiftOp, [high, em.scalar(i32, 4, 2)])
    byte = em.elementwise(tosa.AddOp, [low, high])
    return em.add(tosa.CastOp([em.reshape(byte, [nbytes])], TensorType(i8, [nbytes])))


def _nibble(em: Emitter, wide: SSAValue, shift: int, element: Attribute) -> SSAValue:
    """Bits shift..shift+3 of i32 bytes: sign-extended for si4 (and signless i4), else 0..15."""
    rank = len(shape_of(wide))
    if _signed_int4(element):
        up = em.elementwise(tq.LogicalLeftShiftOp, [wide, em.scalar(i32, 28 - shift, rank)])
        return _arithmetic_shift_right(em, up, 28)
    down = wide
    if shift:
        down = em.elementwise(tq.LogicalRightShiftOp, [wide, em.scalar(i32, shift, rank)])
    return em.elementwise(tosa.BitwiseAndOp, [down, em.scalar(i32, 15, rank)])


def _signed_int4(element: Attribute) -> bool:
    return is_int4(element) and (
        isinstance(element, IntegerType) and element.signedness.data != Signedness.UNSIGNED
    )


def _arithmetic_shift_right(em: Emitter, x: SSAValue, amount: int) -> SSAValue:
    props: dict[str, Attribute] = {"round": IntegerAttr(0, 1)}
    count = em.scalar(i32, amount, len(shape_of(x)))
    return em.add(tq.ArithmeticRightShiftOp([x, count], x.type, props))


# -- values ----------------------------------------------------------------------------------------


def carrier(element: Attribute) -> Attribute:
    """The type a foreign value computes in: f32 for the floats (every code is exact there),
    the 8-bit integer of the same signedness for int4 (the storage holds the value)."""
    if is_int4(element):
        assert isinstance(element, IntegerType)
        return IntegerType(8, element.signedness.data)
    return f32


def decode(em: Emitter, view: View, element: Attribute) -> View:
    """A foreign float's codes (i8) as f32 values: a gather from the 256- or 16-entry table of
    its values, exact (NaN codes give NaN)."""
    if not is_foreign(element) or is_int4(element):
        return view
    table = decode_table(element)
    base = view.base
    shape = shape_of(base)
    total = math.prod(shape)
    codes = em.add(tosa.CastOp([base], TensorType(i32, list(shape))))
    if len(table) == 256:  # the i8 bits of a byte code: 0..255
        codes = em.elementwise(tosa.BitwiseAndOp, [codes, em.scalar(i32, 255, len(shape))])
    values = _lookup(em, table, em.reshape(codes, [1, total]))
    return View(em.reshape(values, shape), view.perm, view.lens)


def _lookup(em: Emitter, table: Sequence[float], indices: SSAValue) -> SSAValue:
    """`table[indices]` for [1, W] i32 indices: a tosa.gather from a [1, K, 1] f32 constant."""
    width = shape_of(indices)[1]
    const = em.table(f32, table)
    return em.add(tosa.GatherOp([const, indices], TensorType(f32, [1, width, 1])))


def encode(em: Emitter, view: View, element: Attribute) -> View:
    """f32 values as the codes (i8) of a foreign float type, rounded and saturated as MIGraphX
    does (see `_encode_fnuz`, `_encode_e8m0`, `_encode_fp4`); int4 values wrapped to 4 bits."""
    if is_int4(element):
        return View(_wrap_int4(em, view.base, element), view.perm, view.lens)
    base = view.base
    if isinstance(element, Float8E8M0FNUType):
        code = _encode_e8m0(em, base)
    elif isinstance(element, Float4E2M1FNType):
        code = _encode_fp4(em, base)
    else:
        code = _encode_fnuz(em, base, FNUZ_FORMATS[type(element)])
    return View(
        em.add(tosa.CastOp([code], TensorType(i8, list(shape_of(code))))), view.perm, view.lens
    )


def _wrap_int4(em: Emitter, x: SSAValue, element: Attribute) -> SSAValue:
    """An integer tensor's low 4 bits as the si4 (sign-extended) or ui4 value, in i8 (MIGraphX's
    integer narrowing keeps the low bits)."""
    shape = list(shape_of(x))
    wide = x if element_type(x) == i32 else em.add(tosa.CastOp([x], TensorType(i32, shape)))
    nibble = _nibble(em, wide, 0, element)
    return em.add(tosa.CastOp([nibble], TensorType(i8, shape)))


def element_type(x: SSAValue) -> Attribute:
    ty = x.type
    assert isinstance(ty, TensorType)
    return ty.element_type


class _Ops:
    """Elementwise helpers on tensors of one shape (constants broadcast as rank-r scalars)."""

    def __init__(self, em: Emitter, shape: Sequence[int]):
        self.em, self.shape, self.rank = em, list(shape), len(shape)

    def const(self, et: Attribute, value: float | int) -> SSAValue:
        return self.em.scalar(et, value, self.rank)

    def op(self, cls: type[tosa.TosaOp], *args: SSAValue, et: Attribute | None = None) -> SSAValue:
        return self.em.elementwise(cls, list(args), et)

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.em.elementwise(tosa.SelectOp, [cond, a, b])

    def cast(self, x: SSAValue, et: Attribute) -> SSAValue:
        return self.em.add(tosa.CastOp([x], TensorType(et, self.shape)))

    def lookup(self, table: Sequence[float], index: SSAValue) -> SSAValue:
        shape = shape_of(index)  # the first search step's index is still a broadcast scalar
        flat = self.em.reshape(index, [1, math.prod(shape)])
        return self.em.reshape(_lookup(self.em, table, flat), shape)

    def largest_at_most(self, a: SSAValue, thresholds: Sequence[float]) -> SSAValue:
        """The largest k with thresholds[k] <= a (0 if none), thresholds increasing: a binary
        search of log2(len) gather-compare-select steps (the table padded with +inf)."""
        steps = max(1, math.ceil(math.log2(len(thresholds))))
        table = list(thresholds) + [math.inf] * ((1 << steps) - len(thresholds))
        k = self.const(i32, 0)
        for step in (1 << s for s in reversed(range(steps))):
            candidate = self.op(tosa.AddOp, k, self.const(i32, step))
            passed = self.op(tosa.GreaterEqualOp, a, self.lookup(table, candidate), et=i1)
            k = self.select(passed, candidate, k)
        return k


def _encode_fnuz(em: Emitter, x: SSAValue, fmt: Fp8Format) -> SSAValue:
    """MIGraphX's f32 -> fp8 FNUZ (its clipping cast): round to nearest, ties to even; beyond
    the largest finite value saturate to it (signed); inf and NaN -> NaN (0x80); anything that
    rounds to zero -> 0x00 (no -0). With e' = max(floor(log2|x|), e_min) found by a binary
    search over powers of two, the code's magnitude is ((e' - e_min) << m) + rint(|x| 2^(m-e')):
    the scale is an exact power of two and tosa.cast rounds half to even."""
    ops = _Ops(em, shape_of(x))
    a = ops.op(tosa.AbsOp, x)
    finite = ops.op(tosa.GreaterEqualOp, ops.const(f32, float(np.finfo(np.float32).max)), a, et=i1)
    a = ops.op(tosa.MinimumOp, a, ops.const(f32, fmt.largest))
    e_min, m = fmt.min_exponent, fmt.mantissa_bits
    exponents = range(e_min, fmt.max_exponent + 1)
    k = ops.largest_at_most(a, [2.0**e for e in exponents])
    scale = ops.lookup([2.0 ** (m - e) for e in exponents], k)
    q = ops.cast(ops.op(tosa.MulOp, a, scale), i32)
    magnitude = ops.op(tosa.AddOp, ops.op(tq.LogicalLeftShiftOp, k, ops.const(i32, m)), q)
    negative = ops.op(tosa.GreaterOp, ops.const(f32, 0.0), x, et=i1)
    nonzero = ops.op(tosa.GreaterOp, magnitude, ops.const(i32, 0), et=i1)
    signed = ops.select(nonzero, ops.op(tosa.AddOp, magnitude, ops.const(i32, 128)), magnitude)
    code = ops.select(negative, signed, magnitude)
    return ops.select(finite, code, ops.const(i32, 128))


def _encode_e8m0(em: Emitter, x: SSAValue) -> SSAValue:
    """MIGraphX's f32 -> e8m0 (its generic float with no mantissa): the biased exponent field of
    |x| (the mantissa truncated, the sign dropped); zero and f32 subnormals -> 0x00, inf and
    NaN -> 0xFF. Found by a binary search over 2^(j-127)."""
    ops = _Ops(em, shape_of(x))
    a = ops.op(tosa.AbsOp, x)
    thresholds = [0.0] + [2.0 ** (j - 127) for j in range(1, 255)] + [math.inf]
    code = ops.largest_at_most(a, thresholds)
    number = ops.op(tosa.EqualOp, x, x, et=i1)
    return ops.select(number, code, ops.const(i32, 255))


# MIGraphX's float_to_fp4 thresholds (round to nearest, ties to even, saturating at 6):
# |x| passes (> or >=) each in turn; the count is the magnitude code.
_FP4_STEPS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True))
_FP4_LAST = (5.0, False)


def _encode_fp4(em: Emitter, x: SSAValue) -> SSAValue:
    """MIGraphX's f32 -> fp4 e2m1: |x| compared with the midpoints 0.25 .. 5 (> where the lower
    neighbour's code is even, >= where it is odd: ties to even), so beyond 6 saturates to 6 and
    inf is 6; the sign bit (8) follows x's sign, -0 included (1/x < 0). NaN has no sign TOSA can
    read: it encodes as +0 (MIGraphX: +0 or -0 by the NaN's sign bit)."""
    ops = _Ops(em, shape_of(x))
    a = ops.op(tosa.AbsOp, x)
    magnitude = ops.const(i32, 0)
    for bound, inclusive in (*_FP4_STEPS, _FP4_LAST):
        cls = tosa.GreaterEqualOp if inclusive else tosa.GreaterOp
        passed = ops.op(cls, a, ops.const(f32, bound), et=i1)
        magnitude = ops.op(
            tosa.AddOp, magnitude, ops.select(passed, ops.const(i32, 1), ops.const(i32, 0))
        )
    zero = ops.const(f32, 0.0)
    below = ops.op(tosa.GreaterOp, zero, x, et=i1)
    negative_zero = ops.op(
        tosa.GreaterOp, zero, ops.op(tosa.ReciprocalOp, x), et=i1
    )  # 1/-0 = -inf; 1/x of a negative x is negative too
    negative = ops.select(below, below, negative_zero)
    return ops.select(negative, ops.op(tosa.AddOp, magnitude, ops.const(i32, 8)), magnitude)


def storage_literal(em: Emitter, attr: DenseIntOrFPElementsAttr, ty: ShapedType) -> View:
    """A literal of a foreign type as its i8 storage constant (codes, or int4 values); a splat
    stays a broadcast `tensor<1x..x1xi8>`."""
    element = ty.element_type
    splat = attr.is_splat()
    if splat:  # one value, however large the literal
        literal_type = attr.get_type()
        assert isinstance(literal_type, TensorType)
        first = next(iter(attr.get_values()))
        values = np.asarray([first], dtype=numpy_dtype(literal_type.element_type))
    else:
        values = dense_to_numpy(attr)
    if is_int4(element):
        codes = values.astype(np.int64).astype(np.int8)
    else:
        codes = values.astype(numpy_dtype(element)).view(np.uint8).view(np.int8)
    shape = [1] * len(ty.lens) if splat else list(values.shape)
    const = em.const(tosa.dense(i8, shape, [int(v) for v in codes.reshape(-1)]))
    if splat:
        return View(const, tuple(range(len(ty.lens))), ty.lens)
    return View.plain(const)
