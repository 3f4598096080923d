"""The TOSA 1.0 ops `migraphx-to-tosa` emits, defined in xDSL and printed in MLIR's generic form.

xDSL 0.75 ships a partial `tosa` dialect that predates TOSA 1.0 (no `!tosa.shape`, matmul limited to
batch 1), so we define our own. We print the generic form because upstream's custom syntax keeps
changing (LLVM 24's `tosa.conv2d` prints `pad([..]) stride([..])`); the generic form is stable.
Checked with `iree-opt` from iree-base-compiler 3.13 (LLVM 24.0.0git); every line below parses and
verifies there:

    %s  = "tosa.const_shape"() <{values = dense<[1, 8]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %c  = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %r  = "tosa.reshape"(%x, %s) : (tensor<1x2x2x2xf32>, !tosa.shape<2>) -> tensor<1x8xf32>
    %t  = "tosa.transpose"(%x) <{perms = array<i32: 0, 3, 1, 2>}> : (...) -> ...
    %v  = "tosa.conv2d"(%x, %w, %bias, %xzp, %wzp) <{acc_type = f32, dilation = array<i64: 1, 1>,
            pad = array<i64: top, bottom, left, right>, stride = array<i64: 1, 1>}>
            : (tensor<NxHxWxCxf32>, tensor<OxKHxKWxCxf32>, tensor<Oxf32>, tensor<1xf32>,
               tensor<1xf32>) -> tensor<NxOHxOWxOxf32>
    "tosa.depthwise_conv2d": same operands, weights tensor<KHxKWxCxMxf32>, result channels C*M
    "tosa.conv3d": NDHWC x ODHWI, pad = array<i64: front, back, top, bottom, left, right>
    %m  = "tosa.matmul"(%a, %b, %azp, %bzp) : (tensor<BxMxKxf32>, tensor<BxKxNxf32>, tensor<1xf32>,
            tensor<1xf32>) -> tensor<BxMxNxf32>
    "tosa.slice"(%x, %start, %size), "tosa.tile"(%x, %multiples), "tosa.pad"(%x, %padding, %padval)
            (shapes are `!tosa.shape<N>` operands; padding is [lo0, hi0, lo1, hi1, ...] and the pad
            value a tensor<1xT>)
    "tosa.concat"(%a, %b) <{axis = 0 : i32}>, "tosa.reduce_sum|max|min"(%x) <{axis = 1 : i32}>
            (reductions keep the reduced dim as 1)
    "tosa.add|sub|maximum|minimum|pow|intdiv"(%a, %b): operands of equal rank; size-1 dims broadcast
    "tosa.mul"(%a, %b, %shift) with %shift : tensor<1xi8> (0 for floats)
    "tosa.exp|log|tanh|sigmoid|abs|floor|ceil|rsqrt|reciprocal|erf|cast"(%x)
    "tosa.negate"(%x, %xzp, %outzp) with zero points tensor<1xT>
    "tosa.clamp"(%x) <{max_val = 6.0 : f32, min_val = 0.0 : f32}> (attributes of the element type)
    "tosa.select"(%cond_i1, %a, %b)

Rejected upstream (so never emitted): operands of different rank in elementwise ops, the pre-1.0
attribute forms (`new_shape`, `start`/`size` attributes, `quantization_info`), and the custom syntax
`tosa.conv2d %x, ... {pad = ...}`; `nan_mode` is left to its default (PROPAGATE).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx.shape_rules import ShapeError, transpose_lens
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
        shapes = [_shape(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), _shape(self.output, "result"))
        _same_elements(self, [*self.args, self.output])


# -- shared checks ---------------------------------------------------------------------------------


def _tensor(value: SSAValue, what: str) -> TensorType[Attribute]:
    ty = value.type
    if not isinstance(ty, TensorType):
        raise VerifyException(f"expects a ranked tensor for {what}, got {ty}")
    if any(d < 0 for d in ty.get_shape()):
        raise VerifyException(
            f"{what} {ty} has a dynamic dimension; convcanon's TOSA shapes are static"
        )
    return ty


def _shape(value: SSAValue, what: str) -> rules.Shape:
    return tuple(_tensor(value, what).get_shape())


def _element(value: SSAValue) -> Attribute:
    return _tensor(value, "operand").element_type


def _same_elements(op: TosaOp, values: Sequence[SSAValue]) -> None:
    """Upstream's SameOperandsAndResultElementType (zero points and shifts excluded)."""
    types = [_element(v) for v in values]
    if any(t != types[0] for t in types):
        raise VerifyException(
            f"expects one element type for operands and result, got {', '.join(map(str, types))}"
        )


def _is_int(ty: Attribute) -> bool:
    return isinstance(ty, IntegerType)


def _check_zero_point(value: SSAValue, of: SSAValue, what: str) -> None:
    if _element(value) != _element(of):
        raise VerifyException(
            f"{what} zero point element type {_element(value)} differs from the {what}'s "
            f"{_element(of)}"
        )


def shape_values(value: SSAValue, what: str) -> list[int]:
    """The integers of a `!tosa.shape` operand (it must come from `tosa.const_shape`)."""
    ty = value.type
    if not isinstance(ty, ShapeType):
        raise VerifyException(f"expects !tosa.shape for {what}, got {ty}")
    owner = value.owner
    if not isinstance(owner, ConstShapeOp):
        raise VerifyException(f"{what} must be a tosa.const_shape value")
    values = [int(v) for v in _dense_values(owner.values)]
    return values * ty.rank.data if len(values) == 1 else values


def _dense_values(attr: DenseIntOrFPElementsAttr) -> list[int | float]:
    values: Any = attr.get_values()
    return list(values)


# -- constants -------------------------------------------------------------------------------------


@irdl_op_definition
class ConstOp(TosaOp):
    name = "tosa.const"
    ARITY: ClassVar[int | None] = 0
    values = prop_def(DenseIntOrFPElementsAttr)

    def verify_shapes(self) -> None:
        out = _tensor(self.output, "result")
        value_type = self.values.get_type()
        if value_type != out:
            raise VerifyException(f"value type {value_type} differs from the result type {out}")


@irdl_op_definition
class ConstShapeOp(TosaOp):
    name = "tosa.const_shape"
    ARITY: ClassVar[int | None] = 0
    values = prop_def(DenseIntOrFPElementsAttr)

    def verify_shapes(self) -> None:
        out = self.output.type
        if not isinstance(out, ShapeType):
            raise VerifyException(f"expects a !tosa.shape result, got {out}")
        value_type = self.values.get_type()
        fits = (
            isinstance(value_type, TensorType)
            and math.prod(value_type.get_shape()) == out.rank.data
            and isinstance(value_type.element_type, IndexType)
        )
        if not fits:
            raise VerifyException(
                f"value of type {value_type} does not hold the {out.rank.data} index values of "
                f"{out}"
            )


def dense(
    element_type: Attribute, shape: Sequence[int], values: Sequence[float | int]
) -> DenseIntOrFPElementsAttr:
    """`dense<values> : tensor<shape x element_type>` (xDSL's from_list, typed loosely)."""
    from_list: Any = DenseIntOrFPElementsAttr.from_list
    return from_list(TensorType(element_type, list(shape)), list(values))


def const_shape_attr(values: Sequence[int]) -> DenseIntOrFPElementsAttr:
    return dense(IndexType(), [len(values)], values)


def int_values(attr: Attribute) -> list[int]:
    """The integers of an `array<i32/i64: ...>` property."""
    assert isinstance(attr, DenseArrayBase)
    values: Any = attr.get_values()
    return [int(v) for v in values]


# -- convolution and matmul ------------------------------------------------------------------------


class ConvOp(TosaOp):
    """input, weight, bias, input zero point, weight zero point."""

    ARITY: ClassVar[int | None] = 5
    DEPTHWISE: ClassVar[bool] = False
    pad = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    acc_type = prop_def(Attribute)

    def verify_shapes(self) -> None:
        x, w, bias, x_zp, w_zp = self.args
        expected = rules.conv_output(
            _shape(x, "input"),
            _shape(w, "weight"),
            int_values(self.pad),
            int_values(self.stride),
            int_values(self.dilation),
            self.DEPTHWISE,
        )
        rules.check_bias(_shape(bias, "bias"), expected[-1])
        rules.check_result(expected, _shape(self.output, "result"))
        if _is_int(_element(x)) != _is_int(_element(w)):
            raise VerifyException(
                f"expects input and weight both float or both integer, got {_element(x)} and "
                f"{_element(w)}"
            )
        _check_zero_point(x_zp, x, "input")
        _check_zero_point(w_zp, w, "weight")
        result, bias_type = _element(self.output), _element(bias)
        if not _is_int(result) and not _is_int(bias_type) and result != bias_type:
            raise VerifyException(f"bias element type {bias_type} differs from result {result}")


@irdl_op_definition
class Conv2DOp(ConvOp):
    name = "tosa.conv2d"


@irdl_op_definition
class DepthwiseConv2DOp(ConvOp):
    name = "tosa.depthwise_conv2d"
    DEPTHWISE: ClassVar[bool] = True


@irdl_op_definition
class Conv3DOp(ConvOp):
    name = "tosa.conv3d"


def conv_properties(
    pad: Sequence[int], stride: Sequence[int], dilation: Sequence[int], acc_type: Attribute
) -> dict[str, Attribute]:
    return {
        "pad": DenseArrayBase.from_list(i64, list(pad)),
        "stride": DenseArrayBase.from_list(i64, list(stride)),
        "dilation": DenseArrayBase.from_list(i64, list(dilation)),
        "acc_type": acc_type,
    }


@irdl_op_definition
class MatMulOp(TosaOp):
    name = "tosa.matmul"
    ARITY: ClassVar[int | None] = 4

    def verify_shapes(self) -> None:
        a, b, a_zp, b_zp = self.args
        expected = rules.matmul_output(_shape(a, "input a"), _shape(b, "input b"))
        rules.check_result(expected, _shape(self.output, "result"))
        if _element(a) != _element(b):
            raise VerifyException(
                f"expects one element type for a and b, got {_element(a)} and {_element(b)}"
            )
        _check_zero_point(a_zp, a, "a")
        _check_zero_point(b_zp, b, "b")


# -- data movement ---------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(TosaOp):
    name = "tosa.transpose"
    perms = prop_def(DenseArrayBase)

    def verify_shapes(self) -> None:
        expected = transpose_lens(_shape(self.args[0], "input"), int_values(self.perms))
        rules.check_result(expected, _shape(self.output, "result"))
        _same_elements(self, [self.args[0], self.output])


def perms_attr(perms: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, list(perms))


@irdl_op_definition
class ReshapeOp(TosaOp):
    name = "tosa.reshape"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        x, new_shape = self.args
        out = _shape(self.output, "result")
        values = shape_values(new_shape, "shape")
        if len(values) != len(out):
            raise VerifyException(f"new shape {values} does not have the result's rank {len(out)}")
        rules.check_result(rules.reshape_output(_shape(x, "input"), values), out)
        _same_elements(self, [x, self.output])


@irdl_op_definition
class SliceOp(TosaOp):
    name = "tosa.slice"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, start, size = self.args
        expected = rules.slice_output(
            _shape(x, "input"), shape_values(start, "start"), shape_values(size, "size")
        )
        rules.check_result(expected, _shape(self.output, "result"))
        _same_elements(self, [x, self.output])


@irdl_op_definition
class TileOp(TosaOp):
    name = "tosa.tile"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        x, multiples = self.args
        expected = rules.tile_output(_shape(x, "input"), shape_values(multiples, "multiples"))
        rules.check_result(expected, _shape(self.output, "result"))
        _same_elements(self, [x, self.output])


@irdl_op_definition
class PadOp(TosaOp):
    name = "tosa.pad"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, padding, value = self.args
        expected = rules.pad_output(_shape(x, "input"), shape_values(padding, "padding"))
        rules.check_result(expected, _shape(self.output, "result"))
        if math.prod(_shape(value, "pad value")) != 1:
            raise VerifyException(f"expects a one-element pad value, got {value.type}")
        _same_elements(self, [x, value, self.output])


class AxisOp(TosaOp):
    axis = prop_def(IntegerAttr)

    def verify_shapes(self) -> None:
        """Reductions (concat overrides): the reduced dim is kept, as size 1."""
        x = self.args[0]
        expected = rules.reduce_output(_shape(x, "input"), self.axis.value.data)
        rules.check_result(expected, _shape(self.output, "result"))
        _same_elements(self, [x, self.output])


def axis_attr(axis: int) -> dict[str, Attribute]:
    return {"axis": IntegerAttr(axis, i32)}


@irdl_op_definition
class ConcatOp(AxisOp):
    name = "tosa.concat"
    ARITY: ClassVar[int | None] = None

    def verify_shapes(self) -> None:
        shapes = [_shape(v, f"operand {i}") for i, v in enumerate(self.args)]
        expected = rules.concat_output(shapes, self.axis.value.data)
        rules.check_result(expected, _shape(self.output, "result"))
        _same_elements(self, [*self.args, self.output])


@irdl_op_definition
class ReduceSumOp(AxisOp):
    name = "tosa.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(AxisOp):
    name = "tosa.reduce_max"


@irdl_op_definition
class ReduceMinOp(AxisOp):
    name = "tosa.reduce_min"


# -- elementwise -----------------------------------------------------------------------------------


class BinaryOp(TosaOp):
    ARITY: ClassVar[int | None] = 2


@irdl_op_definition
class AddOp(BinaryOp):
    name = "tosa.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "tosa.sub"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "tosa.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "tosa.minimum"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "tosa.pow"


@irdl_op_definition
class IntDivOp(BinaryOp):
    name = "tosa.intdiv"


@irdl_op_definition
class MulOp(TosaOp):
    """a, b, shift (tensor<1xi8>, 0 for floats)."""

    name = "tosa.mul"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        a, b, shift = self.args
        expected = rules.elementwise_output([_shape(a, "input a"), _shape(b, "input b")])
        rules.check_result(expected, _shape(self.output, "result"))
        if _shape(shift, "shift") != (1,) or _element(shift) != IntegerType(8):
            raise VerifyException(f"expects shift of type tensor<1xi8>, got {shift.type}")
        if _element(a) != _element(b):
            raise VerifyException(
                f"expects one element type for a and b, got {_element(a)} and {_element(b)}"
            )
        result = _element(self.output)
        if not (_is_int(result) and _is_int(_element(a))) and result != _element(a):
            raise VerifyException(f"result element type {result} differs from {_element(a)}")


@irdl_op_definition
class ExpOp(TosaOp):
    name = "tosa.exp"


@irdl_op_definition
class LogOp(TosaOp):
    name = "tosa.log"


@irdl_op_definition
class TanhOp(TosaOp):
    name = "tosa.tanh"


@irdl_op_definition
class SigmoidOp(TosaOp):
    name = "tosa.sigmoid"


@irdl_op_definition
class AbsOp(TosaOp):
    name = "tosa.abs"


@irdl_op_definition
class FloorOp(TosaOp):
    name = "tosa.floor"


@irdl_op_definition
class CeilOp(TosaOp):
    name = "tosa.ceil"


@irdl_op_definition
class RsqrtOp(TosaOp):
    name = "tosa.rsqrt"


@irdl_op_definition
class ReciprocalOp(TosaOp):
    name = "tosa.reciprocal"


@irdl_op_definition
class ErfOp(TosaOp):
    name = "tosa.erf"


@irdl_op_definition
class CastOp(TosaOp):
    name = "tosa.cast"

    def verify_shapes(self) -> None:
        rules.check_result(_shape(self.args[0], "input"), _shape(self.output, "result"))


@irdl_op_definition
class NegateOp(TosaOp):
    """x, input zero point, output zero point."""

    name = "tosa.negate"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, x_zp, out_zp = self.args
        rules.check_result(_shape(x, "input"), _shape(self.output, "result"))
        _same_elements(self, [x, self.output])
        _check_zero_point(x_zp, x, "input")
        _check_zero_point(out_zp, self.output, "output")


@irdl_op_definition
class ClampOp(TosaOp):
    name = "tosa.clamp"
    min_val = prop_def(Attribute)
    max_val = prop_def(Attribute)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        element = _element(self.output)
        bounds: list[float] = []
        for bound in (self.min_val, self.max_val):
            if not isinstance(bound, IntegerAttr | FloatAttr) or bound.type != element:
                raise VerifyException(f"clamp bound {bound} is not of the element type {element}")
            bounds.append(float(bound.value.data))
        if any(math.isnan(b) for b in bounds) or bounds[0] > bounds[1]:
            raise VerifyException(f"expects min_val <= max_val (not NaN), got {bounds}")


@irdl_op_definition
class SelectOp(TosaOp):
    name = "tosa.select"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        condition, a, b = self.args
        shapes = [_shape(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), _shape(self.output, "result"))
        if _element(condition) != IntegerType(1):
            raise VerifyException(f"expects an i1 condition, got {condition.type}")
        _same_elements(self, [a, b, self.output])


class CompareOp(BinaryOp):
    """Elementwise comparison: operands of one element type, an i1 result."""

    def verify_shapes(self) -> None:
        shapes = [_shape(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), _shape(self.output, "result"))
        _same_elements(self, self.args)
        if _element(self.output) != IntegerType(1):
            raise VerifyException(f"expects an i1 result, got {self.output.type}")


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "tosa.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    name = "tosa.greater_equal"


@irdl_op_definition
class EqualOp(CompareOp):
    name = "tosa.equal"


class BitwiseOp(BinaryOp):
    def verify_shapes(self) -> None:
        super().verify_shapes()
        if not _is_int(_element(self.output)):
            raise VerifyException(f"expects integer operands, got {self.output.type}")


@irdl_op_definition
class BitwiseAndOp(BitwiseOp):
    name = "tosa.bitwise_and"


@irdl_op_definition
class BitwiseXorOp(BitwiseOp):
    name = "tosa.bitwise_xor"


@irdl_op_definition
class GatherOp(TosaOp):
    """values [N, K, C], indices [N, W] (i32) -> [N, W, C]."""

    name = "tosa.gather"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        values, indices = self.args
        v, i = _shape(values, "values"), _shape(indices, "indices")
        rules.check_rank("values", v, 3)
        rules.check_rank("indices", i, 2)
        if v[0] != i[0]:
            raise ShapeError(f"values batch {v[0]} differs from the indices batch {i[0]}")
        rules.check_result((v[0], i[1], v[2]), _shape(self.output, "result"))
        _same_elements(self, [values, self.output])
        if _element(indices) != i32:
            raise VerifyException(f"expects i32 indices, got {indices.type}")


@irdl_op_definition
class ScatterOp(TosaOp):
    """values_in [N, K, C], indices [N, W] (i32), input [N, W, C] -> [N, K, C]."""

    name = "tosa.scatter"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        values, indices, updates = self.args
        v, i, u = (
            _shape(x, w) for x, w in zip(self.args, ("values_in", "indices", "input"), strict=True)
        )
        rules.check_rank("values_in", v, 3)
        rules.check_rank("indices", i, 2)
        rules.check_result((v[0], i[1], v[2]), u)
        rules.check_result(v, _shape(self.output, "result"))
        _same_elements(self, [values, updates, self.output])
        if _element(indices) != i32:
            raise VerifyException(f"expects i32 indices, got {indices.type}")


TOSA_OPS: tuple[type[TosaOp], ...] = (
    ConstOp,
    ConstShapeOp,
    Conv2DOp,
    DepthwiseConv2DOp,
    Conv3DOp,
    MatMulOp,
    TransposeOp,
    ReshapeOp,
    SliceOp,
    TileOp,
    PadOp,
    ConcatOp,
    ReduceSumOp,
    ReduceMaxOp,
    ReduceMinOp,
    AddOp,
    SubOp,
    MaximumOp,
    MinimumOp,
    PowOp,
    IntDivOp,
    MulOp,
    ExpOp,
    LogOp,
    TanhOp,
    SigmoidOp,
    AbsOp,
    FloorOp,
    CeilOp,
    RsqrtOp,
    ReciprocalOp,
    ErfOp,
    CastOp,
    NegateOp,
    ClampOp,
    SelectOp,
    GreaterOp,
    GreaterEqualOp,
    EqualOp,
    BitwiseAndOp,
    BitwiseXorOp,
    GatherOp,
    ScatterOp,
)

TOSA = Dialect("tosa", list(TOSA_OPS), [ShapeType])
