"""TOSA ops that move or place elements without computing on them: constants (values and
`!tosa.shape` operands), transpose, reshape, slice, tile, pad, concat, gather and scatter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    TensorType,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx.shape_rules import ShapeError, transpose_lens
from convcanon.tosa import shape_rules as rules
from convcanon.tosa.op_base import (
    AxisOp,
    ShapeType,
    TosaOp,
    check_same_elements,
    dense,
    dense_values,
    element_of,
    int_values,
    shape_of,
    tensor_type,
)


def shape_values(value: SSAValue, what: str) -> list[int]:
    """The integers of a `!tosa.shape` operand (it must come from `tosa.const_shape`)."""
    ty = value.type
    if not isinstance(ty, ShapeType):
        raise VerifyException(f"expects !tosa.shape for {what}, got {ty}")
    owner = value.owner
    if not isinstance(owner, ConstShapeOp):
        raise VerifyException(f"{what} must be a tosa.const_shape value")
    values = [int(v) for v in dense_values(owner.values)]
    return values * ty.rank.data if len(values) == 1 else values


# -- constants -------------------------------------------------------------------------------------


@irdl_op_definition
class ConstOp(TosaOp):
    name = "tosa.const"
    ARITY: ClassVar[int | None] = 0
    values = prop_def(DenseIntOrFPElementsAttr)

    def verify_shapes(self) -> None:
        out = tensor_type(self.output, "result")
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


def const_shape_attr(values: Sequence[int]) -> DenseIntOrFPElementsAttr:
    return dense(IndexType(), [len(values)], values)


# -- data movement ---------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(TosaOp):
    name = "tosa.transpose"
    perms = prop_def(DenseArrayBase)

    def verify_shapes(self) -> None:
        expected = transpose_lens(shape_of(self.args[0], "input"), int_values(self.perms))
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([self.args[0], self.output])


def perms_attr(perms: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, list(perms))


@irdl_op_definition
class ReshapeOp(TosaOp):
    name = "tosa.reshape"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        x, new_shape = self.args
        out = shape_of(self.output, "result")
        values = shape_values(new_shape, "shape")
        if len(values) != len(out):
            raise VerifyException(f"new shape {values} does not have the result's rank {len(out)}")
        rules.check_result(rules.reshape_output(shape_of(x, "input"), values), out)
        check_same_elements([x, self.output])


@irdl_op_definition
class SliceOp(TosaOp):
    name = "tosa.slice"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, start, size = self.args
        expected = rules.slice_output(
            shape_of(x, "input"), shape_values(start, "start"), shape_values(size, "size")
        )
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([x, self.output])


@irdl_op_definition
class TileOp(TosaOp):
    name = "tosa.tile"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        x, multiples = self.args
        expected = rules.tile_output(shape_of(x, "input"), shape_values(multiples, "multiples"))
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([x, self.output])


@irdl_op_definition
class PadOp(TosaOp):
    name = "tosa.pad"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        x, padding, value = self.args
        expected = rules.pad_output(shape_of(x, "input"), shape_values(padding, "padding"))
        rules.check_result(expected, shape_of(self.output, "result"))
        if math.prod(shape_of(value, "pad value")) != 1:
            raise VerifyException(f"expects a one-element pad value, got {value.type}")
        check_same_elements([x, value, self.output])


@irdl_op_definition
class ConcatOp(AxisOp):
    name = "tosa.concat"
    ARITY: ClassVar[int | None] = None

    def verify_shapes(self) -> None:
        shapes = [shape_of(v, f"operand {i}") for i, v in enumerate(self.args)]
        expected = rules.concat_output(shapes, self.axis.value.data)
        rules.check_result(expected, shape_of(self.output, "result"))
        check_same_elements([*self.args, self.output])


@irdl_op_definition
class GatherOp(TosaOp):
    """values [N, K, C], indices [N, W] (i32) -> [N, W, C]."""

    name = "tosa.gather"
    ARITY: ClassVar[int | None] = 2

    def verify_shapes(self) -> None:
        values, indices = self.args
        v, i = shape_of(values, "values"), shape_of(indices, "indices")
        rules.check_rank("values", v, 3)
        rules.check_rank("indices", i, 2)
        if v[0] != i[0]:
            raise ShapeError(f"values batch {v[0]} differs from the indices batch {i[0]}")
        rules.check_result((v[0], i[1], v[2]), shape_of(self.output, "result"))
        check_same_elements([values, self.output])
        if element_of(indices) != i32:
            raise VerifyException(f"expects i32 indices, got {indices.type}")


@irdl_op_definition
class ScatterOp(TosaOp):
    """values_in [N, K, C], indices [N, W] (i32), input [N, W, C] -> [N, K, C]."""

    name = "tosa.scatter"
    ARITY: ClassVar[int | None] = 3

    def verify_shapes(self) -> None:
        values, indices, updates = self.args
        v, i, u = (
            shape_of(x, w)
            for x, w in zip(self.args, ("values_in", "indices", "input"), strict=True)
        )
        rules.check_rank("values_in", v, 3)
        rules.check_rank("indices", i, 2)
        rules.check_result((v[0], i[1], v[2]), u)
        rules.check_result(v, shape_of(self.output, "result"))
        check_same_elements([values, updates, self.output])
        if element_of(indices) != i32:
            raise VerifyException(f"expects i32 indices, got {indices.type}")
