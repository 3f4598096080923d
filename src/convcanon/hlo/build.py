"""Build HLO ops generically (`ir.Operation.create`) from the dialect table: one code path, two
dialects.

A `Builder` is MLIR's `ImplicitLocOpBuilder` for one pass run: `at(conv)` points it in front of
the conv being rewritten, whose location every op it builds carries, and each op's result type
is read from its operands (`b.pad(x, zero, low, high)`), so no caller threads an insertion
point, a location or a shape. It memoizes the attributes and types it makes: a model repeats a
few conv configurations thousands of times, and building an attribute from Python costs more
than a dictionary lookup.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo import params
from convcanon.hlo.dialects import Dialect, padding_attr
from convcanon.hlo.params import ConvParams

AnyOp = ir.Operation | ir.OpView

# A dynamic extent (`?`), as MLIR stores it. Only the batch dim of a conv can be dynamic here, so
# a shape has at most one, and every value derived from the conv's lhs has the same size there.
DYNAMIC = params.DYNAMIC

Window = tuple[int, int, int]  # (start, stride, length) of a slice in one dim


def is_dynamic(extent: int) -> bool:
    return extent == DYNAMIC


def static_extent(extent: int) -> int:
    """`extent`, or 1 for a dynamic one (multiply-adds are counted per batch element)."""
    return 1 if extent == DYNAMIC else extent


def _zero_attr(ty: ir.RankedTensorType) -> ir.Attribute | None:
    """The zero splat of `ty`, or None for complex: the Python bindings cannot hold a complex
    dense attribute (any access raises TypeError), so complex zeros are parsed as ops instead."""
    element = ty.element_type
    if isinstance(element, ir.IntegerType):
        return ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(element, 0))
    if isinstance(element, ir.FloatType):
        return ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(element, 0.0))
    return None


def shape_of(value: ir.Value) -> tuple[int, ...]:
    return tuple(ir.RankedTensorType(value.type).shape)


def element_of(value: ir.Value) -> ir.Type:
    return ir.ShapedType(value.type).element_type


def _is_whole(windows: Sequence[Window], extents: tuple[int, ...]) -> bool:
    return all(w == (0, 1, e) for w, e in zip(windows, extents, strict=True))


# The conv attributes a partial conv can write, and how each is read off its ConvParams.
WINDOW_ATTRS = (
    "window_strides",
    "padding",
    "lhs_dilation",
    "rhs_dilation",
    "window_reversal",
    "dimension_numbers",
)


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
        self.emitted: list[str] = []  # short names of the ops built for the current conv
        self.created: list[AnyOp] = []  # every op built in this pass run
        self._lists: dict[tuple[int, ...], ir.Attribute] = {}
        self._bools: dict[tuple[bool, ...], ir.Attribute] = {}
        self._i64s: dict[int, ir.Attribute] = {}
        self._dims: dict[tuple[object, ...], ir.Attribute] = {}
        self._index_vectors: dict[tuple[int, ...], ir.Value] = {}
        self._batch: tuple[ir.Value, int] | None = None  # the conv's lhs and its dynamic dim
        self._batch_value: ir.Value | None = None  # its size, once built
        self._paddings: dict[tuple[tuple[int, int], ...], ir.Attribute] = {}
        self._types: dict[tuple[tuple[int, ...], ir.Type], ir.Type] = {}
        self._zeros: dict[tuple[ir.Block, ir.Type], ir.Value] = {}
        self._info: dict[ir.Type, tuple[tuple[int, ...], ir.Type]] = {}  # shape, element
        self._short = {name: name.partition(".")[2] for name in self._names()}
        self._ip: ir.InsertionPoint | None = None
        self._loc: ir.Location | None = None
        self._block: ir.Block | None = None

    def _names(self) -> list[str]:
        return [v for k, v in vars(self).items() if k.endswith("_name")]

    def info(self, value: ir.Value) -> tuple[tuple[int, ...], ir.Type]:
        """The shape and element type of `value` (read once per type: types are uniqued)."""
        ty = value.type
        found = self._info.get(ty)
        if found is None:
            ranked = ir.RankedTensorType(ty)
            found = self._info[ty] = (tuple(ranked.shape), ranked.element_type)
        return found

    def shape(self, value: ir.Value) -> tuple[int, ...]:
        return self.info(value)[0]

    def at(self, conv: AnyOp) -> None:
        """Build in front of `conv`, with its location, until the next `at`. Every dynamic
        extent built is the batch of its lhs (the only dim allowed to be dynamic), read once."""
        self._ip = ir.InsertionPoint(conv)
        self._loc = conv.location
        self._block = conv.operation.block
        self.emitted = []
        self._index_vectors = {}
        self._batch_value = None
        self.batch_from(conv.operands[0])

    def batch_from(self, lhs: ir.Value) -> None:
        """Read the dynamic extent from `lhs` (the conv's lhs, or its transposed copy)."""
        dynamic = [axis for axis, d in enumerate(self.shape(lhs)) if d == DYNAMIC]
        self._batch = (lhs, dynamic[0]) if dynamic else None

    # -- attributes and types ------------------------------------------------------------------

    def i64_list(self, values: Sequence[int]) -> ir.Attribute:
        key = tuple(values)
        attr = self._lists.get(key)
        if attr is None:
            attr = self._lists[key] = self.dialect.i64_list(key)
        return attr

    def bool_list(self, values: Sequence[bool]) -> ir.Attribute:
        key = tuple(values)
        attr = self._bools.get(key)
        if attr is None:
            attr = self._bools[key] = self.dialect.bool_list(key)
        return attr

    def i64(self, value: int) -> ir.Attribute:
        """An i64 integer attribute (concatenate's dimension)."""
        attr = self._i64s.get(value)
        if attr is None:
            attr = self._i64s[value] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
        return attr

    def padding(self, pairs: tuple[tuple[int, int], ...]) -> ir.Attribute:
        attr = self._paddings.get(pairs)
        if attr is None:
            attr = self._paddings[pairs] = padding_attr(pairs)
        return attr

    def dimension_numbers(self, p: ConvParams) -> ir.Attribute:
        key = tuple(p.dims)
        attr = self._dims.get(key)
        if attr is None:
            attr = self._dims[key] = self.dialect.dimension_numbers(p.dims)
        return attr

    def tensor(self, shape: Sequence[int], element: ir.Type) -> ir.Type:
        key = (tuple(shape), element)
        ty = self._types.get(key)
        if ty is None:
            ty = self._types[key] = ir.RankedTensorType.get(list(shape), element)
        return ty

    # -- constants -----------------------------------------------------------------------------

    def zero(self, element: ir.Type) -> ir.Value:
        """The scalar zero constant of `element` (which `has_zero`) for pads in the current
        block: one per block and element type, first in the block so that it dominates every
        use."""
        assert self._block is not None
        key = (self._block, element)
        zero = self._zeros.get(key)
        if zero is None:
            ip, self._ip = self._ip, ir.InsertionPoint.at_block_begin(self._block)
            try:
                zero = self._zeros[key] = self.zeros((), element)
            finally:
                self._ip = ip
        return zero

    def zeros(self, shape: Sequence[int], element: ir.Type) -> ir.Value:
        """A zero constant of `shape` and `element` (which `has_zero`); a dynamic extent (the
        batch) by broadcasting the scalar zero."""
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
        self.emitted.append("constant")
        text = (
            f'%0 = "{self._constant_name}"() {{value = dense<(0.0, 0.0)> : {ty}}} : () -> {ty} '
            f"{self._loc}"
        )
        op = ir.Operation.parse(text, context=ty.context)
        assert self._ip is not None
        self._ip.insert(op)
        self.created.append(op)
        return op.result

    def index_vector(self, values: Sequence[int]) -> ir.Value:
        """A `tensor<Nxi64>` of `values` whose dynamic entries are the conv's batch size
        (`get_dimension_size` of its lhs, as jax.export writes shapes on a symbolic batch);
        built once per conv and values."""
        key = tuple(values)
        found = self._index_vectors.get(key)
        if found is not None:
            return found
        i64 = ir.IntegerType.get_signless(64)
        parts: list[ir.Value] = []
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
            parts.append(self._batch_size())
        flush()
        vector = self._index_vectors[key] = self.concatenate(parts, 0)
        return vector

    def _batch_size(self) -> ir.Value:
        """The conv's batch size as a `tensor<1xi64>`."""
        assert self._batch is not None, "a dynamic extent outside a dynamic-batch conv"
        if self._batch_value is not None:
            return self._batch_value
        lhs, axis = self._batch
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        attrs = {"dimension": self.i64(axis)}
        size = self._create(self._dimension_size_name, self.tensor((), i32), [lhs], attrs)
        size = self.convert(size, i64)
        size = self._create(self._reshape_name, self.tensor((1,), i64), [size], {})
        self._batch_value = size
        return size

    # -- data movement -------------------------------------------------------------------------

    def pad(
        self,
        value: ir.Value,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int] | None = None,
    ) -> ir.Value:
        """`value` zero-padded (negative amounts crop); a dynamic extent is never padded."""
        shape, element = self.info(value)
        zero = self.zero(element)
        interior = interior if interior is not None else [0] * len(low)
        out = tuple(
            h if h == DYNAMIC else lo + hi + (h - 1) * (i + 1) + 1 if h > 0 else lo + hi
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
        value: ir.Value,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> ir.Value:  # noqa: A003 (MLIR's op name)
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

    def slice_windows(
        self, value: ir.Value, axes: Sequence[int], windows: Sequence[Window]
    ) -> ir.Value:
        """`value` sliced by (start, stride, length) `windows` on `axes`, or `value` itself if
        that is all of it."""
        bounds = _window_bounds(self.shape(value), tuple(axes), tuple(windows))
        return value if bounds is None else self.slice(value, *bounds)

    def reshape(self, value: ir.Value, shape: Sequence[int]) -> ir.Value:
        """`value` reshaped to `shape`; a dynamic extent keeps the size of `value`'s (the batch
        dim is never split or merged), through `dynamic_reshape`."""
        ty = self.tensor(shape, self.info(value)[1])
        if DYNAMIC in shape:
            dims = self.index_vector(shape)
            return self._create(self._dynamic_reshape_name, ty, [value, dims], {})
        return self._create(self._reshape_name, ty, [value], {})

    def transpose(self, value: ir.Value, permutation: Sequence[int]) -> ir.Value:
        """`value` with its dims permuted, or `value` if the permutation is none."""
        if list(permutation) == list(range(len(permutation))):
            return value
        shape, element = self.info(value)
        out = tuple(shape[d] for d in permutation)
        attrs = {"permutation": self.i64_list(permutation)}
        ty = self.tensor(out, element)
        return self._create(self._transpose_name, ty, [value], attrs)

    def permute_reshape(
        self, value: ir.Value, permutation: Sequence[int], result_shape: Sequence[int]
    ) -> ir.Value:
        """`value` transposed, then reshaped to `result_shape`: one reshape when the
        permutation only moves unit dims."""
        shape = self.shape(value)
        moved = [d for d in permutation if shape[d] != 1]
        if moved != sorted(moved):
            value = self.transpose(value, permutation)
        return self.reshape(value, result_shape)

    def reverse(self, value: ir.Value, axes: Sequence[int]) -> ir.Value:
        attrs = {"dimensions": self.i64_list(axes)}
        return self._create(self._reverse_name, value.type, [value], attrs)

    def concatenate(self, values: Sequence[ir.Value], axis: int) -> ir.Value:
        """`values` joined on `axis`, or the one value itself."""
        if len(values) == 1:
            return values[0]
        shapes = [self.shape(v) for v in values]
        out = list(shapes[0])
        out[axis] = sum(shape[axis] for shape in shapes)
        attrs = {"dimension": self.i64(axis)}
        ty = self.tensor(out, self.info(values[0])[1])
        return self._create(self._concat_name, ty, values, attrs)

    def concat_blocks(self, values: Sequence[ir.Value], axis: int, blocks: int) -> ir.Value:
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
        value: ir.Value,
        axes: tuple[int, ...],
        windows: Sequence[Sequence[Window]],
        axis: int,
        blocks: int,
        pads: Sequence[Sequence[tuple[int, int]]] | None = None,
    ) -> ir.Value:
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

    def add(self, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return self._create(self._add_name, lhs.type, [lhs, rhs], {})

    def convert(self, value: ir.Value, element: ir.Type) -> ir.Value:
        ty = self.tensor(self.shape(value), element)
        return self._create(self._convert_name, ty, [value], {})

    def conv(
        self,
        source: AnyOp,
        lhs: ir.Value,
        rhs: ir.Value,
        p: ConvParams,
        written: frozenset[str],
        element: ir.Type,
    ) -> ir.Value:
        """A conv of `lhs` and `rhs` that computes `p`, with result element type `element`: a
        clone of `source`, so every attribute it does not compute (precision config, frontend
        attributes, group counts) is copied verbatim in C++; the `written` window attributes
        are read off `p`."""
        new = source.operation.clone(ip=self._ip)
        self.emitted.append("convolution")
        self.created.append(new)
        new.results[0].set_type(self.tensor(p.result_shape, element))
        operands = new.operands
        operands[0] = lhs
        operands[1] = rhs
        attributes = new.attributes
        for name in written:
            attributes[name] = self._window_attr(name, p)
        return new.results[0]

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
        operands: Sequence[ir.Value],
        attributes: dict[str, ir.Attribute],
    ) -> ir.Value:
        """Create `name` at the insertion point with the conv's location; returns its result."""
        self.emitted.append(self._short[name])
        op = ir.Operation.create(
            name,
            results=[result],
            operands=operands,
            attributes=attributes,
            loc=self._loc,
            ip=self._ip,
        )
        self.created.append(op)
        return op.result


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
