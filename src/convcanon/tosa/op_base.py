"""What every TOSA op we emit shares: the op base class, `!tosa.shape`, the checks upstream's
verifiers make on operand types, and the builders of the properties several ops take.

The op families (`compute_ops`, `movement_ops`, `quant_ops`) build on this module only; none
imports another family or `ops`, which joins them into the dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx.shape_rules import ShapeError
from convcanon.tosa import shape_rules as rules


@irdl_attr_definition
class ShapeType(ParametrizedAttribute, TypeAttribute):
    """`!tosa.shape<N>`: a compile-time shape of rank N (operand of reshape, slice, tile, pad)."""

    name = "tosa.shape"

    rank: IntAttr

    def __init__(self, rank: int):
        super().__init__(IntAttr(rank))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.rank.data}>")


@irdl_attr_definition
class NanModeAttr(ParametrizedAttribute):
    """`#tosa.nan_mode<IGNORE>` (or PROPAGATE, the default when absent): whether a max or min
    skips a NaN operand or returns it."""

    name = "tosa.nan_mode"
    mode: StringAttr

    def __init__(self, mode: str):
        super().__init__(StringAttr(mode))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            mode = parser.parse_identifier()
            if mode not in ("PROPAGATE", "IGNORE"):
                parser.raise_error(f"expected PROPAGATE or IGNORE, got {mode}", pos)
            return (StringAttr(mode),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.mode.data}>")


def ignores_nan(op: Operation) -> bool:
    """The op's nan_mode is IGNORE."""
    attr = op.properties.get("nan_mode")
    return isinstance(attr, NanModeAttr) and attr.mode.data == "IGNORE"


class TosaOp(IRDLOperation):
    """Operands in TOSA 1.0 order, one result; `ARITY` operands (None: any number)."""

    ARITY: ClassVar[int | None] = 1

    args = var_operand_def()
    output = result_def()

    def __init__(
        self,
        args: Sequence[SSAValue],
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
    ):
        super().__init__(operands=[args], result_types=[result_type], properties=properties or {})

    def verify_(self) -> None:
        if self.ARITY is not None and len(self.args) != self.ARITY:
            raise VerifyException(
                f"'{self.name}' takes {self.ARITY} operands, got {len(self.args)}"
            )
        try:
            self.verify_shapes()
        except ShapeError as err:
            raise VerifyException(str(err)) from None

    def verify_shapes(self) -> None:
        """Operand and result types/shapes as upstream's verifier checks them (ShapeError or
        VerifyException); the default: elementwise, result shape = broadcast operand shapes."""
        shapes = [shape_of(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), shape_of(self.output, "result"))
        check_same_elements([*self.args, self.output])


class BinaryOp(TosaOp):
    """An elementwise op of two operands (the compute and the quantized families have them)."""

    ARITY: ClassVar[int | None] = 2


class AxisOp(TosaOp):
    """An op along one dim: its `axis` property (an i32)."""

    axis = prop_def(IntegerAttr)


def axis_attr(axis: int) -> dict[str, Attribute]:
    return {"axis": IntegerAttr(axis, i32)}


# -- the operand checks upstream's verifiers make --------------------------------------------------


def tensor_type(value: SSAValue, what: str) -> TensorType[Attribute]:
    ty = value.type
    if not isinstance(ty, TensorType):
        raise VerifyException(f"expects a ranked tensor for {what}, got {ty}")
    if any(d < 0 for d in ty.get_shape()):
        raise VerifyException(
            f"{what} {ty} has a dynamic dimension; convcanon's TOSA shapes are static"
        )
    return ty


def shape_of(value: SSAValue, what: str) -> rules.Shape:
    return tuple(tensor_type(value, what).get_shape())


def element_of(value: SSAValue) -> Attribute:
    return tensor_type(value, "operand").element_type


def check_same_elements(values: Sequence[SSAValue]) -> None:
    """Upstream's SameOperandsAndResultElementType (zero points and shifts excluded)."""
    types = [element_of(v) for v in values]
    if any(t != types[0] for t in types):
        raise VerifyException(
            f"expects one element type for operands and result, got {', '.join(map(str, types))}"
        )


def is_int(ty: Attribute) -> bool:
    return isinstance(ty, IntegerType)


def check_zero_point(value: SSAValue, of: SSAValue, what: str) -> None:
    if element_of(value) != element_of(of):
        raise VerifyException(
            f"{what} zero point element type {element_of(value)} differs from the {what}'s "
            f"{element_of(of)}"
        )


# -- property values -------------------------------------------------------------------------------


def dense(
    element_type: Attribute, shape: Sequence[int], values: Sequence[float | int]
) -> DenseIntOrFPElementsAttr:
    """`dense<values> : tensor<shape x element_type>` (xDSL's from_list, typed loosely)."""
    from_list: Any = DenseIntOrFPElementsAttr.from_list
    return from_list(TensorType(element_type, list(shape)), list(values))


def dense_values(attr: DenseIntOrFPElementsAttr) -> list[int | float]:
    values: Any = attr.get_values()
    return list(values)


def int_values(attr: Attribute) -> list[int]:
    """The integers of an `array<i32/i64: ...>` property."""
    assert isinstance(attr, DenseArrayBase)
    values: Any = attr.get_values()
    return [int(v) for v in values]
