"""A `dynamic_conv` whose padding operand is a constant is a `convolution`.

Shape-polymorphic exports compute a conv's padding at run time when it depends on a symbolic
spatial extent; once shapes are refined the padding is a constant, and the op is the
convolution with that padding as its attribute (StableHLO's own canonicalize-dynamism makes
the same replacement). The pass replaces such ops first, so they are planned like any other
conv; a padding still computed at run time is reported with its reason instead.
"""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.hlo.dialects import Dialect, padding_attr, read_ints

_INT64 = range(-(2**63), 2**63)


def constant_padding(op: ir.Operation, dialect: Dialect) -> tuple[tuple[int, int], ...] | None:
    """The padding pairs of a `dynamic_conv` when its padding operand is a constant of
    `dialect` and the op has no padding attribute of its own (an MHLO op may carry both)."""
    if "padding" in op.attributes:
        return None
    owner = op.operands[2].owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return None  # a block argument
    constant = owner.operation
    if constant.name != dialect.op("constant"):
        return None
    value = constant.attributes["value"]
    if not isinstance(value, ir.DenseIntElementsAttr):
        return None
    flat = read_ints(value)
    if any(v not in _INT64 for v in flat):
        return None  # an unsigned amount no i64 padding attribute holds
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


class NotAConvolution(Exception):
    """A constant padding with which the op's declared types are no valid convolution (the
    verifier of `dynamic_conv` cannot check them: its padding is only known at run time)."""


def as_convolution(op: ir.Operation, dialect: Dialect) -> ir.Operation | None:
    """Replace `op`, a `dynamic_conv` with constant padding, by its `convolution` (same
    operands, attributes and location); the padding constant goes when nothing else uses it.
    None, and nothing changed, when the padding is not a constant."""
    pairs = constant_padding(op, dialect)
    if pairs is None:
        return None
    attributes = {name: op.attributes[name] for name in op.attributes}
    attributes["padding"] = padding_attr(pairs)
    with ir.InsertionPoint(op), op.location:
        conv = ir.Operation.create(
            dialect.conv,
            results=[op.results[0].type],
            operands=[op.operands[0], op.operands[1]],
            attributes=attributes,
        )
    try:
        conv.verify()
    except ir.MLIRError as err:
        conv.erase()
        (first, *_) = err.error_diagnostics or [err]
        message = str(getattr(first, "message", first)).split(" (see current operation:")[0]
        raise NotAConvolution(
            f"{dialect.dynamic_conv} with the constant padding {[list(p) for p in pairs]}"
            f" is no valid {dialect.conv}: {message.strip().splitlines()[0]}"
        ) from None
    constant = op.operands[2].owner
    op.results[0].replace_all_uses_with(conv.results[0])
    op.erase()
    assert isinstance(constant, (ir.Operation, ir.OpView))
    if not list(constant.results[0].uses):
        constant.operation.erase()
    return conv
