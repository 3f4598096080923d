"""Emitting TOSA ops with the layout bookkeeping of `migraphx-to-tosa`.

A MIGraphX value lowers to a `View`: a TOSA tensor (`base`) plus a pending permutation and pending
broadcasts. Transposes are not emitted when a value is produced but when a consumer needs a given
dim order (`in_frame`), so a chain of transposes costs at most one, and none when the consumer's
order is the one the value already has (an NHWC argument feeding an NHWC conv). Size-1 dims are
layout-neutral: moving them is a reshape, never a transpose. Broadcasts stay size-1 dims that TOSA's
elementwise ops broadcast; `materialize` tiles them only for consumers that need the full shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, TensorType, i8
from xdsl.ir import Attribute, Block, SSAValue

from convcanon.migraphx.dense import dense_to_numpy
from convcanon.migraphx.layout import inverse_permutation
from convcanon.migraphx.shaped_type import is_float_type, numpy_dtype
from convcanon.pipeline import PassStats
from convcanon.tosa import ops as tosa

Shape = tuple[int, ...]


def shape_of(value: SSAValue) -> Shape:
    ty = value.type
    assert isinstance(ty, TensorType), ty
    return tuple(ty.get_shape())


def element_type_of(value: SSAValue) -> Attribute:
    ty = value.type
    assert isinstance(ty, TensorType), ty
    return ty.element_type


def is_identity(perm: Sequence[int]) -> bool:
    return all(p == i for i, p in enumerate(perm))


def non_unit_order_kept(shape: Sequence[int], perm: Sequence[int]) -> bool:
    """True when transposing `shape` by `perm` only moves size-1 dims (so it is a reshape)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


FOLD_LIMIT = 1 << 16  # constants up to this many elements are transposed at compile time


def numpy_to_dense(attr: DenseIntOrFPElementsAttr, perm: Sequence[int]) -> DenseIntOrFPElementsAttr:
    """A constant's values transposed by `perm`, as a new dense attribute."""
    values = np.transpose(dense_to_numpy(attr), tuple(perm))
    items = [v.item() for v in values.reshape(-1)]
    if values.dtype == np.bool_:
        items = [int(v) for v in items]
    return tosa.dense(element_type_of_dense(attr), values.shape, items)


def element_type_of_dense(attr: DenseIntOrFPElementsAttr) -> Attribute:
    ty = attr.get_type()
    assert isinstance(ty, TensorType)
    return ty.element_type


@dataclass(frozen=True)
class View:
    """A logical value: `transpose(base, perm)` with size-1 base dims broadcast to `lens`.

    Logical dim i is base dim `perm[i]`; `base.shape[perm[i]]` is `lens[i]` or 1 (broadcast).
    """

    base: SSAValue
    perm: Shape
    lens: Shape

    @property
    def base_shape(self) -> Shape:
        return shape_of(self.base)

    @property
    def element_type(self) -> Attribute:
        return element_type_of(self.base)

    def broadcast_dims(self) -> list[int]:
        shape = self.base_shape
        return [i for i, n in enumerate(self.lens) if n > 1 and shape[self.perm[i]] == 1]

    @staticmethod
    def plain(value: SSAValue) -> View:
        shape = shape_of(value)
        return View(value, tuple(range(len(shape))), shape)


@dataclass
class Emitter:
    """Appends TOSA ops to a block; folds no-op reshapes/transposes/slices, reuses constants."""

    block: Block
    stats: PassStats = field(default_factory=PassStats)
    _consts: dict[tuple[object, ...], SSAValue] = field(default_factory=dict)

    def add(self, op: tosa.TosaOp) -> SSAValue:
        self.block.add_op(op)
        return op.output

    # -- constants ---------------------------------------------------------------------------------

    def shape_const(self, values: Sequence[int]) -> SSAValue:
        key = ("shape", tuple(values))
        if key not in self._consts:
            attr = tosa.const_shape_attr(values)
            self._consts[key] = self.add(
                tosa.ConstShapeOp([], tosa.ShapeType(len(values)), {"values": attr})
            )
        return self._consts[key]

    def const(self, attr: DenseIntOrFPElementsAttr) -> SSAValue:
        return self.add(tosa.ConstOp([], attr.get_type(), {"values": attr}))

    def scalar(self, element_type: Attribute, value: float | int, rank: int) -> SSAValue:
        """A `tensor<1x...x1xT>` constant of rank `rank` (broadcasts in elementwise ops).
        Shared by value: an integer's key is the integer (as a float, -2^63 and -2^63 + 1 were
        one constant)."""
        item: float | int = float(value)
        if isinstance(element_type, IntegerType):  # i1 and 4-bit ones too (numpy: b, V)
            width = element_type.width.data
            item = int(bool(value)) if width == 1 else int(value)
        key = ("scalar", element_type, item, rank)
        if key not in self._consts:
            self._consts[key] = self.const(tosa.dense(element_type, [1] * rank, [item]))
        return self._consts[key]

    def table(self, element_type: Attribute, values: Sequence[float]) -> SSAValue:
        """A `tensor<1xKx1xT>` lookup table (tosa.gather's values), one constant per table."""
        key = ("table", element_type, tuple(values))
        if key not in self._consts:
            attr = tosa.dense(element_type, [1, len(values), 1], list(values))
            self._consts[key] = self.const(attr)
        return self._consts[key]

    def zero_point(self, element_type: Attribute) -> SSAValue:
        return self.scalar(element_type, 0, 1)

    # -- data movement -----------------------------------------------------------------------------

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = tuple(shape)
        if shape_of(x) == shape:
            return x
        owner = x.owner
        if isinstance(owner, tosa.ReshapeOp):  # reshape of a reshape is one reshape
            x = owner.args[0]
            if shape_of(x) == shape:
                return x
        ty = TensorType(element_type_of(x), shape)
        return self.add(tosa.ReshapeOp([x, self.shape_const(shape)], ty))

    def transpose(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        """`result dim i = x dim perm[i]`; identities vanish, unit-dim moves are reshapes."""
        perm = tuple(perm)
        owner = x.owner
        if isinstance(owner, tosa.TransposeOp):  # transposes compose
            inner = tosa.int_values(owner.perms)
            x, perm = owner.args[0], tuple(inner[p] for p in perm)
        shape = shape_of(x)
        out_shape = tuple(shape[p] for p in perm)
        if is_identity(perm):
            return x
        if non_unit_order_kept(shape, perm):
            return self.reshape(x, out_shape)
        if isinstance(x.owner, tosa.ConstOp) and math.prod(shape) <= FOLD_LIMIT:
            return self.const(numpy_to_dense(x.owner.values, perm))
        ty = TensorType(element_type_of(x), out_shape)
        return self.add(tosa.TransposeOp([x], ty, {"perms": tosa.perms_attr(perm)}))

    def slice(self, x: SSAValue, start: Sequence[int], size: Sequence[int]) -> SSAValue:
        if tuple(size) == shape_of(x):
            return x
        ty = TensorType(element_type_of(x), list(size))
        return self.add(tosa.SliceOp([x, self.shape_const(start), self.shape_const(size)], ty))

    def tile(self, x: SSAValue, multiples: Sequence[int]) -> SSAValue:
        if all(m == 1 for m in multiples):
            return x
        shape = tuple(n * m for n, m in zip(shape_of(x), multiples, strict=True))
        ty = TensorType(element_type_of(x), shape)
        itemsize = max(numpy_dtype(element_type_of(x)).itemsize, 1)
        self.stats.bump("materialized broadcast bytes", math.prod(shape) * itemsize)
        return self.add(tosa.TileOp([x, self.shape_const(multiples)], ty))

    def pad_zero(self, x: SSAValue, low: Sequence[int], high: Sequence[int]) -> SSAValue:
        if not any(low) and not any(high):
            return x
        shape = tuple(n + lo + hi for n, lo, hi in zip(shape_of(x), low, high, strict=True))
        padding = [v for lo, hi in zip(low, high, strict=True) for v in (lo, hi)]
        et = element_type_of(x)
        ty = TensorType(et, shape)
        return self.add(tosa.PadOp([x, self.shape_const(padding), self.scalar(et, 0, 1)], ty))

    def concat(self, parts: Sequence[SSAValue], axis: int) -> SSAValue:
        if len(parts) == 1:
            return parts[0]
        shape = list(shape_of(parts[0]))
        shape[axis] = sum(shape_of(p)[axis] for p in parts)
        ty = TensorType(element_type_of(parts[0]), shape)
        return self.add(tosa.ConcatOp(list(parts), ty, tosa.axis_attr(axis)))

    # -- compute -----------------------------------------------------------------------------------

    def elementwise(
        self,
        cls: type[tosa.TosaOp],
        args: Sequence[SSAValue],
        element_type: Attribute | None = None,
    ) -> SSAValue:
        """An elementwise op over equal-rank operands; size-1 dims broadcast."""
        shapes = [shape_of(a) for a in args]
        out_shape = tuple(max(dims) for dims in zip(*shapes, strict=True))
        # select's first operand is its i1 condition; the values (and the result) follow it
        typed = args[1] if cls is tosa.SelectOp else args[0]
        et = element_type if element_type is not None else element_type_of(typed)
        operands = list(args)
        if cls is tosa.MulOp:
            operands.append(self.scalar(i8, 0, 1))
        elif cls is tosa.NegateOp:
            operands += [self.zero_point(et), self.zero_point(et)]
        return self.add(cls(operands, TensorType(et, out_shape)))

    def reduce(self, cls: type[tosa.TosaOp], x: SSAValue, axis: int) -> SSAValue:
        shape = list(shape_of(x))
        shape[axis] = 1
        ty = TensorType(element_type_of(x), shape)
        return self.add(cls([x], ty, tosa.axis_attr(axis)))


# -- views -----------------------------------------------------------------------------------------


def in_frame(em: Emitter, view: View, frame: Sequence[int]) -> SSAValue:
    """The base tensor T with `logical = transpose(T, frame)` (broadcast dims stay size 1)."""
    inverse = inverse_permutation(frame)
    return em.transpose(view.base, [view.perm[inverse[j]] for j in range(len(frame))])


def materialize(em: Emitter, view: View, frame: Sequence[int] | None = None) -> SSAValue:
    """`in_frame` with broadcast dims tiled to their full length."""
    frame = tuple(range(len(view.lens))) if frame is None else tuple(frame)
    t = in_frame(em, view, frame)
    inverse = inverse_permutation(frame)
    shape = shape_of(t)
    multiples = [view.lens[inverse[j]] // shape[j] for j in range(len(shape))]
    return em.tile(t, multiples)


def logical(em: Emitter, view: View) -> SSAValue:
    """The value in logical dim order, broadcasts materialized."""
    return materialize(em, view)


def expand_to(em: Emitter, view: View, lens: Sequence[int], axis: int | None = None) -> View:
    """Broadcast to `lens`: the operand's dims right-aligned (numpy) or starting at `axis`.

    New dims are size-1 base dims (a reshape); no data moves and nothing is tiled.
    """
    lens = tuple(lens)
    rank, new_rank = len(view.lens), len(lens)
    if new_rank == rank:
        return View(view.base, view.perm, lens)
    extra = new_rank - rank
    lead = extra if axis is None else axis
    base = em.reshape(view.base, (1,) * extra + view.base_shape)
    unit = iter(range(extra))
    perm = tuple(
        view.perm[i - lead] + extra if lead <= i < lead + rank else next(unit)
        for i in range(new_rank)
    )
    return View(base, perm, lens)


def frame_cost(perm: Sequence[int], shape: Sequence[int], frame: Sequence[int]) -> int:
    """Elements moved to bring a base of `shape` viewed by `perm` into `frame` (0 when only
    size-1 dims move)."""
    inverse = inverse_permutation(frame)
    order = [perm[inverse[j]] for j in range(len(frame))]
    return 0 if non_unit_order_kept(shape, order) else math.prod(shape)


_MAX_FRAMES = 24
"""Dim orders `cheapest_frame` compares at most (every order of rank 4 is 24)."""


def cheapest_frame(
    views: Sequence[View], lens: Sequence[int], hint: Sequence[int] | None = None
) -> Shape:
    """The operand dim order that moves the fewest elements, counting the result's move to
    `hint` (the order its consumer wants, if known); ties go to the largest operand's order."""
    by_size = sorted(views, key=lambda v: -math.prod(v.base_shape))
    # each candidate costs a pass over the views: the distinct orders of the largest few, so a
    # concat of 10^4 operands is not 10^8 costings
    orders = list(dict.fromkeys(v.perm for v in by_size))[:_MAX_FRAMES]
    candidates = orders + ([tuple(hint)] if hint is not None else [])

    def cost(frame: Shape) -> int:
        total = sum(frame_cost(v.perm, v.base_shape, frame) for v in views)
        if hint is not None:
            inverse = inverse_permutation(frame)
            shape = [lens[inverse[j]] for j in range(len(frame))]
            total += frame_cost(frame, shape, hint)
        return total

    return min(candidates, key=cost)


def elementwise_views(
    em: Emitter,
    cls: type[tosa.TosaOp],
    views: Sequence[View],
    lens: Sequence[int],
    element_type: Attribute | None = None,
    hint: Sequence[int] | None = None,
) -> View:
    """An elementwise op in the dim order that moves the fewest elements (none if all agree)."""
    expanded = [expand_to(em, v, lens) for v in views]
    frame = cheapest_frame(expanded, lens, hint)
    bases = [in_frame(em, v, frame) for v in expanded]
    return View(em.elementwise(cls, bases, element_type), frame, tuple(lens))


def unary_view(
    em: Emitter, cls: type[tosa.TosaOp], view: View, element_type: Attribute | None = None
) -> View:
    return View(em.elementwise(cls, [view.base], element_type), view.perm, view.lens)


def binary_view(em: Emitter, cls: type[tosa.TosaOp], a: View, b: View, lens: Sequence[int]) -> View:
    return elementwise_views(em, cls, [a, b], lens)


def scalar_like(em: Emitter, element_type: Attribute, value: float, like: View) -> View:
    """A constant that broadcasts against `like` (a `tensor<1x..x1>` of its rank)."""
    return View.plain(em.scalar(element_type, value, len(like.lens)))


def is_float(element_type: Attribute) -> bool:
    return is_float_type(element_type)
