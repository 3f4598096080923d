"""The MHLO/StableHLO twin as one table: op names and the attribute kind each dialect stores.

Both dialects hold the same facts; they differ only in how integer and boolean
lists are stored (`array<i64: ...>` vs `dense<...> : tensor<Nxi64>`) and in op-name prefix.
Reading accepts either kind, so readers are dialect-neutral; writing follows the table. Padding
(`tensor<Nx2xi64>`), dimension numbers and precision config are copied verbatim or written
identically, so they need no entry.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from jaxlib.mlir import ir

from convcanon.hlo.conv_params import DimensionNumbers
from convcanon.records import NamedTuple

ListKind = Literal["array", "dense"]


class Dialect(NamedTuple):
    """One row of the twin table."""

    name: str
    list_kind: ListKind  # window_strides/dilations/reversal and pad/slice index lists

    def op(self, short: str) -> str:
        """Full op name, e.g. `stablehlo.pad`."""
        return f"{self.name}.{short}"

    @property
    def conv(self) -> str:
        return self.op("convolution")

    @property
    def dynamic_conv(self) -> str:
        """The conv whose padding is an operand (what shape-polymorphic exports emit)."""
        return self.op("dynamic_conv")

    @property
    def convs(self) -> tuple[str, str]:
        return self.conv, self.dynamic_conv

    def i64_list(self, values: Sequence[int]) -> ir.Attribute:
        """A list of i64 in this dialect's kind (strides, dilations, pad/slice indices)."""
        if self.list_kind == "array":
            return ir.DenseI64ArrayAttr.get([int(v) for v in values])
        body = ", ".join(str(int(v)) for v in values)
        return ir.Attribute.parse(f"dense<[{body}]> : tensor<{len(values)}xi64>")

    def bool_list(self, values: Sequence[bool]) -> ir.Attribute:
        """A list of booleans in this dialect's kind (window_reversal)."""
        if self.list_kind == "array":
            return ir.DenseBoolArrayAttr.get([bool(v) for v in values])
        body = ", ".join("true" if v else "false" for v in values)
        return ir.Attribute.parse(f"dense<[{body}]> : tensor<{len(values)}xi1>")

    def dimension_numbers(self, dims: DimensionNumbers) -> ir.Attribute:
        """Conv dimension numbers in this dialect (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`)."""

        def roles(rank: int, named: dict[int, str], spatial: tuple[int, ...]) -> str:
            role = {axis: str(i) for i, axis in enumerate(spatial)} | named
            return "[" + ", ".join(role[axis] for axis in range(rank)) + "]"

        rank = len(dims.lhs_spatial) + 2
        lhs = roles(rank, {dims.lhs_batch: "b", dims.lhs_feature: "f"}, dims.lhs_spatial)
        rhs = roles(rank, {dims.rhs_in_feature: "i", dims.rhs_out_feature: "o"}, dims.rhs_spatial)
        out = roles(rank, {dims.out_batch: "b", dims.out_feature: "f"}, dims.out_spatial)
        return ir.Attribute.parse(f"#{self.name}.conv<{lhs}x{rhs}->{out}>")


STABLEHLO = Dialect("stablehlo", "array")
MHLO = Dialect("mhlo", "dense")
DIALECTS = {d.name: d for d in (STABLEHLO, MHLO)}


def padding_attr(pairs: Sequence[tuple[int, int]]) -> ir.Attribute:
    """Conv padding, `dense<[[lo, hi], ...]> : tensor<Nx2xi64>` in both dialects."""
    body = ", ".join(f"[{lo}, {hi}]" for lo, hi in pairs)
    literal = f"[{body}]" if pairs else ""  # `dense<[]>` would be a tensor<0xi64>
    return ir.Attribute.parse(f"dense<{literal}> : tensor<{len(pairs)}x2xi64>")


def read_ints(attr: ir.Attribute) -> tuple[int, ...]:
    """Integers of an `array<i64/i1: ...>` or a `dense<...>` attribute (either dialect)."""
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return tuple(int(v) for v in attr)
    if isinstance(attr, ir.DenseBoolArrayAttr):
        return tuple(int(bool(v)) for v in attr)
    if isinstance(attr, ir.DenseIntElementsAttr):
        try:
            return tuple(int(v) for v in attr)
        except TypeError:  # 2- and 4-bit integers, which the bindings do not index
            return _printed_ints(attr)
    if isinstance(attr, ir.DenseElementsAttr):
        return tuple(int(v) for v in ir.DenseIntElementsAttr(attr))
    raise TypeError(f"not an integer list attribute: {attr}")


def _printed_ints(attr: ir.DenseIntElementsAttr) -> tuple[int, ...]:
    """The integers of a dense literal as MLIR prints it (`dense<[[1, 2], [3, 4]]>`, or a splat
    `dense<1>`), for element types the bindings cannot read."""
    literal = str(attr).rsplit(" : ", 1)[0].removeprefix("dense<").removesuffix(">")
    if literal.startswith('"'):
        raise TypeError(f"cannot read the hexadecimal literal of {attr.type}")
    values = tuple(int(v) for v in re.findall(r"-?\d+", literal))
    count = math.prod(ir.ShapedType(attr.type).shape)
    return values * count if len(values) == 1 and count != 1 else values


def read_padding(attr: ir.Attribute) -> tuple[tuple[int, int], ...]:
    """Conv padding pairs from `dense<...> : tensor<Nx2xi64>` (a splat included)."""
    flat = read_ints(attr)
    return tuple((flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def read_dimension_numbers(attr: ir.Attribute) -> DimensionNumbers:
    """`#stablehlo.conv<...>` or `#mhlo.conv<...>` as plain integers."""
    from jaxlib.mlir._mlir_libs import _mlirHlo, _stablehlo

    for cls in (_stablehlo.ConvDimensionNumbers, _mlirHlo.ConvDimensionNumbers):
        if cls.isinstance(attr):
            d = cls(attr)
            return DimensionNumbers(
                d.input_batch_dimension,
                d.input_feature_dimension,
                tuple(d.input_spatial_dimensions),
                d.kernel_input_feature_dimension,
                d.kernel_output_feature_dimension,
                tuple(d.kernel_spatial_dimensions),
                d.output_batch_dimension,
                d.output_feature_dimension,
                tuple(d.output_spatial_dimensions),
            )
    raise TypeError(f"not conv dimension numbers: {attr}")
