"""What every migraphx op shares: the `MigraphxOp` base (rocMLIR's assembly syntax, the result
check against `infer()`), its declaration of the op in MIGraphX's printed program, and the
attribute helpers.

An op is declared once, in its class: `name` (the MLIR op), `program_name()` and
`PROGRAM_FIELDS` (its instruction and the fields that become attributes in MIGraphX's printed
program, which the importer reads), and `infer()` (its shape rule, from `shape_rules`). Its
lowering and its reference kernel are registered against the class (`function_lowering.LOWERINGS`,
`migraphx_interp.op_table()`), and a test says every op has all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, TypedDict

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f32,
    f64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, attr_def, opt_attr_def, result_def, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.program_text import type_index_elements
from convcanon.migraphx.shaped_type import ShapedType, parse_shaped_or_type, stripped_text

Lens = tuple[int, ...]


# -- attribute helpers ---------------------------------------------------------------------------


def i64_array(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(v, 64) for v in values])


def i64(value: int) -> IntegerAttr:
    return IntegerAttr(value, 64)


def int_list(op: Operation, name: str) -> list[int]:
    """An integer-array attribute as Python ints; VerifyException when missing or ill-typed."""
    attr = op.attributes.get(name)
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, IntegerAttr) for a in attr.data):
        raise VerifyException(f"{op.name} needs an integer array attribute `{name}`")
    return [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]


def int_value(op: Operation, name: str, default: int | None = None) -> int:
    attr = op.attributes.get(name)
    if attr is None and default is not None:
        return default
    if not isinstance(attr, IntegerAttr):
        raise VerifyException(f"{op.name} needs an integer attribute `{name}`")
    return attr.value.data


def f32_value(op: Operation, name: str, default: float) -> float:
    """A float attribute as MIGraphX holds it, an f32 (`default` when missing). An f64 one, as
    `verify`'s f64 copy of a module writes it, is read as the f32 it was."""
    attr = op.attributes.get(name)
    if attr is None:
        return default
    if not isinstance(attr, FloatAttr) or attr.type not in (f32, f64):
        raise VerifyException(f"{op.name} needs an f32 attribute `{name}`, got {attr}")
    with np.errstate(over="ignore"):
        return float(np.float32(attr.value.data))


def _is_i64_array(attr: Attribute) -> bool:
    return isinstance(attr, ArrayAttr) and all(
        isinstance(a, IntegerAttr) and a.type == IntegerType(64) for a in attr.data
    )


def print_attr_dict(printer: Printer, attributes: dict[str, Attribute]) -> None:
    """MLIR's attr-dict: sorted by name, i64 elided inside arrays (`[1, 1]`, `group = 1 : i64`),
    an f32 printed to read back as itself."""
    if not attributes:
        return
    printer.print_string(" {")
    for k, (name, attr) in enumerate(sorted(attributes.items())):
        if k:
            printer.print_string(", ")
        printer.print_string(f"{name} = ")
        if _is_i64_array(attr):
            assert isinstance(attr, ArrayAttr)
            values = [str(a.value.data) for a in attr.data if isinstance(a, IntegerAttr)]
            printer.print_string("[" + ", ".join(values) + "]")
        elif isinstance(attr, FloatAttr) and attr.type == f32 and math.isfinite(attr.value.data):
            # nine significant digits read back as the same f32 (xDSL prints seven)
            printer.print_string(f"{attr.value.data:.8e} : f32")
        else:
            printer.print_attribute(attr)
    printer.print_string("}")


# -- base op -------------------------------------------------------------------------------------


class MigraphxOp(IRDLOperation):
    """`%operands attr-dict : types -> type`, shaped types printed without their prefix."""

    TYPE_KEYWORD: ClassVar[str] = "->"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ()
    # The fields of its instruction in MIGraphX's printed program that become attributes
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ()
    # Fields at MIGraphX's default, which the op means by leaving the attribute out (the
    # importer writes no attribute for them)
    PROGRAM_DEFAULTS: ClassVar[dict[str, list[int] | int]] = {}
    # A field whose attribute rocMLIR names otherwise (pooling's `lengths` is its `length`)
    PROGRAM_ATTRIBUTES: ClassVar[dict[str, str]] = {}
    # A field printed as a name (or, by older MIGraphX, its enum's number): a string attribute
    PROGRAM_ENUMS: ClassVar[dict[str, tuple[str, ...]]] = {}
    # A field printed as a float number (pad's `value`): an f32 attribute, as MIGraphX holds it
    PROGRAM_FLOATS: ClassVar[frozenset[str]] = frozenset()
    # An attribute that restates the result's element type as MIGraphX's type index
    # (convert's target_type): when present it must name the result's type.
    TYPE_FIELD: ClassVar[str | None] = None

    args = var_operand_def()
    output = result_def()

    def __init__(
        self,
        operands: Sequence[SSAValue | Operation],
        result_type: Attribute,
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[list(operands)], result_types=[result_type], attributes=attributes or {}
        )

    @classmethod
    def program_name(cls) -> str | None:
        """Its instruction's name in MIGraphX's printed program (`program::print`); None for an
        op that is no instruction there."""
        return cls.name.removeprefix("migraphx.")

    # shapes
    def in_types(self) -> list[ShapedType]:
        types: list[ShapedType] = []
        for k, operand in enumerate(self.operands):  # = self.args, without the descriptor
            if not isinstance(operand.type, ShapedType):
                raise VerifyException(f"{self.name} operand #{k} must be !migraphx.shaped")
            types.append(operand.type)
        return types

    def infer(self) -> tuple[Lens, Attribute]:
        """The result's lens and element type implied by the operands and attributes."""
        raise NotImplementedError

    def verify_(self) -> None:
        self.verify_semantics()

    def verify_semantics(self) -> None:
        """Operand count, and the declared result against the computed one (the importer calls
        this alone for the ops in IMPORTER_TRUSTED: it builds their attributes itself)."""
        if self.OPERAND_NAMES and len(self.operands) != len(self.OPERAND_NAMES):
            raise VerifyException(
                f"{self.name} takes {len(self.OPERAND_NAMES)} operands "
                f"({', '.join(self.OPERAND_NAMES)}), got {len(self.operands)}"
            )
        out = self.results[0].type  # = self.output; the descriptors cost a third of an import
        if not isinstance(out, ShapedType):
            raise VerifyException(f"{self.name} result must be !migraphx.shaped, got {out}")
        try:
            lens, element_type = self.infer()
        except rules.ShapeError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        if out.lens != lens:
            raise VerifyException(
                f"{self.name}: declared result lens {list(out.lens)} disagree with the computed "
                f"lens {list(lens)}"
            )
        if out.element_type != element_type:
            raise VerifyException(
                f"{self.name}: declared result element type {out.element_type} disagrees with "
                f"the computed {element_type}"
            )
        if self.TYPE_FIELD is not None and self.TYPE_FIELD in self.attributes:
            self.verify_type_field(self.TYPE_FIELD, out.element_type)

    def verify_type_field(self, field: str, element_type: Attribute) -> None:
        """A type index that contradicts the result type is an error: MIGraphX computed the
        type the index names, and a lowering by the result type would silently differ."""
        attr = self.attributes[field]
        assert isinstance(attr, IntegerAttr)  # the op declares it an integer
        try:
            name, elements = type_index_elements(attr.value.data)
        except ValueError as err:
            raise VerifyException(f"{self.name}: `{field}`: {err}") from None
        if element_type not in elements:
            raise VerifyException(
                f"{self.name}: {field} {attr.value.data} ({name}) disagrees with the result "
                f"element type {element_type}"
            )

    # syntax
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        print_attr_dict(printer, self.attributes)
        types = ", ".join(stripped_text(a.type) for a in self.operands)
        out = stripped_text(self.results[0].type)
        printer.print_string(f" : {types} {self.TYPE_KEYWORD} {out}")

    @classmethod
    def parse(cls, parser: Parser) -> MigraphxOp:
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            operands.append(parser.parse_unresolved_operand())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        types = [parse_shaped_or_type(parser)]
        while parser.parse_optional_punctuation(",") is not None:
            types.append(parse_shaped_or_type(parser))
        if len(types) != len(operands):
            parser.raise_error(f"expected {len(operands)} operand types, got {len(types)}", pos)
        if cls.TYPE_KEYWORD == "->":
            parser.parse_punctuation("->")
        else:
            parser.parse_keyword(cls.TYPE_KEYWORD)
        result_type = parse_shaped_or_type(parser)
        values = parser.resolve_operands(operands, types, pos)
        return cls(values, result_type, attributes)


def operand_element(op: Operation, index: int) -> Attribute:
    """The migraphx (sign-explicit) element type of operand `index`."""
    ty = op.operands[index].type
    return ty.element_type if isinstance(ty, ShapedType) else ty


def same_element_type(types: Sequence[ShapedType]) -> Attribute:
    elements = {t.element_type for t in types}
    if len(elements) != 1:
        raise rules.ShapeError(f"operand element types differ: {[str(e) for e in elements]}")
    return types[0].element_type


class ConvWindow(TypedDict):
    """A conv-like op's window attributes, as the shape rules take them."""

    padding: list[int]
    stride: list[int]
    dilation: list[int]
    group: int


class ConvLikeOp(MigraphxOp):
    """rocMLIR's convolution attributes (its ConvOpBase), shared by the float, quantized and
    backwards convolutions; an IRDL op cannot subclass another, so this base is not one."""

    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input", "filter")
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = (
        "padding",
        "stride",
        "dilation",
        "group",
        "padding_mode",
    )
    padding = attr_def(ArrayAttr)
    stride = attr_def(ArrayAttr)
    dilation = attr_def(ArrayAttr)
    group = attr_def(IntegerAttr)
    padding_mode = opt_attr_def(IntegerAttr)
    perf_config = opt_attr_def(StringAttr)

    def explicit_padding(self) -> tuple[Lens, Lens]:
        """(begins, ends) per spatial dim, whatever the padding_mode."""
        x, w = self.in_types()
        return rules.conv_padding(
            x.lens[2:],
            w.lens[2:],
            int_list(self, "padding"),
            int_list(self, "stride"),
            int_list(self, "dilation"),
            int_value(self, "padding_mode", 0),
        )

    def window(self) -> ConvWindow:
        return ConvWindow(
            padding=int_list(self, "padding"),
            stride=int_list(self, "stride"),
            dilation=int_list(self, "dilation"),
            group=int_value(self, "group"),
        )

    def output_lens(self) -> Lens:
        """The forward convolution's result lens (`shape_rules.conv_lens`)."""
        x, w = self.in_types()
        window = self.window()
        padding_mode = int_value(self, "padding_mode", 0)
        return rules.conv_lens(x.lens, w.lens, **window, padding_mode=padding_mode)
