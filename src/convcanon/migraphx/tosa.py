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

from collections.abc import Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
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


# -- constants -------------------------------------------------------------------------------------


@irdl_op_definition
class ConstOp(TosaOp):
    name = "tosa.const"
    ARITY: ClassVar[int | None] = 0
    values = prop_def(DenseIntOrFPElementsAttr)


@irdl_op_definition
class ConstShapeOp(TosaOp):
    name = "tosa.const_shape"
    ARITY: ClassVar[int | None] = 0
    values = prop_def(DenseIntOrFPElementsAttr)


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
    pad = prop_def(DenseArrayBase)
    stride = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    acc_type = prop_def(Attribute)


@irdl_op_definition
class Conv2DOp(ConvOp):
    name = "tosa.conv2d"


@irdl_op_definition
class DepthwiseConv2DOp(ConvOp):
    name = "tosa.depthwise_conv2d"


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


# -- data movement ---------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(TosaOp):
    name = "tosa.transpose"
    perms = prop_def(DenseArrayBase)


def perms_attr(perms: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, list(perms))


@irdl_op_definition
class ReshapeOp(TosaOp):
    name = "tosa.reshape"
    ARITY: ClassVar[int | None] = 2


@irdl_op_definition
class SliceOp(TosaOp):
    name = "tosa.slice"
    ARITY: ClassVar[int | None] = 3


@irdl_op_definition
class TileOp(TosaOp):
    name = "tosa.tile"
    ARITY: ClassVar[int | None] = 2


@irdl_op_definition
class PadOp(TosaOp):
    name = "tosa.pad"
    ARITY: ClassVar[int | None] = 3


class AxisOp(TosaOp):
    axis = prop_def(IntegerAttr)


def axis_attr(axis: int) -> dict[str, Attribute]:
    return {"axis": IntegerAttr(axis, i32)}


@irdl_op_definition
class ConcatOp(AxisOp):
    name = "tosa.concat"
    ARITY: ClassVar[int | None] = None


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


@irdl_op_definition
class NegateOp(TosaOp):
    """x, input zero point, output zero point."""

    name = "tosa.negate"
    ARITY: ClassVar[int | None] = 3


@irdl_op_definition
class ClampOp(TosaOp):
    name = "tosa.clamp"
    min_val = prop_def(Attribute)
    max_val = prop_def(Attribute)


@irdl_op_definition
class SelectOp(TosaOp):
    name = "tosa.select"
    ARITY: ClassVar[int | None] = 3


@irdl_op_definition
class GreaterOp(BinaryOp):
    name = "tosa.greater"


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
)

TOSA = Dialect("tosa", list(TOSA_OPS), [ShapeType])
