"""The migraphx ops, with rocMLIR's assembly syntax and result-shape verifiers.

Syntax (as rocMLIR's declarative formats print it):
    %r = migraphx.add %a, %b : <4x3xf32, 3x1>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>
    %c = migraphx.convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0],
           padding_mode = 0 : i64, stride = [1, 1]} : <...>, <...> -> <...>
    %t = migraphx.convert %a : <4xf16, 1> to <4xf32, 1>
    %l = migraphx.literal(dense<1.0> : tensor<1xf32>) : <1xf32, 0>
    %v = migraphx.mlir.as.logical.shape %arg : tensor<12xf32> to <4x3xf32, 1x4>
Each op's `infer()` computes its result lens and element type from shape_rules; the verifier
compares that with the declared result type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.shaped_type import (
    ShapedType,
    is_float_type,
    parse_shaped_or_type,
    print_stripped,
    stripped_text,
)

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


def _is_i64_array(attr: Attribute) -> bool:
    return isinstance(attr, ArrayAttr) and all(
        isinstance(a, IntegerAttr) and a.type == IntegerType(64) for a in attr.data
    )


def print_attr_dict(printer: Printer, attributes: dict[str, Attribute]) -> None:
    """MLIR's attr-dict: sorted by name, i64 elided inside arrays (`[1, 1]`, `group = 1 : i64`)."""
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
        else:
            printer.print_attribute(attr)
    printer.print_string("}")


# -- base op -------------------------------------------------------------------------------------


class MigraphxOp(IRDLOperation):
    """`%operands attr-dict : types -> type`, shaped types printed without their prefix."""

    TYPE_KEYWORD: ClassVar[str] = "->"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ()

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


def _same_element_type(types: Sequence[ShapedType]) -> Attribute:
    elements = {t.element_type for t in types}
    if len(elements) != 1:
        raise rules.ShapeError(f"operand element types differ: {[str(e) for e in elements]}")
    return types[0].element_type


# -- elementwise ---------------------------------------------------------------------------------


class ElementwiseBinaryOp(MigraphxOp):
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("inA", "inB")

    def infer(self) -> tuple[Lens, Attribute]:
        a, b = self.in_types()
        return rules.broadcast_lens(a.lens, b.lens), _same_element_type([a, b])


@irdl_op_definition
class AddOp(ElementwiseBinaryOp):
    name = "migraphx.add"


@irdl_op_definition
class SubOp(ElementwiseBinaryOp):
    name = "migraphx.sub"


@irdl_op_definition
class MulOp(ElementwiseBinaryOp):
    name = "migraphx.mul"


@irdl_op_definition
class DivOp(ElementwiseBinaryOp):
    name = "migraphx.div"


@irdl_op_definition
class MaxOp(ElementwiseBinaryOp):
    name = "migraphx.max"


@irdl_op_definition
class MinOp(ElementwiseBinaryOp):
    name = "migraphx.min"


@irdl_op_definition
class PowOp(ElementwiseBinaryOp):
    name = "migraphx.pow"


# -- comparisons ---------------------------------------------------------------------------------


class ComparisonOp(ElementwiseBinaryOp):
    """1 where the comparison holds, else 0, in the operands' element type (as rocMLIR types it;
    MIGraphX's emitter follows it with a `convert` to si8 when it wants a boolean)."""


@irdl_op_definition
class GreaterOp(ComparisonOp):
    name = "migraphx.greater"


@irdl_op_definition
class GreaterOrEqualOp(ComparisonOp):
    name = "migraphx.greater_or_equal"


@irdl_op_definition
class LessOp(ComparisonOp):
    name = "migraphx.less"


@irdl_op_definition
class LessOrEqualOp(ComparisonOp):
    name = "migraphx.less_or_equal"


@irdl_op_definition
class EqualOp(ComparisonOp):
    name = "migraphx.equal"


class ElementwiseUnaryOp(MigraphxOp):
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("inA",)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return a.lens, a.element_type


@irdl_op_definition
class ReluOp(ElementwiseUnaryOp):
    name = "migraphx.relu"


@irdl_op_definition
class ExpOp(ElementwiseUnaryOp):
    name = "migraphx.exp"


@irdl_op_definition
class LogOp(ElementwiseUnaryOp):
    name = "migraphx.log"


@irdl_op_definition
class TanhOp(ElementwiseUnaryOp):
    name = "migraphx.tanh"


@irdl_op_definition
class SigmoidOp(ElementwiseUnaryOp):
    name = "migraphx.sigmoid"


@irdl_op_definition
class NegOp(ElementwiseUnaryOp):
    name = "migraphx.neg"


@irdl_op_definition
class AbsOp(ElementwiseUnaryOp):
    name = "migraphx.abs"


@irdl_op_definition
class FloorOp(ElementwiseUnaryOp):
    name = "migraphx.floor"


@irdl_op_definition
class CeilOp(ElementwiseUnaryOp):
    name = "migraphx.ceil"


@irdl_op_definition
class SqrtOp(ElementwiseUnaryOp):
    name = "migraphx.sqrt"


@irdl_op_definition
class RsqrtOp(ElementwiseUnaryOp):
    name = "migraphx.rsqrt"


@irdl_op_definition
class RecipOp(ElementwiseUnaryOp):
    name = "migraphx.recip"


@irdl_op_definition
class ErfOp(ElementwiseUnaryOp):
    name = "migraphx.erf"


@irdl_op_definition
class ContiguousOp(ElementwiseUnaryOp):
    """Same value, standard layout (the layout change only matters in memory)."""

    name = "migraphx.contiguous"


@irdl_op_definition
class ConvertOp(MigraphxOp):
    name = "migraphx.convert"
    TYPE_KEYWORD: ClassVar[str] = "to"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("inA",)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        out = self.output.type
        return a.lens, out.element_type if isinstance(out, ShapedType) else a.element_type


@irdl_op_definition
class ClipOp(MigraphxOp):
    """min(max(x, minVals), maxVals); the bounds broadcast to x."""

    name = "migraphx.clip"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("x", "minVals", "maxVals")

    def infer(self) -> tuple[Lens, Attribute]:
        x, lo, hi = self.in_types()
        lens = rules.broadcast_lens(x.lens, lo.lens, hi.lens)
        return lens, _same_element_type([x, lo, hi])


@irdl_op_definition
class WhereOp(MigraphxOp):
    """cond ? inA : inB, cond an i8 or i1 (MIGraphX's bool) value."""

    name = "migraphx.where"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("cond", "inA", "inB")

    def infer(self) -> tuple[Lens, Attribute]:
        cond, a, b = self.in_types()
        if not isinstance(cond.element_type, IntegerType) or cond.element_type.width.data not in (
            1,
            8,
        ):
            raise rules.ShapeError(f"condition must be i8 or i1, got {cond.element_type}")
        return rules.broadcast_lens(cond.lens, a.lens, b.lens), _same_element_type([a, b])


# -- shape ops -----------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(MigraphxOp):
    name = "migraphx.transpose"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    permutation = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.transpose_lens(a.lens, int_list(self, "permutation")), a.element_type


@irdl_op_definition
class ReshapeOp(MigraphxOp):
    name = "migraphx.reshape"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    dims = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.reshape_lens(a.lens, int_list(self, "dims")), a.element_type


@irdl_op_definition
class BroadcastOp(MigraphxOp):
    name = "migraphx.broadcast"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axis = attr_def(IntegerAttr)
    out_lens = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        lens = rules.broadcast_axis_lens(
            a.lens, int_value(self, "axis"), int_list(self, "out_lens")
        )
        return lens, a.element_type


@irdl_op_definition
class MultiBroadcastOp(MigraphxOp):
    name = "migraphx.multibroadcast"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    out_lens = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        self.placement()
        return tuple(int_list(self, "out_lens")), a.element_type

    def placement(self) -> Lens:
        """The operand's lens at the result's rank (see rules.multibroadcast_placement): the
        operand reshaped to these broadcasts to the result."""
        (a,) = self.in_types()
        out = self.results[0].type
        strides = out.stride_values if isinstance(out, ShapedType) else None
        return rules.multibroadcast_placement(a.lens, int_list(self, "out_lens"), strides)


@irdl_op_definition
class SliceOp(MigraphxOp):
    name = "migraphx.slice"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axes = attr_def(ArrayAttr)
    starts = attr_def(ArrayAttr)
    ends = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        lens = rules.slice_lens(
            a.lens, int_list(self, "axes"), int_list(self, "starts"), int_list(self, "ends")
        )
        return lens, a.element_type


@irdl_op_definition
class SqueezeOp(MigraphxOp):
    """Drop size-1 dims: those in `axes`, or every one when `axes` is absent or empty."""

    name = "migraphx.squeeze"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axes = opt_attr_def(ArrayAttr)

    def squeezed_axes(self) -> list[int]:
        (a,) = self.in_types()
        axes = int_list(self, "axes") if "axes" in self.attributes else []
        return rules.squeeze_axes(a.lens, axes)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        dropped = set(self.squeezed_axes())
        return tuple(n for d, n in enumerate(a.lens) if d not in dropped), a.element_type


@irdl_op_definition
class UnsqueezeOp(MigraphxOp):
    """Insert size-1 dims at `axes` (positions in the result)."""

    name = "migraphx.unsqueeze"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axes = attr_def(ArrayAttr)

    def inserted_axes(self) -> list[int]:
        (a,) = self.in_types()
        return rules.unsqueeze_axes(a.rank, int_list(self, "axes"))

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.insert_unit_dims(a.lens, self.inserted_axes()), a.element_type


@irdl_op_definition
class FlattenOp(MigraphxOp):
    """[d0..dn] -> [d0*..*d(axis-1), d(axis)*..*dn]."""

    name = "migraphx.flatten"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axis = attr_def(IntegerAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.flatten_lens(a.lens, int_value(self, "axis")), a.element_type


@irdl_op_definition
class GatherOp(MigraphxOp):
    """out[i.., j.., k..] = data[i.., indices[j..], k..] along `axis`; negative indices count
    from the end; an index outside [-n, n) is undefined in MIGraphX."""

    name = "migraphx.gather"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("data", "indices")
    axis = attr_def(IntegerAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        data, indices = self.in_types()
        _check_index_type(indices)
        lens = rules.gather_lens(data.lens, indices.lens, int_value(self, "axis"))
        return lens, data.element_type


@irdl_op_definition
class ScatterNoneOp(MigraphxOp):
    """out = data, then out[p with p[axis] = indices[p]] = updates[p] for every p of indices
    (ONNX ScatterElements without reduction); duplicate targets are undefined in MIGraphX."""

    name = "migraphx.scatter_none"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("data", "indices", "updates")
    axis = attr_def(IntegerAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        data, indices, updates = self.in_types()
        _check_index_type(indices)
        rules.scatter_check(data.lens, indices.lens, updates.lens, int_value(self, "axis"))
        return data.lens, _same_element_type([data, updates])


def _check_index_type(indices: ShapedType) -> None:
    if not isinstance(indices.element_type, IntegerType) or indices.element_type.width.data < 8:
        raise rules.ShapeError(f"indices must be integers, got {indices.element_type}")


# -- reductions ----------------------------------------------------------------------------------


class ReduceOp(MigraphxOp):
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axes = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.reduce_lens(a.lens, int_list(self, "axes")), a.element_type


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "migraphx.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "migraphx.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "migraphx.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "migraphx.reduce_min"


@irdl_op_definition
class SoftmaxOp(MigraphxOp):
    name = "migraphx.softmax"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    axis = attr_def(IntegerAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        rules.normalize_axis(int_value(self, "axis"), a.rank)
        return a.lens, a.element_type


# -- contractions --------------------------------------------------------------------------------


@irdl_op_definition
class DotOp(MigraphxOp):
    name = "migraphx.dot"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("in_a", "in_b")

    def infer(self) -> tuple[Lens, Attribute]:
        a, b = self.in_types()
        return rules.dot_lens(a.lens, b.lens), _same_element_type([a, b])


@irdl_op_definition
class ConvolutionOp(MigraphxOp):
    """Forward convolution: input [N, C, *S], filter [O, C/group, *K]; 1-D to 3-D."""

    name = "migraphx.convolution"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input", "filter")
    padding = attr_def(ArrayAttr)
    stride = attr_def(ArrayAttr)
    dilation = attr_def(ArrayAttr)
    group = attr_def(IntegerAttr)
    padding_mode = opt_attr_def(IntegerAttr)
    perf_config = opt_attr_def(StringAttr)

    def conv_params(self) -> dict[str, list[int] | int]:
        return {
            "padding": int_list(self, "padding"),
            "stride": int_list(self, "stride"),
            "dilation": int_list(self, "dilation"),
            "group": int_value(self, "group"),
            "padding_mode": int_value(self, "padding_mode", 0),
        }

    def explicit_padding(self) -> tuple[Lens, Lens]:
        """(begins, ends) per spatial dim, whatever the padding_mode."""
        x, w = self.in_types()
        return conv_explicit_padding(self, x.lens, w.lens)

    def infer(self) -> tuple[Lens, Attribute]:
        x, w = self.in_types()
        element_type = _same_element_type([x, w])
        if not is_float_type(element_type):
            raise rules.ShapeError(f"convolution needs float operands, got {element_type}")
        lens = rules.conv_lens(
            x.lens,
            w.lens,
            padding=int_list(self, "padding"),
            stride=int_list(self, "stride"),
            dilation=int_list(self, "dilation"),
            group=int_value(self, "group"),
            padding_mode=int_value(self, "padding_mode", 0),
        )
        return lens, element_type


# -- literal and boundary views ------------------------------------------------------------------


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


@irdl_op_definition
class AsLogicalShapeOp(MigraphxOp):
    """View a flat `tensor<NxT>` function argument as the shaped value its strides describe."""

    name = "migraphx.mlir.as.logical.shape"
    TYPE_KEYWORD: ClassVar[str] = "to"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("in",)

    def verify_(self) -> None:
        (arg,) = self.args
        _check_flat(self.name, arg.type, self.output.type)

    def infer(self) -> tuple[Lens, Attribute]:
        out = self.output.type
        assert isinstance(out, ShapedType)
        return out.lens, out.element_type


@irdl_op_definition
class AsUnderlyingShapeOp(MigraphxOp):
    """Write a shaped value into the flat `tensor<NxT>` its strides describe."""

    name = "migraphx.mlir.as.underlying.shape"
    TYPE_KEYWORD: ClassVar[str] = "to"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("in",)

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


ELEMENTWISE_BINARY: tuple[type[MigraphxOp], ...] = (
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    MaxOp,
    MinOp,
    PowOp,
)
ELEMENTWISE_UNARY: tuple[type[MigraphxOp], ...] = (
    ReluOp,
    ExpOp,
    LogOp,
    TanhOp,
    SigmoidOp,
    NegOp,
    AbsOp,
    FloorOp,
    CeilOp,
    SqrtOp,
    RsqrtOp,
    RecipOp,
    ErfOp,
)
REDUCTIONS: tuple[type[MigraphxOp], ...] = (ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp)
COMPARISONS: tuple[type[MigraphxOp], ...] = (
    GreaterOp,
    GreaterOrEqualOp,
    LessOp,
    LessOrEqualOp,
    EqualOp,
)
ALL_OPS: tuple[type[IRDLOperation], ...] = (
    *ELEMENTWISE_BINARY,
    *ELEMENTWISE_UNARY,
    *REDUCTIONS,
    *COMPARISONS,
    ContiguousOp,
    ConvertOp,
    ClipOp,
    WhereOp,
    TransposeOp,
    ReshapeOp,
    BroadcastOp,
    MultiBroadcastOp,
    SliceOp,
    SqueezeOp,
    UnsqueezeOp,
    FlattenOp,
    GatherOp,
    ScatterNoneOp,
    SoftmaxOp,
    DotOp,
    ConvolutionOp,
    LiteralOp,
    AsLogicalShapeOp,
    AsUnderlyingShapeOp,
)
# Ops whose whole verifier is `MigraphxOp.verify_semantics` once their attributes have the
# types the program importer gives them (it then skips xDSL's generic attribute checks).
IMPORTER_TRUSTED: frozenset[type[IRDLOperation]] = frozenset(
    op for op in ALL_OPS[: ALL_OPS.index(LiteralOp)] if op.__module__ == __name__
)


def conv_explicit_padding(op: Operation, x_lens: Lens, w_lens: Lens) -> tuple[Lens, Lens]:
    """A conv-like op's (begins, ends) per spatial dim from its padding, stride, dilation and
    padding_mode attributes (shared by the float, quantized and backwards convolutions)."""
    return rules.conv_padding(
        x_lens[2:],
        w_lens[2:],
        int_list(op, "padding"),
        int_list(op, "stride"),
        int_list(op, "dilation"),
        int_value(op, "padding_mode", 0),
    )
