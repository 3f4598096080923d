"""A `dynamic_conv` whose padding operand is a constant is a `convolution`.

Shape-polymorphic exports compute a conv's padding at run time when it depends on a symbolic
spatial extent; once shapes are refined the padding is a constant, and the op is the
convolution with that padding as its attribute (StableHLO's own canonicalize-dynamism makes
the same replacement). The pass replaces such ops first, so they are planned like any other
conv; a padding still computed at run time is reported with its reason instead.
"""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.hlo.dialects import Dialect, padding_attr
from convcanon.hlo.params import NotAConvolution, constant_padding


def as_convolution(op: ir.Operation, dialect: Dialect) -> ir.Operation | str:
    """Replace `op`, a `dynamic_conv` with constant padding, by its `convolution` (same
    operands, attributes and location); the padding constant goes when nothing else uses it.
    When the pass does not read the padding (not a constant, say), why not, and nothing
    changed."""
    pairs, unread = constant_padding(op)
    if pairs is None:
        return unread
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
