"""Build HLO ops generically (`ir.Operation.create`) from the dialect table: one code path, two
dialects.

Every op built here goes in front of the conv being rewritten and carries that conv's location.
A `Builder` lives for one pass run and memoizes the attributes and types it makes: a model repeats
a few conv configurations thousands of times, and building an attribute from Python costs more
than a dictionary lookup.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from jaxlib.mlir import ir

from convcanon.hlo import params
from convcanon.hlo.dialects import Dialect, padding_attr
from convcanon.hlo.recipe import CLONE, CREATE, ZERO, Step, Trace

AnyOp = ir.Operation | ir.OpView

# A dynamic extent (`?`), as MLIR stores it. Only the batch dim of a conv can be dynamic here, so
# a shape has at most one, and every value derived from the conv's lhs has the same size there.
DYNAMIC = params.DYNAMIC


def is_dynamic(extent: int) -> bool:
    return extent == DYNAMIC


def static_extent(extent: int) -> int:
    """`extent`, or 1 for a dynamic one (multiply-adds are counted per batch element)."""
    return 1 if extent == DYNAMIC else extent


def has_zero(element: ir.Type) -> bool:
    """Whether `element` has a zero to pad with: not quantized types, and not f8E8M0FNU (an
    exponent-only type whose smallest value is 2^-127)."""
    if isinstance(element, (ir.IntegerType, ir.ComplexType)):
        return True
    return isinstance(element, ir.FloatType) and str(element) not in _NO_ZERO_FLOATS


def _zero_attr(ty: ir.RankedTensorType) -> ir.Attribute | None:
    """The zero splat of `ty`, or None for complex: the Python bindings cannot hold a complex
    dense attribute (any access raises TypeError), so complex zeros are parsed as ops instead."""
    element = ty.element_type
    if isinstance(element, ir.IntegerType):
        return ir.DenseElementsAttr.get_splat(ty, ir.IntegerAttr.get(element, 0))
    if isinstance(element, ir.FloatType):
        return ir.DenseElementsAttr.get_splat(ty, ir.FloatAttr.get(element, 0.0))
    return None


_NO_ZERO_FLOATS = frozenset({"f8E8M0FNU"})


def is_narrow_float(element: ir.Type) -> bool:
    """f16, bf16 and the f8/f6/f4 types: partial sums in these lose precision at each round."""
    return isinstance(element, ir.FloatType) and element.width < 32


class Builder:
    """Creates the rewrite's ops before a given op, with memoized attributes and result types."""

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
        self.emitted: list[str] = []  # short names of every op built, in order
        self.created: list[AnyOp] = []  # every op built in this pass run
        self._lists: dict[tuple[int, ...], ir.Attribute] = {}
        self._i64s: dict[int, ir.Attribute] = {}
        self._index_vectors: dict[tuple[int, ...], ir.Value] = {}
        self._batch: tuple[ir.Value, int] | None = None  # the conv's lhs and its dynamic dim
        self._batch_value: ir.Value | None = None  # its size, once built
        self._paddings: dict[tuple[tuple[int, int], ...], ir.Attribute] = {}
        self._types: dict[tuple[tuple[int, ...], ir.Type], ir.Type] = {}
        self._zeros: dict[tuple[ir.Block, ir.Type], ir.Value] = {}
        self.trace: Trace | None = None  # records the ops built, while set

    def begin_conv(self, lhs: ir.Value) -> None:
        """Start the rewrite of the conv whose lhs is `lhs`: every dynamic extent it builds is
        that lhs's batch (the only dim allowed to be dynamic), read once per conv."""
        self.emitted = []
        self._index_vectors = {}
        self._batch_value = None
        shape = ir.RankedTensorType(lhs.type).shape
        dynamic = [axis for axis, d in enumerate(shape) if is_dynamic(d)]
        self._batch = (lhs, dynamic[0]) if dynamic else None

    def i64_list(self, values: Sequence[int]) -> ir.Attribute:
        key = tuple(values)
        attr = self._lists.get(key)
        if attr is None:
            attr = self._lists[key] = self.dialect.i64_list(key)
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

    def tensor(self, shape: Sequence[int], element: ir.Type) -> ir.Type:
        key = (tuple(shape), element)
        ty = self._types.get(key)
        if ty is None:
            ty = self._types[key] = ir.RankedTensorType.get(list(shape), element)
        return ty

    def zero(self, element: ir.Type, block: ir.Block, loc: ir.Location) -> ir.Value:
        """The scalar zero constant of `element` (which `has_zero`) for pads in `block`: one per
        block and element type, first in the block so that it dominates every use."""
        key = (block, element)
        zero = self._zeros.get(key)
        trace, self.trace = self.trace, None  # the constant is not the conv's: not recorded
        if zero is None:
            ip = ir.InsertionPoint.at_block_begin(block)
            zero = self._zeros[key] = self.zeros((), element, ip, loc)
        self.trace = trace
        if trace is not None:
            trace.add(Step(ZERO, "", "", [], (), {}, element), zero)
        return zero

    def zeros(
        self,
        shape: Sequence[int],
        element: ir.Type,
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        """A zero constant of `shape` and `element` (which `has_zero`); a dynamic extent (the
        batch) by broadcasting the scalar zero."""
        if any(is_dynamic(d) for d in shape):
            scalar = self.zeros((), element, ip, loc)
            dims = self.index_vector(shape, ip, loc)
            attrs = {"broadcast_dimensions": self.i64_list(())}
            ty = self.tensor(shape, element)
            return self._create(self._dynamic_broadcast_name, ty, [scalar, dims], attrs, ip, loc)
        ty = ir.RankedTensorType(self.tensor(shape, element))
        value = _zero_attr(ty)
        if value is not None:
            return self._create(self._constant_name, ty, [], {"value": value}, ip, loc)
        self.emitted.append("constant")
        if self.trace is not None:
            self.trace.valid = False  # a parsed op: not recorded
        text = (
            f'%0 = "{self._constant_name}"() {{value = dense<(0.0, 0.0)> : {ty}}} : () -> {ty} '
            f"{loc}"
        )
        op = ir.Operation.parse(text, context=ty.context)
        ip.insert(op)
        self.created.append(op)
        return op.result

    def pad(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        zero: ir.Value,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        """`pad(value, zero)`; `shape` is `value`'s. Returns the result and its shape."""
        out = tuple(
            h if is_dynamic(h) else lo + hi + (h - 1) * (i + 1) + 1 if h > 0 else lo + hi
            for h, lo, hi, i in zip(shape, low, high, interior, strict=True)
        )
        attrs = {
            "edge_padding_low": self.i64_list(low),
            "edge_padding_high": self.i64_list(high),
            "interior_padding": self.i64_list(interior),
        }
        ty = self.tensor(out, element)
        return self._create(self._pad_name, ty, [value, zero], attrs, ip, loc), out

    def slice_(
        self,
        value: ir.Value,
        element: ir.Type,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        """`slice(value)`; returns the result and its shape. A dynamic dim of `value` is taken
        whole (its start 0 and stride 1), by a `real_dynamic_slice` whose limit is its size."""
        shape = ir.RankedTensorType(value.type).shape
        if any(is_dynamic(d) for d in shape):
            return self._dynamic_slice(value, shape, element, start, limit, strides, ip, loc)
        out = tuple(
            max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides, strict=True)
        )
        attrs = {
            "start_indices": self.i64_list(start),
            "limit_indices": self.i64_list(limit),
            "strides": self.i64_list(strides),
        }
        ty = self.tensor(out, element)
        return self._create(self._slice_name, ty, [value], attrs, ip, loc), out

    def _dynamic_slice(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        out = tuple(
            DYNAMIC if is_dynamic(d) else max(0, -(-(hi - lo) // s))
            for d, lo, hi, s in zip(shape, start, limit, strides, strict=True)
        )
        limits = [DYNAMIC if is_dynamic(d) else hi for d, hi in zip(shape, limit, strict=True)]
        operands = [
            value,
            self.index_vector(start, ip, loc),
            self.index_vector(limits, ip, loc),
            self.index_vector(strides, ip, loc),
        ]
        ty = self.tensor(out, element)
        return self._create(self._dynamic_slice_name, ty, operands, {}, ip, loc), out

    def index_vector(
        self, values: Sequence[int], ip: ir.InsertionPoint, loc: ir.Location
    ) -> ir.Value:
        """A `tensor<Nxi64>` of `values` whose dynamic entries are the conv's batch size
        (`get_dimension_size` of its lhs, as jax.export writes shapes on a symbolic batch);
        built once per conv and values."""
        key = tuple(values)
        found = self._index_vectors.get(key)
        if found is not None:
            return found
        i64 = ir.IntegerType.get_signless(64)
        parts: list[ir.Value] = []
        shapes: list[tuple[int, ...]] = []
        run: list[int] = []

        def flush() -> None:
            if run:
                ty = ir.RankedTensorType(self.tensor((len(run),), i64))
                body = ", ".join(str(v) for v in run)
                attr = ir.Attribute.parse(f"dense<[{body}]> : {ty}")
                parts.append(self._create(self._constant_name, ty, [], {"value": attr}, ip, loc))
                shapes.append((len(run),))
                run.clear()

        for v in values:
            if not is_dynamic(v):
                run.append(int(v))
                continue
            flush()
            parts.append(self._batch_size(ip, loc))
            shapes.append((1,))
        flush()
        vector = self._index_vectors[key] = self.concatenate(parts, shapes, i64, 0, ip, loc)[0]
        return vector

    def _batch_size(self, ip: ir.InsertionPoint, loc: ir.Location) -> ir.Value:
        """The conv's batch size as a `tensor<1xi64>`."""
        assert self._batch is not None, "a dynamic extent outside a dynamic-batch conv"
        if self._batch_value is not None:
            return self._batch_value
        lhs, axis = self._batch
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        attrs = {"dimension": self.i64(axis)}
        size = self._create(self._dimension_size_name, self.tensor((), i32), [lhs], attrs, ip, loc)
        size = self.convert(size, self.tensor((), i64), ip, loc)
        size = self._create(self._reshape_name, self.tensor((1,), i64), [size], {}, ip, loc)
        self._batch_value = size
        return size

    def add(
        self, lhs: ir.Value, rhs: ir.Value, ip: ir.InsertionPoint, loc: ir.Location
    ) -> ir.Value:
        return self._create(self._add_name, lhs.type, [lhs, rhs], {}, ip, loc)

    def convert(
        self, value: ir.Value, result: ir.Type, ip: ir.InsertionPoint, loc: ir.Location
    ) -> ir.Value:
        return self._create(self._convert_name, result, [value], {}, ip, loc)

    def concatenate(
        self,
        values: Sequence[ir.Value],
        shapes: Sequence[tuple[int, ...]],
        element: ir.Type,
        axis: int,
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        """`values` (of `shapes`) joined on `axis`, or the one value itself."""
        if len(values) == 1:
            return values[0], shapes[0]
        out = list(shapes[0])
        out[axis] = sum(shape[axis] for shape in shapes)
        attrs = {"dimension": self.i64(axis)}
        ty = self.tensor(out, element)
        return self._create(self._concat_name, ty, values, attrs, ip, loc), tuple(out)

    def reshape(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        """`value` reshaped to `shape`; a dynamic extent keeps the size of `value`'s (the batch
        dim is never split or merged), through `dynamic_reshape`."""
        ty = self.tensor(shape, element)
        if any(is_dynamic(d) for d in shape):
            dims = self.index_vector(shape, ip, loc)
            return self._create(self._dynamic_reshape_name, ty, [value, dims], {}, ip, loc)
        return self._create(self._reshape_name, ty, [value], {}, ip, loc)

    def transpose(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        permutation: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        """`value` (of `shape`) with its dims permuted, or `value` if the permutation is none."""
        if list(permutation) == list(range(len(permutation))):
            return value, tuple(shape)
        out = tuple(shape[d] for d in permutation)
        attrs = {"permutation": self.i64_list(permutation)}
        ty = self.tensor(out, element)
        return self._create(self._transpose_name, ty, [value], attrs, ip, loc), out

    def permute_reshape(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        permutation: Sequence[int],
        result_shape: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        """`value` transposed, then reshaped to `result_shape`: one reshape when the
        permutation only moves unit dims."""
        moved = [d for d in permutation if shape[d] != 1]
        if moved != sorted(moved):
            value, _ = self.transpose(value, shape, element, permutation, ip, loc)
        return self.reshape(value, result_shape, element, ip, loc)

    def reverse(
        self,
        value: ir.Value,
        shape: Sequence[int],
        element: ir.Type,
        axes: Sequence[int],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        attrs = {"dimensions": self.i64_list(axes)}
        return self._create(
            self._reverse_name, self.tensor(shape, element), [value], attrs, ip, loc
        )

    def concat_blocks(
        self,
        values: Sequence[ir.Value],
        shape: tuple[int, ...],
        element: ir.Type,
        axis: int,
        blocks: int,
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> tuple[ir.Value, tuple[int, ...]]:
        """`values` (each of `shape`) joined on `axis` block by block: `axis` holds `blocks`
        equal blocks (feature groups) and the result's block g is every value's block g in
        order, so a grouped conv still sees its groups."""
        if blocks == 1 or len(values) == 1:
            return self.concatenate(values, [shape] * len(values), element, axis, ip, loc)
        split = (*shape[:axis], blocks, shape[axis] // blocks, *shape[axis + 1 :])
        parts = [self.reshape(v, split, element, ip, loc) for v in values]
        joined, _ = self.concatenate(parts, [split] * len(parts), element, axis + 1, ip, loc)
        out = list(shape)
        out[axis] *= len(values)
        return self.reshape(joined, out, element, ip, loc), tuple(out)

    def join_slices(
        self,
        value: ir.Value,
        shape: tuple[int, ...],
        element: ir.Type,
        axes: tuple[int, ...],
        windows: Sequence[Sequence[tuple[int, int, int]]],
        axis: int,
        blocks: int,
        ip: ir.InsertionPoint,
        loc: ir.Location,
        pads: Sequence[Sequence[tuple[int, int]]] | None = None,
        zero: Callable[[], ir.Value] | None = None,
    ) -> ir.Value:
        """`value` (of `shape`) sliced by each list of (start, stride, length) `windows` on
        `axes`, each slice zero-padded by its (low, high) `pads` on those axes (`zero()` is the
        pad value), the slices joined on `axis` block by block (`concat_blocks`)."""

        def sliced(w: Sequence[tuple[int, int, int]]) -> tuple[int, ...]:
            part = list(shape)
            for a, (_, _, length) in zip(axes, w, strict=True):
                part[a] = length
            return tuple(part)

        slices = [self.slice_spatial(value, shape, element, axes, w, ip, loc) for w in windows]
        part = sliced(windows[0])
        if pads is not None and any(any(pair) for pair in itertools.chain(*pads)):
            assert zero is not None, "padded slices need a zero"
            padded = []
            for piece, w, pairs in zip(slices, windows, pads, strict=True):
                low, high, none = [0] * len(shape), [0] * len(shape), [0] * len(shape)
                for a, (lo, hi) in zip(axes, pairs, strict=True):
                    low[a], high[a] = lo, hi
                padded.append(self.pad(piece, sliced(w), element, zero(), low, high, none, ip, loc))
            slices = [v for v, _ in padded]
            part = padded[0][1]
        return self.concat_blocks(slices, part, element, axis, blocks, ip, loc)[0]

    def slice_spatial(
        self,
        value: ir.Value,
        shape: tuple[int, ...],
        element: ir.Type,
        axes: tuple[int, ...],
        windows: Sequence[tuple[int, int, int]],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        """`value` (of `shape`) sliced by (start, stride, length) `windows` on `axes`, or
        `value` itself if that is all of it."""
        if is_whole(windows, tuple(shape[a] for a in axes)):
            return value
        start, limit, step = [0] * len(shape), list(shape), [1] * len(shape)
        for axis, (lo, s, n) in zip(axes, windows, strict=True):
            start[axis], step[axis], limit[axis] = lo, s, lo + (n - 1) * s + 1
        return self.slice_(value, element, start, limit, step, ip, loc)[0]

    def rebuild_conv(
        self,
        conv: AnyOp,
        lhs: ir.Value,
        rhs: ir.Value,
        overrides: Mapping[str, ir.Attribute],
        ip: ir.InsertionPoint,
        result: ir.Type | None = None,
    ) -> ir.Operation:
        """A copy of `conv` (attributes, location, result type unless `result` is given) on new
        operands, some attrs replaced: a clone, so every attribute is copied verbatim in C++."""
        new = conv.operation.clone(ip=ip)
        self.emitted.append("convolution")
        self.created.append(new)
        if result is not None:
            new.results[0].set_type(result)
        if self.trace is not None:
            step = Step(
                CLONE,
                "convolution",
                "",
                [] if result is None else [result],
                self.trace.indices((lhs, rhs)),
                dict(overrides),
            )
            self.trace.add(step, new.results[0])
        operands = new.operands
        operands[0] = lhs
        operands[1] = rhs
        attributes = new.attributes
        for name, attr in overrides.items():
            attributes[name] = attr
        return new

    def _create(
        self,
        name: str,
        result: ir.Type,
        operands: Sequence[ir.Value],
        attributes: Mapping[str, ir.Attribute],
        ip: ir.InsertionPoint,
        loc: ir.Location,
    ) -> ir.Value:
        """Create `name` at `ip` with location `loc`; returns its one result."""
        short = name.partition(".")[2]
        self.emitted.append(short)
        op = ir.Operation.create(
            name,
            results=[result],
            operands=list(operands),
            attributes=dict(attributes),
            loc=loc,
            ip=ip,
        )
        self.created.append(op)
        value = op.result
        if self.trace is not None:
            step = Step(
                CREATE,
                short,
                name,
                [result],
                self.trace.indices(operands),
                dict(attributes),
            )
            self.trace.add(step, value)
        return value


def is_whole(windows: Sequence[tuple[int, int, int]], extents: tuple[int, ...]) -> bool:
    """Whether slicing by (start, stride, length) `windows` would return the whole operand."""
    return all(w == (0, 1, e) for w, e in zip(windows, extents, strict=True))
