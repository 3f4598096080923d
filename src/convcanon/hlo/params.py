"""Read a convolution op's `ConvParams` (the plain values of `conv_params.py`), once.

Missing optional attributes mean their
defaults (stride 1, padding 0, dilations 1, reversal false). One dynamic extent is read: the
batch, or the lhs feature dim (a kernel-gradient conv contracts the batch there, the kernel's
input features being the same size). Any other dynamic or unranked operand leaves the shapes
unknown and records why, so the gate can skip the conv with that reason.
"""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.hlo.conv_params import DYNAMIC, INT64_MAX, ConvParams, DimensionNumbers
from convcanon.hlo.dialects import read_dimension_numbers, read_ints, read_padding


def _dynamic_axes(value: ir.Value) -> list[int] | None:
    """The dynamic dims of `value`'s type, or None when it is unranked."""
    ty = value.type
    if not isinstance(ty, ir.RankedTensorType):
        return None
    return [axis for axis in range(ty.rank) if ty.is_dynamic_dim(axis)]


def _operand_shapes(
    op: ir.Operation | ir.OpView, dims: DimensionNumbers
) -> tuple[tuple[tuple[int, ...], ...], str | None]:
    """The lhs, rhs and result shapes, with at most one dynamic size among them: the lhs batch
    (and the result's), or the lhs feature dim (and the kernel's input features, which a conv
    without feature groups reads in step with it; the result is then static). Otherwise no
    shapes, and why."""
    values = (("lhs", op.operands[0]), ("rhs", op.operands[1]), ("result", op.results[0]))
    allowed = ([dims.lhs_batch], [], [dims.out_batch])
    for index, (what, value) in enumerate(values):
        axes = _dynamic_axes(value)
        if axes is None:
            return (), f"{what} type {value.type} is unranked"
        if index == 0 and axes == [dims.lhs_feature]:
            allowed = ([dims.lhs_feature], [dims.rhs_in_feature], [])
        if axes and axes != allowed[index]:
            return (), f"dynamic spatial or feature extent: {what} is {value.type}"
    return tuple(tuple(ir.RankedTensorType(v.type).shape) for _, v in values), None


RUNTIME_PADDING = "padding is computed at run time (a dynamic_conv; refine its shapes first)"

_CONSTANTS = frozenset({"stablehlo.constant", "mhlo.constant", "arith.constant"})
_PADDING_WIDTHS = frozenset({2, 4, 8, 16, 32, 64})  # StableHLO's rule (MHLO's allows i1)


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
    element = ty.element_type if isinstance(ty, ir.RankedTensorType) else None
    if not (
        isinstance(element, ir.IntegerType)
        and element.width in _PADDING_WIDTHS
        and ir.RankedTensorType(ty).shape == [spatial, 2]
    ):
        raise NotAConvolution(
            f"{op.name} expects an integer padding of shape [{spatial}, 2], but got {ty}"
        )
    value = owner.operation.attributes["value"]
    if not isinstance(value, ir.DenseIntElementsAttr):
        kind = str(value).partition("<")[0]
        return None, f"its padding is a {kind} constant, which the pass does not read"
    flat = read_ints(value)
    outside = [v for v in flat if not -INT64_MAX - 1 <= v <= INT64_MAX]
    if outside:
        raise NotAConvolution(f"{op.name} padding amount {outside[0]} does not fit in int64")
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2)), ""


def read_conv_params(op: ir.Operation | ir.OpView, unread_padding: str = "") -> ConvParams:
    """Read every fact the canonicalization needs from a stablehlo/mhlo convolution op.

    A `dynamic_conv` here has a padding operand the pass does not read (computed at run time,
    say): its amounts are `?` and the conv is not planned, for the reason `unread_padding`
    (read from the operand when not given)."""
    attrs = op.attributes
    dims = read_dimension_numbers(attrs["dimension_numbers"])
    n = len(dims.lhs_spatial)

    def ints(name: str, default: int) -> tuple[int, ...]:
        return read_ints(attrs[name]) if name in attrs else (default,) * n

    padding = read_padding(attrs["padding"]) if "padding" in attrs else ((0, 0),) * n
    shapes, dynamic_reason = _operand_shapes(op, dims)
    if op.name.endswith(".dynamic_conv"):  # one the pass could not make a convolution
        padding = ((DYNAMIC, DYNAMIC),) * n
        unread_padding = unread_padding or constant_padding(op.operation)[1]
        shapes, dynamic_reason = (), dynamic_reason or unread_padding
    lhs_shape, rhs_shape, out_shape = shapes if shapes else ((), (), ())
    lhs_type = op.operands[0].type
    element = str(lhs_type.element_type) if isinstance(lhs_type, ir.ShapedType) else str(lhs_type)
    values = (op.operands[0], op.operands[1], op.results[0])
    lhs_el, rhs_el, out_el = (_element(v.type) for v in values)
    return ConvParams(
        lhs_shape=lhs_shape,
        rhs_shape=rhs_shape,
        result_shape=out_shape,
        element_type=element,
        dims=dims,
        strides=ints("window_strides", 1),
        padding=padding,
        lhs_dilation=ints("lhs_dilation", 1),
        rhs_dilation=ints("rhs_dilation", 1),
        reversal=tuple(bool(v) for v in ints("window_reversal", 0)),
        feature_group_count=_int_attr(attrs, "feature_group_count"),
        batch_group_count=_int_attr(attrs, "batch_group_count"),
        dynamic_reason=dynamic_reason,
        lhs_zero=has_zero(lhs_el),
        rhs_zero=has_zero(rhs_el),
        result_zero=has_zero(out_el),
        narrow_result=isinstance(out_el, ir.FloatType) and out_el.width < 32,
        attributes=frozenset(name for name in _WINDOW_ATTRS if name in attrs),
    )


def _element(ty: ir.Type) -> ir.Type:
    return ty.element_type if isinstance(ty, ir.ShapedType) else ty


def has_zero(element: ir.Type) -> bool:
    """Whether `element` has a zero to pad with: not quantized types, and not f8E8M0FNU (an
    exponent-only type whose smallest value is 2^-127)."""
    if isinstance(element, (ir.IntegerType, ir.ComplexType)):
        return True
    return isinstance(element, ir.FloatType) and str(element) not in _NO_ZERO_FLOATS


_NO_ZERO_FLOATS = frozenset({"f8E8M0FNU"})


def _int_attr(attrs: ir.OpAttributeMap, name: str) -> int:
    return ir.IntegerAttr(attrs[name]).value if name in attrs else 1


_WINDOW_ATTRS = ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal")

_PARAM_ATTRS = (
    "dimension_numbers",
    "window_strides",
    "padding",
    "lhs_dilation",
    "rhs_dilation",
    "window_reversal",
    "feature_group_count",
    "batch_group_count",
)

ConvKey = tuple[ir.Type | ir.Attribute | str | None, ...]


def conv_key(
    op: ir.Operation | ir.OpView,
    types: tuple[ir.Type, ir.Type, ir.Type],
    unread_padding: str = "",
) -> ConvKey:
    """Everything `read_conv_params(op, unread_padding)` reads, as uniqued MLIR objects and
    strings (equal keys, equal params).

    `types` are the lhs, rhs and result types; attributes a conv lacks are None. A
    `dynamic_conv` whose padding operand is not read is keyed by why not (its skip reason), so
    it is told apart from a convolution without padding and from one whose padding is unread
    for another reason."""
    key = (*types, *map(op.attributes.get, _PARAM_ATTRS))
    return (*key, unread_padding) if unread_padding else key
