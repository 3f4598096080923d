"""Lowerings of the migraphx ops that only move elements: `(lowering, op, operand views) -> view`.

Layout ops (transpose, broadcasts, squeeze/unsqueeze, slice) change the pending `View` of their
operand and emit nothing, or a reshape or slice of its base in the base's own dim order; a
reshape materializes the logical order; concat joins its operands in their cheapest common
order. gather and scatter_none index with i32. In the
conformant form these ops move storage codes as they are (`function_lowering.STORAGE_OPS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType, i1, i32
from xdsl.ir import Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    cheapest_frame,
    elementwise_views,
    expand_to,
    logical,
    materialize,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.integer_domain import widen, zero_extend
from convcanon.conversion.migraphx_to_tosa.op_lowering import (
    LoweringContext,
    LoweringTable,
    declared_frame,
    lowers,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    lowering_error,
    result_type,
)
from convcanon.diagnostics import MAX_SPLAT_ELEMENTS
from convcanon.migraphx import layout
from convcanon.migraphx import ops as mx
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.concat_ops import ConcatOp
from convcanon.migraphx.op_base import int_list, int_value, operand_element
from convcanon.migraphx.shaped_type import is_unsigned
from convcanon.tosa import ops as tosa

# The lowerings of this family, each registered against its op class by `@lowers`.
SHAPE_LOWERINGS: LoweringTable = {}


@lowers(SHAPE_LOWERINGS, mx.ContiguousOp)
def _identity(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    return args[0]


# -- shape ops -------------------------------------------------------------------------------------


@lowers(SHAPE_LOWERINGS, mx.TransposeOp)
def _transpose(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Pending: result dim i is operand dim permutation[i]; nothing is emitted."""
    (x,) = args
    permutation = int_list(op, "permutation")
    return View(x.base, tuple(x.perm[p] for p in permutation), result_type(op).lens)


@lowers(SHAPE_LOWERINGS, mx.ReshapeOp, mx.FlattenOp)
def _reshape(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    (x,) = args
    out = lw.em.reshape(logical(lw.em, x), result_type(op).lens)
    return View.plain(out)


@lowers(SHAPE_LOWERINGS, mx.MultiBroadcastOp)
def _multibroadcast(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """The operand's dims go where `placement()` puts them (MIGraphX's trailing alignment, or
    the result layout's non-broadcast dims); only size-1 dims come or go, no data moves."""
    assert isinstance(op, mx.MultiBroadcastOp)
    (x,) = args
    lens, placed = result_type(op).lens, op.placement()
    if placed == (1,) * (len(lens) - len(x.lens)) + tuple(x.lens):
        return expand_to(lw.em, x, lens)
    kept = drop_unit_dims(lw.em, x, [d for d, n in enumerate(x.lens) if n == 1])
    moved = insert_unit_dims(lw.em, kept, [d for d, n in enumerate(placed) if n == 1])
    return View(moved.base, moved.perm, lens)


@lowers(SHAPE_LOWERINGS, mx.BroadcastOp)
def _broadcast(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    return expand_to(lw.em, args[0], result_type(op).lens, int_value(op, "axis"))


@lowers(SHAPE_LOWERINGS, mx.SliceOp)
def _slice(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Slices the base in its own dim order; broadcast dims just shrink."""
    (x,) = args
    shape = x.base_shape
    start, size = [0] * len(shape), list(shape)
    axes, starts, ends = (int_list(op, k) for k in ("axes", "starts", "ends"))
    for axis, lo_in, hi_in in zip(axes, starts, ends, strict=True):
        a = rules.normalize_axis(axis, len(x.lens))
        lo, hi = rules.slice_bounds(x.lens[a], lo_in, hi_in)
        b = x.perm[a]
        if shape[b] != 1:
            start[b], size[b] = lo, hi - lo
    base = lw.em.slice(x.base, start, size)
    return View(base, x.perm, result_type(op).lens)


@lowers(SHAPE_LOWERINGS, ConcatOp)
def _concat(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """One tosa.concat in the dim order that moves the fewest elements (none when every operand
    is stored in the order of the result's declared layout): each operand in that order, its
    broadcasts tiled, joined on the axis's place there."""
    assert isinstance(op, ConcatOp)
    lens = result_type(op).lens
    frame = cheapest_frame(args, lens, declared_frame(op))
    bases = [materialize(lw.em, view, frame) for view in args]
    return View(lw.em.concat(bases, frame[op.concat_axis()]), frame, lens)


def drop_unit_dims(em: Emitter, view: View, dims: Sequence[int]) -> View:
    """The view without the size-1 logical `dims`: their base dims go in a reshape, no data
    moves and the remaining order is kept."""
    dropped = set(dims)
    removed = {view.perm[d] for d in dropped}
    shape = view.base_shape
    base = em.reshape(view.base, [n for b, n in enumerate(shape) if b not in removed])
    remap = {b: b - sum(1 for r in removed if r < b) for b in range(len(shape))}
    perm = tuple(remap[view.perm[i]] for i in range(len(view.lens)) if i not in dropped)
    lens = tuple(n for i, n in enumerate(view.lens) if i not in dropped)
    return View(base, perm, lens)


def insert_unit_dims(em: Emitter, view: View, positions: Sequence[int]) -> View:
    """The view with size-1 logical dims at result `positions` (new trailing base dims)."""
    shape = view.base_shape
    base = em.reshape(view.base, (*shape, *([1] * len(positions))))
    old, new = iter(view.perm), iter(range(len(shape), len(shape) + len(positions)))
    wanted = set(positions)
    rank = len(view.lens) + len(positions)
    perm = tuple(next(new) if i in wanted else next(old) for i in range(rank))
    return View(base, perm, rules.insert_unit_dims(view.lens, positions))


@lowers(SHAPE_LOWERINGS, mx.SqueezeOp)
def _squeeze(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    assert isinstance(op, mx.SqueezeOp)
    return drop_unit_dims(lw.em, args[0], op.squeezed_axes())


@lowers(SHAPE_LOWERINGS, mx.UnsqueezeOp)
def _unsqueeze(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    assert isinstance(op, mx.UnsqueezeOp)
    if op.splits_dims():
        return _reshape(lw, op, args)
    return insert_unit_dims(lw.em, args[0], op.inserted_axes())


# -- gather, scatter -------------------------------------------------------------------------------


def _index_tensor(lw: LoweringContext, op: Operation, view: View, length: int) -> SSAValue:
    """Indices as a flat i32 tensor, negatives counted from the end (as MIGraphX does)."""
    em = lw.em
    element = operand_element(op, 1)
    if length >= 1 << 31:
        raise lowering_error(op, f"indexes a dim of {length} elements, beyond tosa's i32 indices")
    x = zero_extend(em, view, element) if is_unsigned(element) else widen(em, view, element)
    if x.element_type != i32:
        x = unary_view(em, tosa.CastOp, x, i32)
    if not is_unsigned(element):
        rank = len(x.base_shape)
        zero, size = (View.plain(em.scalar(i32, v, rank)) for v in (0, length))
        nonnegative = elementwise_views(em, tosa.GreaterEqualOp, [x, zero], x.lens, i1)
        shifted = elementwise_views(em, tosa.AddOp, [x, size], x.lens)
        x = elementwise_views(em, tosa.SelectOp, [nonnegative, x, shifted], x.lens, i32)
    return em.reshape(logical(em, x), [math.prod(view.lens)])


@lowers(SHAPE_LOWERINGS, mx.GatherOp)
def _gather(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """tosa.gather on [outer, axis, inner]; the indices are tiled over the outer dims."""
    data, indices = args
    em = lw.em
    axis = rules.normalize_axis(int_value(op, "axis"), len(data.lens))
    outer, length = math.prod(data.lens[:axis]), data.lens[axis]
    inner = math.prod(data.lens[axis + 1 :])
    values = em.reshape(logical(em, data), [outer, length, inner])
    width = math.prod(indices.lens)
    picked = em.tile(em.reshape(_index_tensor(lw, op, indices, length), [1, width]), [outer, 1])
    et = data.element_type
    out = em.add(tosa.GatherOp([values, picked], TensorType(et, [outer, width, inner])))
    return View.plain(em.reshape(out, result_type(op).lens))


@lowers(SHAPE_LOWERINGS, mx.ScatterNoneOp)
def _scatter_none(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """tosa.scatter over the flat data: each update's flat position is its own position with the
    axis coordinate replaced by its index (a compile-time offset plus index * axis stride)."""
    data, indices, updates = args
    em = lw.em
    lens = data.lens
    axis = rules.normalize_axis(int_value(op, "axis"), len(lens))
    total, width = math.prod(lens), math.prod(indices.lens)
    if total >= 1 << 31:
        raise lowering_error(op, f"scatters into {total} elements, beyond tosa's i32 indices")
    if width > MAX_SPLAT_ELEMENTS:  # its offsets are a dense constant, one per update
        raise lowering_error(
            op,
            f"scatters {width} updates: their offsets would be a dense constant over the limit"
            f" of {MAX_SPLAT_ELEMENTS} elements",
        )
    strides = layout.standard_strides(lens)
    coords = np.indices(indices.lens).reshape(len(lens), -1)
    offsets = sum(coords[d] * strides[d] for d in range(len(lens)) if d != axis)
    offsets = np.broadcast_to(np.asarray(offsets, dtype=np.int64), (width,))
    rows = View.plain(em.reshape(_index_tensor(lw, op, indices, lens[axis]), [1, width]))
    stride = View.plain(em.scalar(i32, strides[axis], 2))
    base = View.plain(em.const(tosa.dense(i32, [1, width], offsets.tolist())))
    scaled = elementwise_views(em, tosa.MulOp, [rows, stride], (1, width))
    flat = elementwise_views(em, tosa.AddOp, [scaled, base], (1, width))
    et = data.element_type
    values = em.reshape(logical(em, data), [1, total, 1])
    new = em.reshape(logical(em, updates), [1, width, 1])
    out = em.add(tosa.ScatterOp([values, flat.base, new], TensorType(et, [1, total, 1])))
    return View.plain(em.reshape(out, lens))
