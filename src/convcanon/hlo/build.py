"""Build HLO ops generically (`ir.Operation.create`) from the dialect table: one code path, two
dialects.

Every op built here goes in front of the conv being rewritten and carries that conv's location.
A `Builder` lives for one pass run and memoizes the attributes and types it makes: a model repeats
a few conv configurations thousands of times, and building an attribute from Python costs more
than a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jaxlib.mlir import ir

from convcanon.hlo.dialects import Dialect, padding_attr

AnyOp = ir.Operation | ir.OpView


def zero_attr(element: ir.Type) -> ir.Attribute | None:
    """The scalar zero tensor of `element`, or None if it has no zero (e.g. quantized)."""
    scalar = ir.RankedTensorType.get([], element)
    if isinstance(element, ir.IntegerType):
        return ir.DenseElementsAttr.get_splat(scalar, ir.IntegerAttr.get(element, 0))
    if isinstance(element, ir.FloatType):
        return ir.DenseElementsAttr.get_splat(scalar, ir.FloatAttr.get(element, 0.0))
    if isinstance(element, ir.ComplexType):
        return ir.Attribute.parse(f"dense<(0.0, 0.0)> : {scalar}")
    return None


class Builder:
    """Creates the rewrite's ops before a given op, with memoized attributes and result types."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._pad_name = dialect.op("pad")
        self._slice_name = dialect.op("slice")
        self._add_name = dialect.op("add")
        self._constant_name = dialect.op("constant")
        self._lists: dict[tuple[int, ...], ir.Attribute] = {}
        self._paddings: dict[tuple[tuple[int, int], ...], ir.Attribute] = {}
        self._types: dict[tuple[tuple[int, ...], ir.Type], ir.Type] = {}
        self._zeros: dict[tuple[ir.Block, ir.Type], ir.Value] = {}

    def i64_list(self, values: Sequence[int]) -> ir.Attribute:
        key = tuple(values)
        attr = self._lists.get(key)
        if attr is None:
            attr = self._lists[key] = self.dialect.i64_list(key)
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

    def zero(
        self, element: ir.Type, value: ir.Attribute, block: ir.Block, loc: ir.Location
    ) -> ir.Value:
        """The scalar zero constant of `element` for pads in `block` (`value` is its `zero_attr`):
        one per block and element type, first in the block so that it dominates every use."""
        key = (block, element)
        zero = self._zeros.get(key)
        if zero is None:
            scalar = self.tensor((), element)
            ip = ir.InsertionPoint.at_block_begin(block)
            zero = _create(self._constant_name, scalar, [], {"value": value}, ip, loc)
            self._zeros[key] = zero
        return zero

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
            lo + hi + (h - 1) * (i + 1) + 1 if h > 0 else lo + hi
            for h, lo, hi, i in zip(shape, low, high, interior, strict=True)
        )
        attrs = {
            "edge_padding_low": self.i64_list(low),
            "edge_padding_high": self.i64_list(high),
            "interior_padding": self.i64_list(interior),
        }
        ty = self.tensor(out, element)
        return _create(self._pad_name, ty, [value, zero], attrs, ip, loc), out

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
        """`slice(value)`; returns the result and its shape."""
        out = tuple(
            max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides, strict=True)
        )
        attrs = {
            "start_indices": self.i64_list(start),
            "limit_indices": self.i64_list(limit),
            "strides": self.i64_list(strides),
        }
        ty = self.tensor(out, element)
        return _create(self._slice_name, ty, [value], attrs, ip, loc), out

    def add(
        self, lhs: ir.Value, rhs: ir.Value, ip: ir.InsertionPoint, loc: ir.Location
    ) -> ir.Value:
        return _create(self._add_name, lhs.type, [lhs, rhs], {}, ip, loc)

    def rebuild_conv(
        self,
        conv: AnyOp,
        lhs: ir.Value,
        rhs: ir.Value,
        overrides: Mapping[str, ir.Attribute],
        ip: ir.InsertionPoint,
    ) -> ir.Operation:
        """A copy of `conv` (attributes, location, result type) on new operands, some attrs
        replaced: a clone, so every attribute is copied verbatim in C++."""
        new = conv.operation.clone(ip=ip)
        operands = new.operands
        operands[0] = lhs
        operands[1] = rhs
        attributes = new.attributes
        for name, attr in overrides.items():
            attributes[name] = attr
        return new


def _create(
    name: str,
    result: ir.Type,
    operands: Sequence[ir.Value],
    attributes: Mapping[str, ir.Attribute],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """Create `name` at `ip` with location `loc`; returns its one result."""
    return ir.Operation.create(
        name,
        results=[result],
        operands=list(operands),
        attributes=dict(attributes),
        loc=loc,
        ip=ip,
    ).result
