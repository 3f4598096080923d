"""Build HLO ops generically (`ir.Operation.create`) from the dialect table: one code path, two
dialects.

A `Builder` turns one conv's rewrite into a `program.Program` of steps. Each op's result type is
read from its operands (`b.pad(x, low, high)`), so no caller threads a shape, an insertion point
or a location; `program.instantiate` builds the program in front of each conv of that
configuration. The builder memoizes the attributes and types it makes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo import conv_params
from convcanon.hlo.conv_params import ConvParams, bounded_pad, padded_extent
from convcanon.hlo.dialects import Dialect, padding_attr
from convcanon.hlo.plan_layout import moves_data
from convcanon.hlo.program import CLONE, CREATE, PARSE, ZERO, Program, Ref, Step

# A dynamic extent (`?`), as MLIR stores it. A conv has one dynamic size at most (its batch, or
# the lhs feature dim a kernel gradient contracts, which the kernel's input features match), so
# every dynamic extent of a value derived from the conv's operands is that size.
DYNAMIC = conv_params.DYNAMIC

Window = tuple[int, int, int]  # (start, stride, length) of a slice in one dim


def _zero_attr(ty: ir.RankedTensorType) -> ir.Attribute | None:
    """The zero splat of `ty`, or None for complex: the Python bindings cannot hold a complex
    dense attribute (any access raises TypeError), so complex zeros are parsed as ops instead."""
    element = ty.element_type
    if isinstance(element, ir.IntegerType):
        return ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(element, 0))
    if isinstance(element, ir.FloatType):
        return ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(element, 0.0))
    return None


def _is_whole(windows: Sequence[Window], extents: tuple[int, ...]) -> bool:
    return all(w == (0, 1, e) for w, e in zip(windows, extents, strict=True))


class Builder:
    """Creates ops in front of one conv at a time, with memoized attributes and result types."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._pad_name = dialect.op("pad")
        self._slice_name = dialect.op("slice")
        self._add_name = dialect.op("add")
        self._constant_name = dialect.op("constant")
        self._convert_name = dialect.op("convert")
        self._concat_name = dialect.op("concatenate")
        self._reshape_name = dialect.op("reshape")
        self._transpose_name = dialect.op("transpose")
        self._reverse_name = dialect.op("reverse")
        self._dimension_size_name = dialect.op("get_dimension_size")
        self._dynamic_slice_name = dialect.op("real_dynamic_slice")
        self._dynamic_reshape_name = dialect.op("dynamic_reshape")
        self._dynamic_broadcast_name = dialect.op("dynamic_broadcast_in_dim")
        self._attrs: dict[tuple[str, object], ir.Attribute] = {}  # by (kind, value)
        self._types: dict[tuple[tuple[int, ...], ir.Type], ir.Type] = {}
        self._info: dict[ir.Type, tuple[tuple[int, ...], ir.Type]] = {}  # shape, element
        self._short = {name: name.partition(".")[2] for name in self._names()}
        self._steps: list[Step] = []
        self._values: list[tuple[tuple[int, ...], ir.Type]] = []  # each ref's shape, element
        self._zero_refs: dict[ir.Type, Ref] = {}
        self._index_vectors: dict[tuple[int, ...], Ref] = {}
        self._dynamic: tuple[Ref, int] | None = None  # the conv's lhs and its dynamic dim
        self._dynamic_value: Ref | None = None  # its size, once built

    def _names(self) -> list[str]:
        return [v for k, v in vars(self).items() if k.endswith("_name")]

    def type_info(self, ty: ir.Type) -> tuple[tuple[int, ...], ir.Type]:
        """The shape and element type of `ty` (read once per type: types are uniqued)."""
        found = self._info.get(ty)
        if found is None:
            ranked = ir.RankedTensorType(ty)
            found = self._info[ty] = (tuple(ranked.shape), ranked.element_type)
        return found

    def info(self, value: Ref) -> tuple[tuple[int, ...], ir.Type]:
        return self._values[value]

    def shape(self, value: Ref) -> tuple[int, ...]:
        return self._values[value][0]

    def _type_of(self, value: Ref) -> ir.Type:
        return self.tensor(*self._values[value])

    def start(self, lhs: ir.Type, rhs: ir.Type) -> tuple[Ref, Ref]:
        """Begin the program of a conv whose lhs and kernel have these types. Every dynamic
        extent it builds is the lhs's one dynamic dim (its batch or its feature), read once."""
        self._steps = []
        self._values = [self.type_info(lhs), self.type_info(rhs)]
        self._zero_refs = {}
        self._index_vectors = {}
        self._dynamic_value = None
        self.dynamic_from(0)
        return 0, 1

    def finish(self, total: Ref) -> Program:
        """The program of the steps asked for since `start` that `total` reads: the emitter
        asks only for steps a later one reads, but a reshape folded into a later one (see
        `reshape`) may be left unread."""
        steps = self._steps
        live = {total}
        read = [False] * len(steps)
        for index in range(len(steps) - 1, -1, -1):
            if index + 2 in live:
                read[index] = True
                live.update(steps[index].operands)
        if all(read):
            return Program(tuple(steps), total)
        renumbered: dict[Ref, Ref] = {0: 0, 1: 1}
        kept: list[Step] = []
        for index, step in enumerate(steps):
            if read[index]:
                renumbered[index + 2] = len(kept) + 2
                step.operands = tuple(renumbered[r] for r in step.operands)
                kept.append(step)
        return Program(tuple(kept), renumbered[total])

    def dynamic_from(self, lhs: Ref) -> None:
        """Read the dynamic extent (batch or feature) from `lhs` (the conv's lhs, or its
        transposed copy)."""
        dynamic = [axis for axis, d in enumerate(self.shape(lhs)) if d == DYNAMIC]
        self._dynamic = (lhs, dynamic[0]) if dynamic else None

    def _add(self, step: Step, result: ir.Type) -> Ref:
        self._steps.append(step)
        self._values.append(self.type_info(result))
        return len(self._values) - 1

    # -- attributes and types ------------------------------------------------------------------

    def _attr(self, kind: str, value: object, make: Callable[[], ir.Attribute]) -> ir.Attribute:
        attr = self._attrs.get((kind, value))
        if attr is None:
            attr = self._attrs[(kind, value)] = make()
        return attr

    def i64_list(self, values: Sequence[int]) -> ir.Attribute:
        key = tuple(values)
        return self._attr("i64s", key, lambda: self.dialect.i64_list(key))

    def bool_list(self, values: Sequence[bool]) -> ir.Attribute:
        key = tuple(values)
        return self._attr("bools", key, lambda: self.dialect.bool_list(key))

    def i64(self, value: int) -> ir.Attribute:
        """An i64 integer attribute (concatenate's dimension)."""
        i64 = ir.IntegerType.get_signless(64)
        return self._attr("i64", value, lambda: ir.IntegerAttr.get(i64, value))

    def padding(self, pairs: tuple[tuple[int, int], ...]) -> ir.Attribute:
        return self._attr("padding", pairs, lambda: padding_attr(pairs))

    def dimension_numbers(self, p: ConvParams) -> ir.Attribute:
        return self._attr("dims", p.dims, lambda: self.dialect.dimension_numbers(p.dims))

    def tensor(self, shape: Sequence[int], element: ir.Type) -> ir.Type:
        key = (tuple(shape), element)
        ty = self._types.get(key)
        if ty is None:
            ty = self._types[key] = ir.RankedTensorType.get(list(shape), element)
        return ty

    # -- constants -----------------------------------------------------------------------------

    def zero(self, element: ir.Type) -> Ref:
        """The scalar zero constant of `element` (which `has_zero`) for pads: one per block and
        element type, first in the block so that it dominates every use."""
        zero = self._zero_refs.get(element)
        if zero is None:
            ty = self.tensor((), element)
            step = Step(ZERO, "constant", "", ty, (), {}, element)
            zero = self._zero_refs[element] = self._add(step, ty)
        return zero

    def block_zero(self, element: ir.Type, block: ir.Block, loc: ir.Location) -> ir.Value:
        """The scalar zero of `element`, built first in `block` so that it dominates every use
        (a program's ZERO steps resolve to it)."""
        ip = ir.InsertionPoint.at_block_begin(block)
        ty = ir.RankedTensorType(self.tensor((), element))
        value = _zero_attr(ty)
        if value is not None:
            op = ir.Operation.create(
                self._constant_name, results=[ty], attributes={"value": value}, loc=loc, ip=ip
            )
        else:
            op = ir.Operation.parse(f"{self._complex_zero(ty)} {loc}", context=loc.context)
            ip.insert(op)
        return op.result

    def _complex_zero(self, ty: ir.Type) -> str:
        return f'%0 = "{self._constant_name}"() {{value = dense<(0.0, 0.0)> : {ty}}} : () -> {ty}'

    def zeros(self, shape: Sequence[int], element: ir.Type) -> Ref:
        """A zero constant of `shape` and `element` (which `has_zero`); a dynamic extent by
        broadcasting the scalar zero."""
        if DYNAMIC in shape:
            scalar = self.zeros((), element)
            dims = self.index_vector(shape)
            attrs = {"broadcast_dimensions": self.i64_list(())}
            ty = self.tensor(shape, element)
            return self._create(self._dynamic_broadcast_name, ty, [scalar, dims], attrs)
        ty = ir.RankedTensorType(self.tensor(shape, element))
        value = _zero_attr(ty)
        if value is not None:
            return self._create(self._constant_name, ty, [], {"value": value})
        return self._add(Step(PARSE, "constant", self._complex_zero(ty), ty, (), {}), ty)

    def index_vector(self, values: Sequence[int]) -> Ref:
        """A `tensor<Nxi64>` of `values` whose dynamic entries are the size of the conv's dynamic
        extent (`get_dimension_size` of its lhs, as jax.export writes shapes on a symbolic batch);
        built once per conv and values."""
        key = tuple(values)
        found = self._index_vectors.get(key)
        if found is not None:
            return found
        i64 = ir.IntegerType.get_signless(64)
        parts: list[Ref] = []
        run: list[int] = []

        def flush() -> None:
            if run:
                ty = ir.RankedTensorType(self.tensor((len(run),), i64))
                body = ", ".join(str(v) for v in run)
                attr = ir.Attribute.parse(f"dense<[{body}]> : {ty}")
                parts.append(self._create(self._constant_name, ty, [], {"value": attr}))
                run.clear()

        for v in values:
            if v != DYNAMIC:
                run.append(int(v))
                continue
            flush()
            parts.append(self.dynamic_size())
        flush()
        vector = self._index_vectors[key] = self.concatenate(parts, 0)
        return vector

    def dynamic_size(self) -> Ref:
        """The size of the conv's dynamic extent (batch or feature) as a `tensor<1xi64>`."""
        assert self._dynamic is not None, "a dynamic extent outside a conv with a dynamic lhs"
        if self._dynamic_value is not None:
            return self._dynamic_value
        lhs, axis = self._dynamic
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        attrs = {"dimension": self.i64(axis)}
        size = self._create(self._dimension_size_name, self.tensor((), i32), [lhs], attrs)
        size = self.convert(size, i64)
        size = self._create(self._reshape_name, self.tensor((1,), i64), [size], {})
        self._dynamic_value = size
        return size

    # -- data movement -------------------------------------------------------------------------

    def pad(
        self,
        value: Ref,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int] | None = None,
    ) -> Ref:
        """`value` zero-padded (negative amounts crop; neither amount past the result's extent,
        which leaves the result as it is); a dynamic extent is never padded."""
        shape, element = self.info(value)
        zero = self.zero(element)
        interior = interior if interior is not None else [0] * len(low)
        bounded = [
            bounded_pad(h, lo, hi, i)
            for h, lo, hi, i in zip(shape, low, high, interior, strict=True)
        ]
        low, high = [lo for lo, _ in bounded], [hi for _, hi in bounded]
        out = tuple(
            padded_extent(h, lo, hi, i)
            for h, lo, hi, i in zip(shape, low, high, interior, strict=True)
        )
        attrs = {
            "edge_padding_low": self.i64_list(low),
            "edge_padding_high": self.i64_list(high),
            "interior_padding": self.i64_list(interior),
        }
        return self._create(self._pad_name, self.tensor(out, element), [value, zero], attrs)

    def slice(
        self,
        value: Ref,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> Ref:  # noqa: A003 (MLIR's op name)
        """`slice(value)`. A dynamic dim of `value` is taken whole (its start 0 and stride 1),
        by a `real_dynamic_slice` whose limit is its size."""
        strides = strides if strides is not None else [1] * len(start)
        shape, element = self.info(value)
        out = tuple(
            DYNAMIC if d == DYNAMIC else max(0, -(-(hi - lo) // s))
            for d, lo, hi, s in zip(shape, start, limit, strides, strict=True)
        )
        ty = self.tensor(out, element)
        if DYNAMIC in shape:
            limits = [DYNAMIC if d == DYNAMIC else hi for d, hi in zip(shape, limit, strict=True)]
            operands = [
                value,
                self.index_vector(start),
                self.index_vector(limits),
                self.index_vector(strides),
            ]
            return self._create(self._dynamic_slice_name, ty, operands, {})
        attrs = {
            "start_indices": self.i64_list(start),
            "limit_indices": self.i64_list(limit),
            "strides": self.i64_list(strides),
        }
        return self._create(self._slice_name, ty, [value], attrs)

    def slice_windows(self, value: Ref, axes: Sequence[int], windows: Sequence[Window]) -> Ref:
        """`value` sliced by (start, stride, length) `windows` on `axes`, or `value` itself if
        that is all of it."""
        bounds = _window_bounds(self.shape(value), tuple(axes), tuple(windows))
        return value if bounds is None else self.slice(value, *bounds)

    def reshape(self, value: Ref, shape: Sequence[int]) -> Ref:
        """`value` reshaped to `shape`, or `value` itself if it has that shape; a dynamic extent
        keeps the size of `value`'s (the dynamic dim is never split or merged), through
        `dynamic_reshape`. A reshape of a reshape is one reshape of its source, as MLIR's
        folder makes it."""
        if tuple(shape) == self.shape(value):
            return value
        if value >= 2:
            made = self._steps[value - 2]
            if made.kind == CREATE and made.name == self._reshape_name:
                value = made.operands[0]
                if tuple(shape) == self.shape(value):
                    return value
        ty = self.tensor(shape, self.info(value)[1])
        if DYNAMIC in shape:
            dims = self.index_vector(shape)
            return self._create(self._dynamic_reshape_name, ty, [value, dims], {})
        return self._create(self._reshape_name, ty, [value], {})

    def transpose(self, value: Ref, permutation: Sequence[int]) -> Ref:
        """`value` with its dims permuted, or `value` if the permutation is none."""
        if list(permutation) == list(range(len(permutation))):
            return value
        shape, element = self.info(value)
        out = tuple(shape[d] for d in permutation)
        attrs = {"permutation": self.i64_list(permutation)}
        return self._create(self._transpose_name, self.tensor(out, element), [value], attrs)

    def permute_reshape(
        self,
        value: Ref,
        permutation: Sequence[int],
        result_shape: Sequence[int],
        split: Sequence[int] | None = None,
    ) -> Ref:
        """`value` (reshaped to `split` first, if given) transposed, then reshaped to
        `result_shape`: one reshape of `value` when the permutation only moves unit dims, since
        a reshape of a reshape is one reshape."""
        if moves_data(tuple(split) if split is not None else self.shape(value), permutation):
            if split is not None:
                value = self.reshape(value, split)
            value = self.transpose(value, permutation)
        return self.reshape(value, result_shape)

    def reverse(self, value: Ref, axes: Sequence[int]) -> Ref:
        attrs = {"dimensions": self.i64_list(axes)}
        return self._create(self._reverse_name, self._type_of(value), [value], attrs)

    def concatenate(self, values: Sequence[Ref], axis: int) -> Ref:
        """`values` joined on `axis`, or the one value itself."""
        if len(values) == 1:
            return values[0]
        shapes = [self.shape(v) for v in values]
        assert all(shape[axis] != DYNAMIC for shape in shapes), "a join on the dynamic extent"
        out = list(shapes[0])
        out[axis] = sum(shape[axis] for shape in shapes)
        attrs = {"dimension": self.i64(axis)}
        ty = self.tensor(out, self.info(values[0])[1])
        return self._create(self._concat_name, ty, values, attrs)

    def concat_blocks(self, values: Sequence[Ref], axis: int, blocks: int) -> Ref:
        """`values` (of one shape) joined on `axis` block by block: `axis` holds `blocks` equal
        blocks (feature groups) and the result's block g is every value's block g in order, so a
        grouped conv still sees its groups."""
        if blocks == 1 or len(values) == 1:
            return self.concatenate(values, axis)
        shape = self.shape(values[0])
        split = (*shape[:axis], blocks, shape[axis] // blocks, *shape[axis + 1 :])
        parts = [self.reshape(v, split) for v in values]
        joined = self.concatenate(parts, axis + 1)
        out = list(shape)
        out[axis] *= len(values)
        return self.reshape(joined, out)

    def join_slices(
        self,
        value: Ref,
        axes: tuple[int, ...],
        windows: Sequence[Sequence[Window]],
        axis: int,
        blocks: int,
        pads: Sequence[Sequence[tuple[int, int]]] | None = None,
    ) -> Ref:
        """`value` sliced by each list of (start, stride, length) `windows` on `axes`, each slice
        zero-padded by its (low, high) `pads` on those axes, the slices joined on `axis` block by
        block (`concat_blocks`)."""
        slices = [self.slice_windows(value, axes, w) for w in windows]
        if pads is not None and any(any(pair) for pair in itertools.chain(*pads)):
            rank = len(self.shape(value))
            padded = []
            for piece, pairs in zip(slices, pads, strict=True):
                low, high = [0] * rank, [0] * rank
                for a, (lo, hi) in zip(axes, pairs, strict=True):
                    low[a], high[a] = lo, hi
                padded.append(self.pad(piece, low, high))
            slices = padded
        return self.concat_blocks(slices, axis, blocks)

    # -- arithmetic and convs ------------------------------------------------------------------

    def add(self, lhs: Ref, rhs: Ref) -> Ref:
        return self._create(self._add_name, self._type_of(lhs), [lhs, rhs], {})

    def convert(self, value: Ref, element: ir.Type) -> Ref:
        ty = self.tensor(self.shape(value), element)
        return self._create(self._convert_name, ty, [value], {})

    def conv(
        self, lhs: Ref, rhs: Ref, p: ConvParams, written: frozenset[str], element: ir.Type
    ) -> Ref:
        """A conv of `lhs` and `rhs` that computes `p`, with result element type `element`: a
        clone of the conv being rewritten, so every attribute it does not compute (precision
        config, frontend attributes, group counts) is copied verbatim in C++; the `written`
        window attributes are read off `p`."""
        attrs = {name: self._window_attr(name, p) for name in sorted(written)}
        ty = self.tensor(p.result_shape, element)
        return self._add(Step(CLONE, "convolution", "", ty, (lhs, rhs), attrs), ty)

    def _window_attr(self, name: str, p: ConvParams) -> ir.Attribute:
        if name == "padding":
            return self.padding(p.padding)
        if name == "window_reversal":
            return self.bool_list(p.reversal)
        if name == "dimension_numbers":
            return self.dimension_numbers(p)
        values = {
            "window_strides": p.strides,
            "lhs_dilation": p.lhs_dilation,
            "rhs_dilation": p.rhs_dilation,
        }[name]
        return self.i64_list(values)

    def _create(
        self,
        name: str,
        result: ir.Type,
        operands: Sequence[Ref],
        attributes: dict[str, ir.Attribute],
    ) -> Ref:
        step = Step(CREATE, self._short[name], name, result, tuple(operands), attributes)
        return self._add(step, result)


@lru_cache(maxsize=4096)
def _window_bounds(
    shape: tuple[int, ...], axes: tuple[int, ...], windows: tuple[Window, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(start, limit, strides) of the slice by (start, stride, length) `windows` on `axes`, or
    None when that is the whole operand."""
    if _is_whole(windows, tuple(shape[a] for a in axes)):
        return None
    start, limit, step = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, (lo, s, n) in zip(axes, windows, strict=True):
        start[axis], step[axis], limit[axis] = lo, s, lo + (n - 1) * s + 1
    return tuple(start), tuple(limit), tuple(step)
