"""The TOSA 1.0 dialect `migraphx-to-tosa` emits: its op list, joined from the op families
(`movement_ops`, `compute_ops`, on `op_base`), and the one namespace the lowering and the
interpreter read them from (`from convcanon.tosa import ops as tosa`). A new op is a class in its
family's module and a row of `TOSA_OPS`.

The ops are defined in xDSL and printed in MLIR's generic form.

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
    %p  = "tosa.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>,
            stride = array<i64: 2, 2>}> : (tensor<NxHxWxCxf32>) -> tensor<NxOHxOWxCxf32>
    "tosa.avg_pool2d"(%x, %xzp, %outzp): the same properties and `acc_type = f32`
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
`tosa.conv2d %x, ... {pad = ...}`; `nan_mode` is left to its default (PROPAGATE) but on
max_pool2d and maximum, as `#tosa.nan_mode<IGNORE>` (MIGraphX's max pooling skips NaN).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from convcanon.tosa.compute_ops import (
    AbsOp,
    AddOp,
    AvgPool2DOp,
    BitwiseAndOp,
    BitwiseXorOp,
    CastOp,
    CeilOp,
    ClampOp,
    Conv2DOp,
    Conv3DOp,
    DepthwiseConv2DOp,
    EqualOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GreaterEqualOp,
    GreaterOp,
    IntDivOp,
    LogOp,
    MatMulOp,
    MaximumOp,
    MaxPool2DOp,
    MinimumOp,
    MulOp,
    NegateOp,
    PowOp,
    ReciprocalOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceSumOp,
    RsqrtOp,
    SelectOp,
    SigmoidOp,
    SubOp,
    TanhOp,
)
from convcanon.tosa.compute_ops import conv_properties as conv_properties
from convcanon.tosa.compute_ops import pool_properties as pool_properties
from convcanon.tosa.movement_ops import (
    ConcatOp,
    ConstOp,
    ConstShapeOp,
    GatherOp,
    PadOp,
    ReshapeOp,
    ScatterOp,
    SliceOp,
    TileOp,
    TransposeOp,
)
from convcanon.tosa.movement_ops import const_shape_attr as const_shape_attr
from convcanon.tosa.movement_ops import perms_attr as perms_attr
from convcanon.tosa.op_base import NanModeAttr, ShapeType, TosaOp
from convcanon.tosa.op_base import axis_attr as axis_attr
from convcanon.tosa.op_base import dense as dense
from convcanon.tosa.op_base import ignores_nan as ignores_nan
from convcanon.tosa.op_base import int_values as int_values

TOSA_OPS: tuple[type[TosaOp], ...] = (
    ConstOp,
    ConstShapeOp,
    Conv2DOp,
    DepthwiseConv2DOp,
    Conv3DOp,
    MaxPool2DOp,
    AvgPool2DOp,
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

TOSA = Dialect("tosa", list(TOSA_OPS), [ShapeType, NanModeAttr])
