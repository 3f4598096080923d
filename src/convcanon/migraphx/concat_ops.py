"""`migraphx.concat`: MIGraphX's concat of one or more values along an axis. Its own module:
`ops.py` is full; it joins `CORE_OPS` there. rocMLIR has no concat: the syntax is the dialect's
for a variadic op, every operand and its type listed.

    %c = migraphx.concat %a, %b {axis = 1 : i64} : <1x2x4x4xf32, 32x16x4x1>,
           <1x3x4x4xf32, 48x1x12x3> -> <1x5x4x4xf32, 80x16x4x1>

MIGraphX prints `concat[axis=1](@a,@b)`; a negative axis counts from the end, as MIGraphX
normalizes it. The inputs may have any strides: the op reads their logical values.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute
from xdsl.irdl import attr_def, irdl_op_definition

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import Lens, MigraphxOp, int_value, same_element_type


@irdl_op_definition
class ConcatOp(MigraphxOp):
    """The inputs joined along `axis`, in operand order (their other lens equal)."""

    name = "migraphx.concat"
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
    axis = attr_def(IntegerAttr)

    def concat_axis(self) -> int:
        """The axis, normalized to [0, rank)."""
        types = self.in_types()
        rank = len(types[0].lens) if types else 0
        return rules.normalize_axis(int_value(self, "axis"), rank)

    def infer(self) -> tuple[Lens, Attribute]:
        types = self.in_types()
        lens = rules.concat_lens([t.lens for t in types], int_value(self, "axis"))
        return lens, same_element_type(types)
