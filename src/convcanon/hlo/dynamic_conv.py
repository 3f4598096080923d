"""A `dynamic_conv` whose padding operand is a constant is a `convolution`.

Shape-polymorphic exports compute a conv's padding at run time when it depends on a symbolic
spatial extent; once shapes are refined the padding is a constant, and the op is the
convolution with that padding as its attribute (StableHLO's own canonicalize-dynamism makes
the same replacement). The pass replaces such ops first, so they are planned like any other
conv; a padding still computed at run time is reported with its reason instead.
"""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.hlo.dialects import Dialect, padding_attr, read_dimension_numbers, read_ints

RUNTIME_PADDING = "padding is computed at run time (a dynamic_conv; refine its shapes first)"

_INT64 = range(-(2**63), 2**63)
_CONSTANTS = frozenset({"stablehlo.constant", "mhlo.constant", "arith.constant"})


class NotAConvolution(Exception):
    """A constant padding with which the op is no valid convolution (the verifier of
    `dynamic_conv` cannot check its result against a padding known only at run time, and
    MHLO's does not check the padding's shape)."""


def constant_padding(op: ir.Operation) -> tuple[tuple[tuple[int, int], ...] | None, str]:
    """The padding pairs of a `dynamic_conv` when its padding operand is a constant the pass
    can read, else None and why not. Raises NotAConvolution where that constant is no padding
    of this conv: not integers, not `[spatial dims, 2]`, or an amount past int64."""
    if "padding" in op.attributes:
        return None, "it has a padding attribute as well as a padding operand"
    padding = op.operands[2]
    owner = padding.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.name not in _CONSTANTS:
        return None, RUNTIME_PADDING
    ty = padding.type
    spatial = len(read_dimension_numbers(op.attributes["dimension_numbers"]).lhs_spatial)
    if not (
        isinstance(ty, ir.RankedTensorType)
        and isinstance(ty.element_type, ir.IntegerType)
        and ty.shape == [spatial, 2]
    ):
        raise NotAConvolution(
            f"{op.name} expects an integer padding of shape [{spatial}, 2], but got {ty}"
        )
    value = owner.operation.attributes["value"]
    if not isinstance(value, ir.DenseIntElementsAttr):
        kind = str(value).partition("<")[0]
        return None, f"its padding is a {kind} constant, which the pass does not read"
    flat = read_ints(value)
    outside = [v for v in flat if v not in _INT64]
    if outside:
        raise NotAConvolution(f"{op.name} padding amount {outside[0]} does not fit in int64")
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2)), ""


def as_convolution(op: ir.Operation, dialect: Dialect) -> ir.Operation | None:
    """Replace `op`, a `dynamic_conv` with constant padding, by its `convolution` (same
    operands, attributes and location); the padding constant goes when nothing else uses it.
    None, and nothing changed, when the padding is not a constant."""
    pairs, _ = constant_padding(op)
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
