"""The migraphx values that are no computation: a literal, and the views of a function's flat
`tensor<NxT>` arguments and results as shaped values.

    %l = migraphx.literal(dense<1.0> : tensor<1xf32>) : <1xf32, 0>
    %v = migraphx.mlir.as.logical.shape %arg : tensor<12xf32> to <4x3xf32, 1x4>
    %f = migraphx.mlir.as.underlying.shape %v : <4x3xf32, 1x4> to tensor<12xf32>

MIGraphX's printed program writes a literal as `@literal{...}` and has no boundary views: none
of these is an instruction the importer looks up by name.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation, attr_def, irdl_op_definition, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx.op_base import Lens, MigraphxOp, print_attr_dict
from convcanon.migraphx.shaped_type import ShapedType, parse_shaped_or_type, print_stripped


@irdl_op_definition
class LiteralOp(IRDLOperation):
    """`migraphx.literal(dense<...> : tensor<...>) : <LENSxT, STRIDES>`.

    The value has the result's lens (in standard order) or a single element / a splat that fills
    them.
    """

    name = "migraphx.literal"
    value = attr_def(DenseIntOrFPElementsAttr)
    output = result_def(ShapedType)

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: ShapedType):
        super().__init__(result_types=[result_type], attributes={"value": value})

    def verify_(self) -> None:
        out = self.output.type
        assert isinstance(out, ShapedType)
        value_type = self.value.type
        if value_type.get_element_type() != out.element_type:
            raise VerifyException(
                f"migraphx.literal: value element type {value_type.get_element_type()} differs "
                f"from the result's {out.element_type}"
            )
        shape = tuple(value_type.get_shape())
        if shape != out.lens and len(self.value) == 0:  # is_splat() would index element 0
            raise VerifyException(
                f"migraphx.literal: value shape {list(shape)} has no elements, the result lens "
                f"{list(out.lens)} need some"
            )
        if shape != out.lens and len(self.value) != 1 and not self.value.is_splat():
            raise VerifyException(
                f"migraphx.literal: value shape {list(shape)} differs from the result lens "
                f"{list(out.lens)} and is not a splat"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_attribute(self.value)
        printer.print_string(")")
        print_attr_dict(printer, {k: v for k, v in self.attributes.items() if k != "value"})
        printer.print_string(" : ")
        print_stripped(printer, self.output.type)

    @classmethod
    def parse(cls, parser: Parser) -> LiteralOp:
        parser.parse_punctuation("(")
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos)
        parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        result_type = parse_shaped_or_type(parser)
        if not isinstance(result_type, ShapedType):
            parser.raise_error("expected a shaped type", pos)
        op = cls(value, result_type)
        op.attributes.update(attributes)
        return op


class BoundaryViewOp(MigraphxOp):
    """`%v : A to B` between a flat buffer and a shaped value; no instruction of a program."""

    TYPE_KEYWORD: ClassVar[str] = "to"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("in",)

    @classmethod
    def program_name(cls) -> str | None:
        return None


@irdl_op_definition
class AsLogicalShapeOp(BoundaryViewOp):
    """View a flat `tensor<NxT>` function argument as the shaped value its strides describe."""

    name = "migraphx.mlir.as.logical.shape"

    def verify_(self) -> None:
        (arg,) = self.args
        _check_flat(self.name, arg.type, self.output.type)

    def infer(self) -> tuple[Lens, Attribute]:
        out = self.output.type
        assert isinstance(out, ShapedType)
        return out.lens, out.element_type


@irdl_op_definition
class AsUnderlyingShapeOp(BoundaryViewOp):
    """Write a shaped value into the flat `tensor<NxT>` its strides describe."""

    name = "migraphx.mlir.as.underlying.shape"

    def verify_(self) -> None:
        (arg,) = self.args
        _check_flat(self.name, self.output.type, arg.type)

    def infer(self) -> tuple[Lens, Attribute]:
        raise NotImplementedError  # verify_ is overridden: the result is a tensor


def _check_flat(name: str, flat: Attribute, shaped: Attribute) -> None:
    if not isinstance(shaped, ShapedType):
        raise VerifyException(f"{name}: expected a !migraphx.shaped type, got {shaped}")
    if not isinstance(flat, TensorType):
        raise VerifyException(f"{name}: expected a flat tensor type, got {flat}")
    expected = shaped.flat_tensor_type()
    if flat != expected:
        raise VerifyException(
            f"{name}: the memory of {shaped} is {expected}, not {flat} "
            f"({shaped.flat_size()} elements of {shaped.element_type})"
        )


BOUNDARY_OPS: tuple[type[IRDLOperation], ...] = (LiteralOp, AsLogicalShapeOp, AsUnderlyingShapeOp)
