"""Reading op attributes (either dialect's spelling) and the shape of a region's body."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import mhlo, stablehlo


def ints(attr: ir.Attribute | None, default: Sequence[int] = ()) -> list[int]:
    """A list of ints from `array<i64: ...>`, `array<i1: ...>` or `dense<...> : tensor<Nxi64>`."""
    if attr is None:
        return list(default)
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]
    if isinstance(attr, ir.DenseBoolArrayAttr):
        return [int(v) for v in ir.DenseBoolArrayAttr(attr)]
    if isinstance(attr, ir.IntegerAttr):
        return [ir.IntegerAttr(attr).value]
    if isinstance(attr, ir.DenseElementsAttr):
        arr = np.array(attr) if not ir.DenseElementsAttr(attr).is_splat else None
        if arr is None:
            size = math.prod(ir.ShapedType(attr.type).shape)
            text = str(attr)
            value = text[text.index("<") + 1 : text.index(">")]
            scalar = {"true": 1, "false": 0}.get(value.strip())
            return [int(value) if scalar is None else scalar] * size
        return [int(v) for v in arr.ravel()]
    raise ValueError(f"not an integer array: {attr}")


def optional_attr(op: ir.Operation, name: str) -> ir.Attribute | None:
    return op.attributes[name] if name in op.attributes else None


def int_attr(op: ir.Operation, name: str, default: int) -> int:
    attr = optional_attr(op, name)
    return default if attr is None else ir.IntegerAttr(attr).value


def conv_dims(attr: ir.Attribute) -> Any:
    text = str(attr)
    return (mhlo if text.startswith("#mhlo") else stablehlo).ConvDimensionNumbers(attr)


def dot_dims(attr: ir.Attribute) -> Any:
    text = str(attr)
    return (mhlo if text.startswith("#mhlo") else stablehlo).DotDimensionNumbers(attr)


def enum_word(attr: ir.Attribute) -> str:
    """`#stablehlo<comparison_direction LT>` -> "LT"."""
    return str(attr).rstrip(">").split()[-1]


def dims_attr(op: ir.Operation, name: str, kind: str) -> Any:
    """Gather/scatter dimension numbers in either dialect's attribute."""
    attr = op.attributes[name]
    dialect = mhlo if str(attr).startswith("#mhlo") else stablehlo
    return getattr(dialect, kind)(attr)


def single_op(region: ir.Region) -> str | None:
    """The op's name (no dialect) if a region is exactly `return op(arg0, arg1)` (fast paths)."""
    block = region.blocks[0]
    ops = [op.operation for op in block.operations]
    args = list(block.arguments)
    if len(ops) != 2 or len(args) != 2 or list(ops[0].operands) != args:
        return None
    if list(ops[1].operands) != [ops[0].results[0]]:
        return None
    return ops[0].name.split(".", 1)[-1]
