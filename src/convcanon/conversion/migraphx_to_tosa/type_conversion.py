"""The boundary of `migraphx-to-tosa`: shaped values <-> the flat buffers their strides describe.

Reading reshapes a flat buffer to its memory layout and slices off long-stride gaps, leaving
the transpose and broadcasts pending in a `View`; writing transposes to memory order, zero-fills
the gaps and reshapes flat. A layout that does not tile memory (overlapping or interleaved dims,
a smallest stride above 1) is read by one tosa.gather and written by one gather of each buffer
position's element (or a zero). A result whose elements overlap (a broadcast among them) cannot
be written: the write is ambiguous.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, TensorType, f32, i32
from xdsl.ir import Attribute, Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    element_type_of,
    materialize,
    shape_of,
)
from convcanon.diagnostics import MAX_SPLAT_ELEMENTS, ConvcanonError
from convcanon.migraphx import layout
from convcanon.migraphx.io import op_location
from convcanon.migraphx.shaped_type import ShapedType, signless
from convcanon.tosa import ops as tosa


def lowering_error(op: Operation, message: str) -> ConvcanonError:
    return ConvcanonError(f"'{op.name}' {message}", op_location(op))


def float_accumulator(op: Operation, element: Attribute) -> Float32Type:
    """A float conv's accumulator. TOSA's convolutions name theirs, of at most 32 bits: an f64
    conv has no exact lowering and is refused rather than rounded (IREE computes f64 in f32
    too)."""
    if isinstance(element, Float64Type):
        raise lowering_error(
            op, "on f64 has no exact TOSA lowering: TOSA's convolutions accumulate in at most f32"
        )
    return f32


def result_type(op: Operation) -> ShapedType:
    ty = op.results[0].type
    assert isinstance(ty, ShapedType)
    return ty


def read_flat(em: Emitter, flat: SSAValue, ty: ShapedType, where: Operation) -> View:
    """Reading: reshape to the memory layout, slice off gaps; the transpose and the broadcasts
    stay pending in the View. A layout that does not tile memory is gathered (refused at
    `where`, the function of an argument or the op that reads, past the gather's limits)."""
    if not layout.tiles_memory(ty.lens, ty.stride_values):
        check_gather(where, ty, ty.flat_size(), math.prod(ty.lens))
        offsets = layout.element_offsets(ty.lens, ty.stride_values).reshape(-1)
        return View.plain(em.reshape(_gather(em, flat, offsets), ty.lens))
    mem = ty.memory_layout()
    base = em.reshape(flat, mem.mem_shape)
    size = [min(ty.lens[d], n) for d, n in zip(mem.perm, mem.mem_shape, strict=True)]
    base = em.slice(base, [0] * len(size), size)
    return View(base, layout.inverse_permutation(mem.perm), ty.lens)


def write_flat(em: Emitter, view: View, ty: ShapedType, op: Operation) -> SSAValue:
    """Writing: transpose to memory order, zero-fill gaps (pad), reshape flat."""
    bcast = layout.broadcast_dims(ty.lens, ty.stride_values)
    if bcast:
        raise lowering_error(
            op,
            f"writes a result of broadcast layout {ty} (stride 0 on dims {list(bcast)}): "
            "the write is ambiguous",
        )
    if not layout.tiles_memory(ty.lens, ty.stride_values):
        overlap = layout.overlap_reason(ty.lens, ty.stride_values)
        if overlap is not None:
            raise lowering_error(
                op,
                f"writes a result of overlapping layout {ty} ({overlap}): the write is ambiguous",
            )
        # every position of the buffer gathers its element, or the zero after the last one
        count = math.prod(ty.lens)
        check_gather(op, ty, count + 1, ty.flat_size())
        positions = np.full(ty.flat_size(), count, dtype=np.int64)
        positions[layout.element_offsets(ty.lens, ty.stride_values).reshape(-1)] = np.arange(count)
        values = em.pad_zero(em.reshape(materialize(em, view), [count]), [0], [1])
        return _gather(em, values, positions)
    mem = ty.memory_layout()
    t = materialize(em, view, layout.inverse_permutation(mem.perm))
    high = [m - n for m, n in zip(mem.mem_shape, shape_of(t), strict=True)]
    t = em.pad_zero(t, [0] * len(high), high)
    return em.reshape(t, [ty.flat_size()])


def check_gather(where: Operation, ty: ShapedType, size: int, indices: int) -> None:
    """A gathered layout `ty` (reading from, or writing to, a `size`-element tensor through
    `indices` constant positions) within tosa.gather's i32 indices and within the elements a
    dense constant may hold (an index each: as many as a literal's), checked before any is
    computed; at `where` otherwise."""
    if size >= 1 << 31:
        raise lowering_error(
            where, f"gathers {ty} from a {size}-element buffer: tosa.gather indexes with i32"
        )
    if indices > MAX_SPLAT_ELEMENTS:
        raise lowering_error(
            where,
            f"gathers {ty} through {indices} constant indices, over the limit of "
            f"{MAX_SPLAT_ELEMENTS} elements of a dense constant",
        )


def _gather(em: Emitter, flat: SSAValue, positions: np.ndarray) -> SSAValue:
    """`flat[positions]` for a 1-D tensor and constant positions (`check_gather`'s), as one
    tosa.gather."""
    (size,) = shape_of(flat)
    indices = em.const(tosa.dense(i32, [1, positions.size], positions.tolist()))
    values = em.reshape(flat, [1, size, 1])
    element = element_type_of(flat)
    out = em.add(tosa.GatherOp([values, indices], TensorType(element, [1, positions.size, 1])))
    return em.reshape(out, [positions.size])


# -- element types ---------------------------------------------------------------------------------
#
# The migraphx dialect keeps MIGraphX's sign-explicit integers (si8, ui8, ...); TOSA is signless.
# Values cross as the same bits (`ui8` 200 is `i8` -56), and every lowering whose meaning depends
# on the sign asks `op_base.operand_element` for the migraphx type. Types outside TOSA 1.0's
# profiles (fp8 FNUZ, e8m0, fp4, int4) are, in the default conformant form, i8 storage: see
# `storage_types`; lowerings only ever see them retyped to f32 or 8-bit integers.


def flat_tosa_type(ty: Attribute) -> Attribute:
    """A function-boundary type after conversion: the flat signless buffer of a shaped value."""
    if isinstance(ty, ShapedType):
        return TensorType(signless(ty.element_type), [ty.flat_size()])
    if isinstance(ty, TensorType):
        return TensorType(signless(ty.element_type), ty.get_shape())
    return ty


def result_element(op: Operation) -> Attribute:
    return result_type(op).element_type


def integer_width(element_type: Attribute) -> int | None:
    return element_type.width.data if isinstance(element_type, IntegerType) else None
