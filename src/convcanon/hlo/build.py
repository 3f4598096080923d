"""Build HLO ops generically (`ir.Operation.create`) from the dialect table: one code path, two
dialects.

Every op built here goes in front of the conv being rewritten and carries that conv's location.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.dialects import Dialect

AnyOp = ir.Operation | ir.OpView


def create(
    name: str,
    result: ir.Type,
    operands: Sequence[ir.Value],
    attributes: Mapping[str, ir.Attribute],
    before: AnyOp,
) -> ir.Operation:
    """Create `name` right before `before`, with `before`'s location."""
    return ir.Operation.create(
        name,
        results=[result],
        operands=list(operands),
        attributes=dict(attributes),
        loc=before.location,
        ip=ir.InsertionPoint(before),
    )


def _tensor_of(value: ir.Value, shape: Sequence[int]) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), ir.ShapedType(value.type).element_type)


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


def zero_constant(
    dialect: Dialect, element: ir.Type, before: AnyOp, error: ConvcanonError
) -> ir.Value:
    """A scalar zero constant of `element`; `error` (EUET001) if the type has no zero."""
    value = zero_attr(element)
    if value is None:
        raise error
    scalar = ir.RankedTensorType.get([], element)
    return create(dialect.op("constant"), scalar, [], {"value": value}, before).result


def pad(
    dialect: Dialect,
    value: ir.Value,
    zero: ir.Value,
    low: Sequence[int],
    high: Sequence[int],
    interior: Sequence[int],
    before: AnyOp,
) -> ir.Value:
    shape = ir.ShapedType(value.type).shape
    out = [
        lo + hi + (h - 1) * (i + 1) + 1 if h > 0 else lo + hi
        for h, lo, hi, i in zip(shape, low, high, interior, strict=True)
    ]
    attrs = {
        "edge_padding_low": dialect.i64_list(low),
        "edge_padding_high": dialect.i64_list(high),
        "interior_padding": dialect.i64_list(interior),
    }
    return create(dialect.op("pad"), _tensor_of(value, out), [value, zero], attrs, before).result


def slice_(
    dialect: Dialect,
    value: ir.Value,
    start: Sequence[int],
    limit: Sequence[int],
    strides: Sequence[int],
    before: AnyOp,
) -> ir.Value:
    out = [max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides, strict=True)]
    attrs = {
        "start_indices": dialect.i64_list(start),
        "limit_indices": dialect.i64_list(limit),
        "strides": dialect.i64_list(strides),
    }
    return create(dialect.op("slice"), _tensor_of(value, out), [value], attrs, before).result


def add(dialect: Dialect, lhs: ir.Value, rhs: ir.Value, before: AnyOp) -> ir.Value:
    return create(dialect.op("add"), lhs.type, [lhs, rhs], {}, before).result


def rebuild_conv(
    conv: AnyOp,
    lhs: ir.Value,
    rhs: ir.Value,
    overrides: Mapping[str, ir.Attribute],
) -> ir.Operation:
    """A copy of `conv` (attributes, location, result type) on new operands, some attrs replaced."""
    attrs = {named.name: named.attr for named in _named_attributes(conv)}
    attrs.update(overrides)
    return create(conv.name, conv.results[0].type, [lhs, rhs], attrs, conv)


def _named_attributes(op: AnyOp) -> list[ir.NamedAttribute]:
    attributes = op.attributes
    return [attributes[i] for i in range(len(attributes))]
