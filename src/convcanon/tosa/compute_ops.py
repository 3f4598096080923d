"""TOSA ops that compute: convolutions, pooling and matmul, reductions, elementwise arithmetic,
comparisons, bitwise ops, casts, clamp and select.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from convcanon.tosa import shape_rules as rules
from convcanon.tosa.op_base import (
    AxisOp,
    BinaryOp,
    NanModeAttr,
    TosaOp,
    check_same_elements,
    check_zero_point,
    element_of,
    int_values,
    is_int,
    shape_of,
)

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
            shape_of(x, "input"),
            shape_of(w, "weight"),
            int_values(self.pad),
            int_values(self.stride),
            int_values(self.dilation),
            self.DEPTHWISE,
        )
        rules.check_bias(shape_of(bias, "bias"), expected[-1])
        rules.check_result(expected, shape_of(self.output, "result"))
        if is_int(element_of(x)) != is_int(element_of(w)):
            raise VerifyException(
                f"expects input and weight both float or both integer, got {element_of(x)} and "
                f"{element_of(w)}"
            )
        check_zero_point(x_zp, x, "input")
        check_zero_point(w_zp, w, "weight")
        result, bias_type = element_of(self.output), element_of(bias)
        if not is_int(result) and not is_int(bias_type) and result != bias_type:
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


class Pool2DOp(TosaOp):
    """NHWC pooling: `kernel`, `stride`, `pad` [top, bottom, left, right]; padding is never
    read (max) nor counted (avg divides by the window's input elements)."""

    kernel = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    pad = prop_def(DenseArrayBase)

    def verify_shapes(self) -> None:
        x = self.args[0]
        expected = rules.pool2d_output(
            shape_of(x, "input"),
            int_values(self.kernel),
            int_values(self.stride),
            int_values(self.pad),
        )
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([x, self.output])


@irdl_op_definition
class MaxPool2DOp(Pool2DOp):
    name = "tosa.max_pool2d"
    nan_mode = opt_prop_def(NanModeAttr)


@irdl_op_definition
class AvgPool2DOp(Pool2DOp):
    """input, input zero point, output zero point."""

    name = "tosa.avg_pool2d"
    ARITY: ClassVar[int | None] = 3
    acc_type = prop_def(Attribute)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        x, x_zp, out_zp = self.args
        check_zero_point(x_zp, x, "input")
        check_zero_point(out_zp, self.output, "output")


def pool_properties(
    kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int]
) -> dict[str, Attribute]:
    return {
        "kernel": DenseArrayBase.from_list(i64, list(kernel)),
        "stride": DenseArrayBase.from_list(i64, list(stride)),
        "pad": DenseArrayBase.from_list(i64, list(pad)),
    }


@irdl_op_definition
class MatMulOp(TosaOp):
    name = "tosa.matmul"
    ARITY: ClassVar[int | None] = 4

    def verify_shapes(self) -> None:
        a, b, a_zp, b_zp = self.args
        expected = rules.matmul_output(shape_of(a, "input a"), shape_of(b, "input b"))
        rules.check_result(expected, shape_of(self.output, "result"))
        if element_of(a) != element_of(b):
            raise VerifyException(
                f"expects one element type for a and b, got {element_of(a)} and {element_of(b)}"
            )
        check_zero_point(a_zp, a, "a")
        check_zero_point(b_zp, b, "b")


# -- reductions ------------------------------------------------------------------------------------


class ReduceOp(AxisOp):
    def verify_shapes(self) -> None:
        """The reduced dim is kept, as size 1."""
        x = self.args[0]
        expected = rules.reduce_output(shape_of(x, "input"), self.axis.value.data)
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([x, self.output])


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "tosa.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "tosa.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "tosa.reduce_min"


# -- elementwise -----------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryOp):
    name = "tosa.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "tosa.sub"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "tosa.maximum"
    nan_mode = opt_prop_def(NanModeAttr)


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
        expected = rules.elementwise_output([shape_of(a, "input a"), shape_of(b, "input b")])
        rules.check_result(expected, shape_of(self.output, "result"))
        if shape_of(shift, "shift") != (1,) or element_of(shift) != IntegerType(8):
            raise VerifyException(f"expects shift of type tensor<1xi8>, got {shift.type}")
        if element_of(a) != element_of(b):
            raise VerifyException(
                f"expects one element type for a and b, got {element_of(a)} and {element_of(b)}"
            )
        result = element_of(self.output)
        if not (is_int(result) and is_int(element_of(a))) and result != element_of(a):
            raise VerifyException(f"result element type {result} differs from {element_of(a)}")


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
        rules.check_result(shape_of(self.args[0], "input"), shape_of(self.output, "result"))


@irdl_op_definition
class NegateOp(TosaOp):
    """x, input zero point, output zero point."""

    name = "tosa.negate"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, x_zp, out_zp = self.args
        rules.check_result(shape_of(x, "input"), shape_of(self.output, "result"))
        check_same_elements([x, self.output])
        check_zero_point(x_zp, x, "input")
        check_zero_point(out_zp, self.output, "output")


@irdl_op_definition
class ClampOp(TosaOp):
    name = "tosa.clamp"
    min_val = prop_def(Attribute)
    max_val = prop_def(Attribute)

    def verify_shapes(self) -> None:
        super().verify_shapes()
        element = element_of(self.output)
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
        shapes = [shape_of(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), shape_of(self.output, "result"))
        if element_of(condition) != IntegerType(1):
            raise VerifyException(f"expects an i1 condition, got {condition.type}")
        check_same_elements([a, b, self.output])


class CompareOp(BinaryOp):
    """Elementwise comparison: operands of one element type, an i1 result."""

    def verify_shapes(self) -> None:
        shapes = [shape_of(v, f"operand {i}") for i, v in enumerate(self.args)]
        rules.check_result(rules.elementwise_output(shapes), shape_of(self.output, "result"))
        check_same_elements(self.args)
        if element_of(self.output) != IntegerType(1):
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
        if not is_int(element_of(self.output)):
            raise VerifyException(f"expects integer operands, got {self.output.type}")


@irdl_op_definition
class BitwiseAndOp(BitwiseOp):
    name = "tosa.bitwise_and"


@irdl_op_definition
class BitwiseXorOp(BitwiseOp):
    name = "tosa.bitwise_xor"
