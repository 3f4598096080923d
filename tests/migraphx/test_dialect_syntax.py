"""The shaped type and every migraphx op parse and print in rocMLIR's syntax, and verify shapes."""

from __future__ import annotations

import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text, print_file

TYPES = [
    "!migraphx.shaped<2x16x3x3xf32, 144x1x48x16>",
    "!migraphx.shaped<f32>",
    "!migraphx.shaped<1xf16, 0>",
    "!migraphx.shaped<5x2xbf16, 1x5>",
    "!migraphx.shaped<5x2xi8, 1x0>",
    "!migraphx.shaped<3x4xf32, 8x1>",
    "!migraphx.shaped<2x3xui32, 3x1>",
    "!migraphx.shaped<2x3xf8E4M3FNUZ, 1x2>",
]


def _round_trip(text: str) -> str:
    printed = print_file(parse_file_text(text, "in.mlir"))
    assert print_file(parse_file_text(printed, "printed.mlir")) == printed
    return printed


@pytest.mark.parametrize("ty", TYPES)
def test_shaped_type_prints_as_written(ty: str) -> None:
    text = f"func.func @f(%a: {ty}) -> {ty} {{\n  func.return %a : {ty}\n}}\n"
    printed = _round_trip(text)
    assert printed.count(ty) == 3


# Each line: an op in rocMLIR's syntax, as convcanon prints it back (attributes sorted, shaped
# types without their `!migraphx.shaped` prefix inside the op).
OPS = [
    "%r = migraphx.add %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.sub %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.mul %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.div %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.max %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.min %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    "%r = migraphx.pow %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
    *(
        f"%r = migraphx.{name} %a : <4x3xf32, 1x4> -> <4x3xf32, 1x4>"
        for name in (
            "relu exp log tanh sigmoid neg abs floor ceil sqrt rsqrt recip erf contiguous".split()
        )
    ),
    "%r = migraphx.clip %a, %b, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1>, <4x3xf32, 3x1> "
    "-> <4x3xf32, 3x1>",
    "%r = migraphx.where %c, %a, %b : <4x3xi8, 3x1>, <4x3xf32, 1x4>, <4x3xf32, 3x1> "
    "-> <4x3xf32, 3x1>",
    "%r = migraphx.convert %a : <4x3xf32, 1x4> to <4x3xf16, 1x4>",
    "%r = migraphx.transpose %a {permutation = [1, 0]} : <4x3xf32, 1x4> -> <3x4xf32, 4x1>",
    "%r = migraphx.reshape %b {dims = [2, 6]} : <4x3xf32, 3x1> -> <2x6xf32, 6x1>",
    "%r = migraphx.broadcast %v {axis = 1 : i64, out_lens = [4, 3]} : <3xf32, 1> -> <4x3xf32, 0x1>",
    "%r = migraphx.multibroadcast %v {out_dyn_dims = [], out_lens = [4, 3]} : <3xf32, 1> "
    "-> <4x3xf32, 0x1>",
    "%r = migraphx.slice %a {axes = [0, 1], ends = [3, -1], starts = [1, 0]} : "
    "<4x3xf32, 1x4> -> <2x2xf32, 2x1>",
    "%r = migraphx.reduce_sum %a {axes = [0, 1]} : <4x3xf32, 1x4> -> <1x1xf32, 1x1>",
    "%r = migraphx.reduce_mean %a {axes = [1]} : <4x3xf32, 1x4> -> <4x1xf32, 1x1>",
    "%r = migraphx.reduce_max %a {axes = [-2]} : <4x3xf32, 1x4> -> <1x3xf32, 3x1>",
    "%r = migraphx.reduce_min %a {axes = [0]} : <4x3xf32, 1x4> -> <1x3xf32, 3x1>",
    "%r = migraphx.softmax %a {axis = 1 : i64} : <4x3xf32, 1x4> -> <4x3xf32, 1x4>",
    "%r = migraphx.dot %a, %m : <4x3xf32, 1x4>, <3x5xf32, 5x1> -> <4x5xf32, 5x1>",
    "%r = migraphx.literal(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>) "
    ": <3xf32, 1>",
    "%r = migraphx.literal(dense<5> : tensor<1xi32>) : <1xi32, 0>",
]
ARGS = (
    "%a: !migraphx.shaped<4x3xf32, 1x4>, %b: !migraphx.shaped<4x3xf32, 3x1>, "
    "%c: !migraphx.shaped<4x3xi8, 3x1>, %v: !migraphx.shaped<3xf32, 1>, "
    "%m: !migraphx.shaped<3x5xf32, 5x1>"
)


def _result_type(op_line: str) -> str:
    return op_line.rsplit(": ", 1)[1].rsplit("-> ", 1)[-1].rsplit(" to ", 1)[-1]


@pytest.mark.parametrize("op_line", OPS, ids=lambda line: line.split()[2])
def test_op_round_trips_in_rocmlir_syntax(op_line: str) -> None:
    result = "!migraphx.shaped" + _result_type(op_line)
    text = f"func.func @f({ARGS}) -> {result} {{\n  {op_line}\n  func.return %r : {result}\n}}\n"
    printed = _round_trip(text)
    body = printed.splitlines()[2].strip()
    assert body.replace("%0", "%r") == op_line


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_convolution_1d_2d_3d_with_all_fields(dims: int) -> None:
    spatial_in, spatial_k = [7] * dims, [3] * dims
    out = [(7 + 1 + 2 - 2 * 2 - 1) // 2 + 1] * dims  # pad 1/2, dilation 2, stride 2 -> 3
    x = "x".join(map(str, [1, 4, *spatial_in]))
    w = "x".join(map(str, [6, 2, *spatial_k]))
    o = "x".join(map(str, [1, 6, *out]))
    std = {
        x: "x".join(map(str, _std([1, 4, *spatial_in]))),
        w: "x".join(map(str, _std([6, 2, *spatial_k]))),
        o: "x".join(map(str, _std([1, 6, *out]))),
    }
    attrs = (
        f"{{dilation = [{', '.join(['2'] * dims)}], group = 2 : i64, "
        f"padding = [{', '.join(['1'] * dims + ['2'] * dims)}], padding_mode = 0 : i64, "
        f'perf_config = "v1", stride = [{", ".join(["2"] * dims)}]}}'
    )
    line = (
        f"%r = migraphx.convolution %x, %w {attrs} : <{x}xf32, {std[x]}>, <{w}xf32, {std[w]}> "
        f"-> <{o}xf32, {std[o]}>"
    )
    text = (
        f"func.func @f(%x: !migraphx.shaped<{x}xf32, {std[x]}>, "
        f"%w: !migraphx.shaped<{w}xf32, {std[w]}>) -> !migraphx.shaped<{o}xf32, {std[o]}> {{\n"
        f"  {line}\n  func.return %r : !migraphx.shaped<{o}xf32, {std[o]}>\n}}\n"
    )
    assert _round_trip(text).splitlines()[2].strip().replace("%0", "%r") == line


def _std(lens: list[int]) -> list[int]:
    out, running = [], 1
    for n in reversed(lens):
        out.append(running)
        running *= n
    return out[::-1]


def test_boundary_views_round_trip() -> None:
    text = (
        "func.func @f(%arg0: tensor<12xf32>) -> tensor<12xf32> {\n"
        "  %0 = migraphx.mlir.as.logical.shape %arg0 : tensor<12xf32> to <4x3xf32, 1x4>\n"
        "  %1 = migraphx.mlir.as.underlying.shape %0 : <4x3xf32, 1x4> to tensor<12xf32>\n"
        "  func.return %1 : tensor<12xf32>\n}\n"
    )
    printed = _round_trip(text)
    assert "migraphx.mlir.as.logical.shape %arg0 : tensor<12xf32> to <4x3xf32, 1x4>" in printed
    assert "migraphx.mlir.as.underlying.shape %0 : <4x3xf32, 1x4> to tensor<12xf32>" in printed


def test_prefixed_types_inside_ops_are_accepted_and_printed_stripped() -> None:
    text = (
        "func.func @f(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
        "  %0 = migraphx.exp %a : !migraphx.shaped<2xf32, 1> -> !migraphx.shaped<2xf32, 1>\n"
        "  func.return %0 : !migraphx.shaped<2xf32, 1>\n}\n"
    )
    assert "migraphx.exp %a : <2xf32, 1> -> <2xf32, 1>" in _round_trip(text)


def test_a_shaped_type_written_again_is_the_type_parsed_before() -> None:
    """Parsing a type costs some fifty tokens and a verify; a program writes a few many times."""
    text = (
        "func.func @f(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {\n"
        "  %0 = migraphx.exp %a : <2x3xf32, 3x1> -> <2x3xf32, 3x1>\n"
        "  %1 = migraphx.relu %0 : <2x3xf32, 3x1> -> <2x3xf32, 3x1>\n"
        "  func.return %1 : !migraphx.shaped<2x3xf32, 3x1>\n}\n"
    )
    module = parse_file_text(text, "m.mlir")
    exp, relu = [op for op in module.walk() if op.name.startswith("migraphx.")]
    assert exp.results[0].type is relu.operands[0].type is relu.results[0].type
    assert "%1 = migraphx.relu %0 : <2x3xf32, 3x1> -> <2x3xf32, 3x1>\n" in print_file(module)


@pytest.mark.parametrize(
    ("ty", "message"),
    [
        ("!migraphx.shaped<2x3xf32, 3>", "one stride per dim"),
        ("!migraphx.shaped<2x3xf32, 3x-1>", "strides must be non-negative integers"),
        ("!migraphx.shaped<2x3xi7, 3x1>", "not a known MIGraphX type"),
        ("!migraphx.shaped<0x2xf32, 2x1>", "dim lengths must be >= 1"),
    ],
)
def test_bad_shaped_types_are_located_errors(ty: str, message: str) -> None:
    text = f"func.func @f(\n  %a: {ty}) {{\n  func.return\n}}\n"
    with pytest.raises(ConvcanonError) as info:
        parse_file_text(text, "bad.mlir")
    rendered = info.value.render()
    assert rendered.startswith("bad.mlir:2:"), rendered
    assert message in rendered


@pytest.mark.parametrize(
    ("op_line", "message"),
    [
        (
            "%r = migraphx.add %a, %m : <4x3xf32, 1x4>, <3x5xf32, 5x1> -> <4x3xf32, 3x1>",
            "do not broadcast",
        ),
        ("%r = migraphx.exp %a : <4x3xf32, 1x4> -> <4x4xf32, 4x1>", "disagree with the computed"),
        (
            "%r = migraphx.dot %a, %b : <4x3xf32, 1x4>, <4x3xf32, 3x1> -> <4x3xf32, 3x1>",
            "contracting dims differ",
        ),
        (
            "%r = migraphx.transpose %a {permutation = [0, 0]} : <4x3xf32, 1x4> -> <4x3xf32, 3x1>",
            "not a permutation",
        ),
        (
            "%r = migraphx.reshape %a {dims = [5, 3]} : <4x3xf32, 1x4> -> <5x3xf32, 3x1>",
            "12 elements",
        ),
        (
            "%r = migraphx.convert %a : <4x3xf32, 1x4> to <3x4xf16, 4x1>",
            "disagree with the computed",
        ),
    ],
)
def test_result_shape_verifier_rejects(op_line: str, message: str) -> None:
    result = "!migraphx.shaped" + _result_type(op_line)
    text = f"func.func @f({ARGS}) -> {result} {{\n  {op_line}\n  func.return %r : {result}\n}}\n"
    with pytest.raises(ConvcanonError) as info:
        parse_file_text(text, "bad.mlir")
    rendered = info.value.render()
    assert rendered.startswith("bad.mlir:2:"), rendered
    assert message in rendered


def _as_mlir_prints_generic(text: str) -> str:
    """The module in MLIR's generic form: an op's inherent attributes are properties there,
    `"migraphx.softmax"(%0) <{axis = 1 : i64}> : ...` (what `rocmlir-opt
    -mlir-print-op-generic` writes), where xDSL's generic printer writes `{axis = 1 : i64}`."""
    import io
    import re

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(parse_file_text(text, "in.mlir"))
    return re.sub(
        r'^(\s*(?:%\S+ = )?"migraphx\.[^"]+"\([^)]*\)) (\{.*\}) : \(',
        r"\1 <\2> : (",
        stream.getvalue(),
        flags=re.MULTILINE,
    )


@pytest.mark.parametrize("op_line", OPS, ids=lambda line: line.split()[2])
def test_op_in_mlirs_generic_form_with_properties_parses(op_line: str) -> None:
    """rocMLIR's ops keep their attributes as properties, so its generic form writes them in
    `<{...}>`; each op read that way is the op its custom form is. They were refused:
    "property 'axis' is not defined by the operation 'migraphx.softmax'"."""
    result = "!migraphx.shaped" + _result_type(op_line)
    text = f"func.func @f({ARGS}) -> {result} {{\n  {op_line}\n  func.return %r : {result}\n}}\n"
    generic = _as_mlir_prints_generic(text)
    if "{" in op_line:
        assert "<{" in generic, generic
    assert print_file(parse_file_text(generic, "generic.mlir")) == _round_trip(text)
