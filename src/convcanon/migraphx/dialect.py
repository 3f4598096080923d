"""The `migraphx` xDSL dialect: rocMLIR's ops and the `!migraphx.shaped` type.

The one list of the dialect's ops, joined from op families that do not import each other; the
program importer reads its instruction table from it.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from convcanon.migraphx.boundary_ops import BOUNDARY_OPS
from convcanon.migraphx.ops import CORE_OPS
from convcanon.migraphx.quant_ops import QUANT_OPS
from convcanon.migraphx.shaped_type import ShapedType

Migraphx = Dialect("migraphx", [*CORE_OPS, *BOUNDARY_OPS, *QUANT_OPS], [ShapedType])
