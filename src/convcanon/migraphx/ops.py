"""The migraphx compute ops, each declared once: rocMLIR's name and syntax, its instruction and
fields in MIGraphX's printed program, and its shape rule (`infer()`, from shape_rules).

Syntax (as rocMLIR's declarative formats print it):
    %r = migraphx.add %a, %b : <4x3xf32, 3x1>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>
    %c = migraphx.convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0],
           padding_mode = 0 : i64, stride = [1, 1]} : <...>, <...> -> <...>
    %t = migraphx.convert %a : <4xf16, 1> to <4xf32, 1>
The verifier compares the declared result type with the one `infer()` computes.
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, IntegerType, Signedness
from xdsl.ir import Attribute
from xdsl.irdl import attr_def, irdl_op_definition, opt_attr_def

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.concat_ops import ConcatOp
from convcanon.migraphx.norm_ops import BatchNormInferenceOp
from convcanon.migraphx.op_base import (
    ConvLikeOp,
    Lens,
    MigraphxOp,
    int_list,
    int_value,
    same_element_type,
)
from convcanon.migraphx.pad_ops import PadOp
from convcanon.migraphx.pool_ops import PoolingOp
from convcanon.migraphx.shaped_type import ShapedType, is_float_type

# -- elementwise ---------------------------------------------------------------------------------


class ElementwiseBinaryOp(MigraphxOp):
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("inA", "inB")

    def infer(self) -> tuple[Lens, Attribute]:
        a, b = self.in_types()
        return rules.broadcast_lens(a.lens, b.lens), same_element_type([a, b])


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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("target_type",)
    TYPE_FIELD: ClassVar[str | None] = "target_type"
    target_type = opt_attr_def(IntegerAttr)

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
        return lens, same_element_type([x, lo, hi])


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
        return rules.broadcast_lens(cond.lens, a.lens, b.lens), same_element_type([a, b])


# -- shape ops -----------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(MigraphxOp):
    name = "migraphx.transpose"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("permutation",)
    permutation = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.transpose_lens(a.lens, int_list(self, "permutation")), a.element_type


@irdl_op_definition
class ReshapeOp(MigraphxOp):
    name = "migraphx.reshape"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("dims",)
    dims = attr_def(ArrayAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.reshape_lens(a.lens, int_list(self, "dims")), a.element_type


@irdl_op_definition
class BroadcastOp(MigraphxOp):
    name = "migraphx.broadcast"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis", "out_lens")
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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("out_lens",)
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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axes", "starts", "ends")
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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axes",)
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
    """New dims at `axes` (positions in the result): size 1, or `steps[k]` split off the input
    dim that follows axis k (MIGraphX's `steps`; absent or empty: all 1)."""

    name = "migraphx.unsqueeze"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axes", "steps")
    PROGRAM_DEFAULTS: ClassVar[dict[str, list[int] | int]] = {"steps": []}
    axes = attr_def(ArrayAttr)
    steps = opt_attr_def(ArrayAttr)

    def step_values(self) -> list[int]:
        return int_list(self, "steps") if "steps" in self.attributes else []

    def splits_dims(self) -> bool:
        """A step other than 1 splits an input dim: the op is then a reshape, not a view that
        only adds size-1 dims."""
        return any(step != 1 for step in self.step_values())

    def inserted_axes(self) -> list[int]:
        (a,) = self.in_types()
        return rules.unsqueeze_axes(a.rank, int_list(self, "axes"))

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        lens = rules.unsqueeze_lens(a.lens, int_list(self, "axes"), self.step_values())
        return lens, a.element_type


@irdl_op_definition
class FlattenOp(MigraphxOp):
    """[d0..dn] -> [d0*..*d(axis-1), d(axis)*..*dn]."""

    name = "migraphx.flatten"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
    axis = attr_def(IntegerAttr)

    def infer(self) -> tuple[Lens, Attribute]:
        data, indices, updates = self.in_types()
        _check_index_type(indices)
        rules.scatter_check(data.lens, indices.lens, updates.lens, int_value(self, "axis"))
        return data.lens, same_element_type([data, updates])


def _check_index_type(indices: ShapedType) -> None:
    if not isinstance(indices.element_type, IntegerType) or indices.element_type.width.data < 8:
        raise rules.ShapeError(f"indices must be integers, got {indices.element_type}")


# -- reductions ----------------------------------------------------------------------------------


class ReduceOp(MigraphxOp):
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axes",)
    axes = attr_def(ArrayAttr)

    def reduced_axes(self) -> list[int]:
        """The input dims this reduction folds (every one for `axes = []`), sorted."""
        (a,) = self.in_types()
        return rules.reduce_axes(a.rank, int_list(self, "axes"))

    def infer(self) -> tuple[Lens, Attribute]:
        (a,) = self.in_types()
        return rules.reduce_lens(a.lens, int_list(self, "axes")), a.element_type


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "migraphx.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "migraphx.reduce_mean"

    def integer_sum_type(self) -> IntegerType:
        """The integer type an integer mean's sum wraps in before it is divided by the count
        (truncating), as MIGraphX's GPU target computes it: its rewrite_reduce pass converts
        bytes (here 4-bit values too), and 16-bit values when the count is at least a quarter
        of the type's maximum, to int32 first; other types sum in their own. Its reference
        target sums in 64 bits (the exact mean) instead: the two disagree only where the sum
        leaves the type (C++'s undefined signed overflow, or an unsigned wrap)."""
        (a,) = self.in_types()
        element = a.element_type
        assert isinstance(element, IntegerType)
        width = element.width.data
        count = math.prod(a.lens[i] for i in self.reduced_axes())
        unsigned = element.signedness.data == Signedness.UNSIGNED
        largest = (1 << width) - 1 if unsigned else (1 << (width - 1)) - 1
        if width <= 8 or (width == 16 and 4 * count >= largest):
            return IntegerType(32, Signedness.SIGNED)
        return element


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
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
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
        return rules.dot_lens(a.lens, b.lens), same_element_type([a, b])


@irdl_op_definition
class ConvolutionOp(ConvLikeOp):
    """Forward convolution: input [N, C, *S], filter [O, C/group, *K]; 1-D to 3-D."""

    name = "migraphx.convolution"

    def infer(self) -> tuple[Lens, Attribute]:
        x, w = self.in_types()
        element_type = same_element_type([x, w])
        if not is_float_type(element_type):
            raise rules.ShapeError(f"convolution needs float operands, got {element_type}")
        return self.output_lens(), element_type


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
CORE_OPS: tuple[type[MigraphxOp], ...] = (
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
    ConcatOp,
    PadOp,
    SqueezeOp,
    UnsqueezeOp,
    FlattenOp,
    GatherOp,
    ScatterNoneOp,
    SoftmaxOp,
    DotOp,
    ConvolutionOp,
    PoolingOp,
    BatchNormInferenceOp,
)
# Ops whose whole verifier is `MigraphxOp.verify_semantics` once their attributes have the
# types the program importer gives them (it then skips xDSL's generic attribute checks).
IMPORTER_TRUSTED: frozenset[type[MigraphxOp]] = frozenset(CORE_OPS)
