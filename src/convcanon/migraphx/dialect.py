"""The `migraphx` xDSL dialect: rocMLIR's ops and the `!migraphx.shaped` type."""

from __future__ import annotations

from xdsl.ir import Dialect

from convcanon.migraphx.ops import ALL_OPS
from convcanon.migraphx.quant_ops import QUANT_OPS
from convcanon.migraphx.shaped_type import ShapedType

Migraphx = Dialect("migraphx", [*ALL_OPS, *QUANT_OPS], [ShapedType])
