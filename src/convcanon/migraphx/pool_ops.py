"""`migraphx.pooling`: MIGraphX's pooling op (max, average, lpnorm over the spatial dims of
[N, C, *S]), in rocMLIR's syntax. Its own module: `ops.py` is full; it joins `CORE_OPS` there.

    %p = migraphx.pooling %x {ceil_mode = 0 : i64, length = [3, 3], mode = "max",
           padding = [1, 1, 1, 1], stride = [2, 2]} : <1x64x112x112xf32, ...> -> <...>

rocMLIR declares mode, padding, stride, length and ceil_mode; MIGraphX's other fields
(dilations, count_include_pad, lp_order, padding_mode, dyn_global) keep MIGraphX's names and
are left out at their defaults.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute
from xdsl.irdl import attr_def, irdl_op_definition, opt_attr_def
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import Lens, MigraphxOp, int_list, int_value


@irdl_op_definition
class PoolingOp(MigraphxOp):
    """Pooling as MIGraphX's reference computes it (see `rules.pool_window`)."""

    name = "migraphx.pooling"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("input",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = (
        "mode",
        "padding",
        "padding_mode",
        "stride",
        "lengths",
        "dilations",
        "ceil_mode",
        "count_include_pad",
        "lp_order",
        "dyn_global",
    )
    PROGRAM_DEFAULTS: ClassVar[dict[str, list[int] | int]] = {
        "padding_mode": 0,
        "dilations": [1, 1],
        "count_include_pad": 0,
        "lp_order": 2,
        "dyn_global": 0,
    }
    PROGRAM_ATTRIBUTES: ClassVar[dict[str, str]] = {"lengths": "length"}
    PROGRAM_ENUMS: ClassVar[dict[str, tuple[str, ...]]] = {"mode": rules.POOLING_MODES}
    mode = attr_def(StringAttr)
    padding = attr_def(ArrayAttr)
    stride = attr_def(ArrayAttr)
    length = attr_def(ArrayAttr)
    ceil_mode = opt_attr_def(IntegerAttr)
    dilations = opt_attr_def(ArrayAttr)
    count_include_pad = opt_attr_def(IntegerAttr)
    lp_order = opt_attr_def(IntegerAttr)
    padding_mode = opt_attr_def(IntegerAttr)
    dyn_global = opt_attr_def(IntegerAttr)

    def pool_mode(self) -> str:
        attr = self.attributes.get("mode")
        if not isinstance(attr, StringAttr):
            raise VerifyException(f"{self.name} needs a string attribute `mode`")
        return attr.data

    def window(self) -> rules.PoolWindow:
        """The checked windows. Auto padding (padding_mode) and dyn_global are MIGraphX's forms
        of a dynamic shape, which a static program never needs: refused."""
        (x,) = self.in_types()
        for field in ("padding_mode", "dyn_global"):
            if int_value(self, field, 0) != 0:
                raise rules.ShapeError(
                    f"pooling {field} {int_value(self, field)} is for dynamic shapes; only 0 "
                    "(explicit padding, a static window) is supported"
                )
        return rules.pool_window(
            x.lens,
            self.pool_mode(),
            int_list(self, "padding"),
            int_list(self, "stride"),
            int_list(self, "length"),
            int_list(self, "dilations") if "dilations" in self.attributes else None,
            int_value(self, "ceil_mode", 0),
            int_value(self, "count_include_pad", 0),
            int_value(self, "lp_order", 2),
        )

    def infer(self) -> tuple[Lens, Attribute]:
        (x,) = self.in_types()
        return (*x.lens[:2], *self.window().out_spatial), x.element_type
