"""Comparisons, squeeze/unsqueeze/flatten, gather, scatter_none and sign-explicit integer types:
rocMLIR's syntax round-trips, and each result-shape verifier says what is wrong."""

from __future__ import annotations

import re

import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text, print_file

ARGS = (
    "%a: !migraphx.shaped<4x3xsi32, 1x4>, %b: !migraphx.shaped<4x3xsi32, 3x1>, "
    "%f: !migraphx.shaped<4x3xf16, 3x1>, %u: !migraphx.shaped<1x3x1x4xui8, 12x1x12x3>, "
    "%d: !migraphx.shaped<5x2x16xf16, 32x16x1>, %i: !migraphx.shaped<3xsi64, 1>, "
    "%s: !migraphx.shaped<2x2x16xsi32, 32x16x1>, %v: !migraphx.shaped<2x2x16xf16, 32x16x1>"
)
OPS = [
    *(
        f"%r = migraphx.{name} %a, %b : <4x3xsi32, 1x4>, <4x3xsi32, 3x1> -> <4x3xsi32, 3x1>"
        for name in ("greater", "greater_or_equal", "less", "less_or_equal", "equal")
    ),
    "%r = migraphx.greater %f, %f : <4x3xf16, 3x1>, <4x3xf16, 3x1> -> <4x3xf16, 3x1>",
    "%r = migraphx.squeeze %u {axes = [0, 2]} : <1x3x1x4xui8, 12x1x12x3> -> <3x4xui8, 1x3>",
    "%r = migraphx.squeeze %u : <1x3x1x4xui8, 12x1x12x3> -> <3x4xui8, 1x3>",
    "%r = migraphx.unsqueeze %a {axes = [0, 3]} : <4x3xsi32, 1x4> -> <1x4x3x1xsi32, 12x1x4x1>",
    "%r = migraphx.flatten %u {axis = 2 : i64} : <1x3x1x4xui8, 12x1x12x3> -> <3x4xui8, 1x3>",
    "%r = migraphx.gather %d, %i {axis = 1 : i64} : <5x2x16xf16, 32x16x1>, <3xsi64, 1> "
    "-> <5x3x16xf16, 48x16x1>",
    "%r = migraphx.scatter_none %d, %s, %v {axis = 0 : i64} : <5x2x16xf16, 32x16x1>, "
    "<2x2x16xsi32, 32x16x1>, <2x2x16xf16, 32x16x1> -> <5x2x16xf16, 32x16x1>",
    "%r = migraphx.convert %u {target_type = 0 : i64} : <1x3x1x4xui8, 12x1x12x3> to "
    "<1x3x1x4xsi8, 12x1x12x3>",
    "%r = migraphx.literal(dense<[200, 7, 0, 255]> : tensor<4xui8>) : <4xui8, 1>",
    "%r = migraphx.literal(dense<[-23, 28]> : tensor<2xsi8>) : <2xsi8, 1>",
]


def _module(op_line: str) -> str:
    result = (
        "!migraphx.shaped" + op_line.rsplit(": ", 1)[1].rsplit("-> ", 1)[-1].rsplit(" to ", 1)[-1]
    )
    return f"func.func @f({ARGS}) -> {result} {{\n  {op_line}\n  func.return %r : {result}\n}}\n"


@pytest.mark.parametrize("op_line", OPS, ids=lambda line: line.split()[2])
def test_op_round_trips_in_rocmlir_syntax(op_line: str) -> None:
    printed = print_file(parse_file_text(_module(op_line), "in.mlir"))
    assert print_file(parse_file_text(printed, "again.mlir")) == printed
    assert printed.splitlines()[2].strip().replace("%0", "%r") == op_line


BAD = [
    (
        "%r = migraphx.equal %a, %b : <4x3xsi32, 1x4>, <4x3xsi32, 3x1> -> <4x3xsi16, 3x1>",
        "declared result element type si16 disagrees with the computed si32",
    ),
    (
        "%r = migraphx.squeeze %u {axes = [1]} : <1x3x1x4xui8, 12x1x12x3> -> <1x1x4xui8, 4x4x1>",
        "cannot squeeze axis 1 (normalized to 1) which has size 3 (expected size 1)",
    ),
    (
        "%r = migraphx.squeeze %u {axes = [5]} : <1x3x1x4xui8, 12x1x12x3> -> <3x4xui8, 1x3>",
        "axis 5 is out of bounds for input with rank 4 (valid range is [-4, 3])",
    ),
    (
        "%r = migraphx.gather %d, %i {axis = -4 : i64} : <5x2x16xf16, 32x16x1>, <3xsi64, 1> "
        "-> <5x3x16xf16, 48x16x1>",
        "axis -4 is out of bounds for data with rank 3 (valid range is [-3, 2])",
    ),
    (
        "%r = migraphx.gather %d, %f {axis = 0 : i64} : <5x2x16xf16, 32x16x1>, <4x3xf16, 3x1> "
        "-> <4x3x2x16xf16, 96x32x16x1>",
        "indices must be integers, got f16",
    ),
    (
        "%r = migraphx.scatter_none %d, %i, %v {axis = 0 : i64} : <5x2x16xf16, 32x16x1>, "
        "<3xsi64, 1>, <2x2x16xf16, 32x16x1> -> <5x2x16xf16, 32x16x1>",
        "data, indices, and updates must have the same rank, got 3, 1, and 3",
    ),
    (
        "%r = migraphx.flatten %u {axis = 5 : i64} : <1x3x1x4xui8, 12x1x12x3> -> <3x4xui8, 1x3>",
        "flatten axis 5 is out of range for rank 4",
    ),
]


@pytest.mark.parametrize(("op_line", "message"), BAD, ids=[m for _, m in BAD])
def test_verifier_names_what_is_wrong(op_line: str, message: str) -> None:
    with pytest.raises(ConvcanonError, match=re.escape(message)) as info:
        parse_file_text(_module(op_line), "bad.mlir")
    assert info.value.loc is not None and info.value.loc.line == 2
