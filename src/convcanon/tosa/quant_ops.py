"""The TOSA 1.0 ops only the quantization lowerings emit (generic form, checked with iree-opt):

%y = "tosa.transpose_conv2d"(%x, %w, %bias, %xzp, %wzp) <{acc_type = f32,
       out_pad = array<i64: top, bottom, left, right>, stride = array<i64: sy, sx>}>
       : (tensor<NxHxWxCxT>, tensor<OxKHxKWxCxT>, tensor<OxT>|tensor<1xT>, tensor<1xT>,
          tensor<1xT>) -> tensor<NxOHxOWxOxT>      OH = (H-1)*sy + top + bottom + KH
"tosa.logical_left_shift"(%a, %b), "tosa.logical_right_shift"(%a, %b),
"tosa.arithmetic_right_shift"(%a, %b) <{round = false}>, "tosa.reverse"(%x) <{axis = 1 : i32}>

(`tosa.bitwise_and` is the TOSA dialect's own.)
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from convcanon.tosa.op_base import (
    BinaryOp,
    TosaOp,
    check_same_elements,
    check_zero_point,
    element_of,
    int_values,
    shape_of,
)
from convcanon.tosa.shape_rules import ShapeError, check_bias, check_result


@irdl_op_definition
class TransposeConv2DOp(TosaOp):
    name = "tosa.transpose_conv2d"
    ARITY: ClassVar[int | None] = 5
    out_pad = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    acc_type = prop_def()

    def verify_shapes(self) -> None:
        x, w, bias, x_zp, w_zp = self.args
        xs = shape_of(x, "input")
        ws = shape_of(w, "weight")
        if len(xs) != 4 or len(ws) != 4 or xs[3] != ws[3]:
            raise ShapeError(f"expects NHWC input and OHWI weight with equal C, got {xs}, {ws}")
        top, bottom, left, right = int_values(self.out_pad)
        sy, sx = int_values(self.stride)
        if min(sy, sx) < 1 or min(top, bottom) <= -ws[1] or min(left, right) <= -ws[2]:
            raise ShapeError("stride must be >= 1 and each out_pad > -kernel")
        expected = (
            xs[0],
            (xs[1] - 1) * sy + top + bottom + ws[1],
            (xs[2] - 1) * sx + left + right + ws[2],
            ws[0],
        )
        check_bias(shape_of(bias, "bias"), ws[0])
        check_result(expected, shape_of(self.output, "result"))
        check_zero_point(x_zp, x, "input")
        check_zero_point(w_zp, w, "weight")


def transpose_conv_properties(
    out_pad: list[int], stride: list[int], acc_type: Attribute
) -> dict[str, Attribute]:
    return {
        "out_pad": DenseArrayBase.from_list(i64, out_pad),
        "stride": DenseArrayBase.from_list(i64, stride),
        "acc_type": acc_type,
    }


class IntBinaryOp(BinaryOp):
    """Integer elementwise ops: one element type for operands and result."""

    def verify_shapes(self) -> None:
        super().verify_shapes()
        if not isinstance(element_of(self.output), IntegerType):
            raise VerifyException(f"'{self.name}' takes integers, got {self.output.type}")


@irdl_op_definition
class LogicalLeftShiftOp(IntBinaryOp):
    name = "tosa.logical_left_shift"


@irdl_op_definition
class LogicalRightShiftOp(IntBinaryOp):
    name = "tosa.logical_right_shift"


@irdl_op_definition
class ArithmeticRightShiftOp(IntBinaryOp):
    name = "tosa.arithmetic_right_shift"
    round = prop_def(IntegerAttr)


@irdl_op_definition
class ReverseOp(TosaOp):
    """`"tosa.reverse"(%x) <{axis = 1 : i32}>`: x flipped along one axis."""

    name = "tosa.reverse"
    axis = prop_def(IntegerAttr)

    def verify_shapes(self) -> None:
        shape = shape_of(self.args[0], "input")
        if not 0 <= self.axis.value.data < len(shape):
            raise ShapeError(f"axis {self.axis.value.data} is out of range for rank {len(shape)}")
        check_result(shape, shape_of(self.output, "result"))
        check_same_elements([self.args[0], self.output])


TOSA_QUANT_OPS: tuple[type[TosaOp], ...] = (
    ReverseOp,
    TransposeConv2DOp,
    LogicalLeftShiftOp,
    LogicalRightShiftOp,
    ArithmeticRightShiftOp,
)
