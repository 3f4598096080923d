"""`convcanon import-migraphx`: MIGraphX printed programs become migraphx MLIR, or a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shared import SHARED, requires_shared  # pyright: ignore[reportMissingImports]
from xdsl.dialects import func

from convcanon.cli import main
from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx import importer
from convcanon.migraphx.boundary_ops import LiteralOp
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.shaped_type import ShapedType
from convcanon.xdsl_io import parse_file_text, print_file

HERE = Path(__file__).parent
SEED_FIXED = HERE / "fixtures" / "seed003_nhwc_conv.txt"
SEED = SHARED / "seeds" / "003_a19ad531297014fe.txt"


def _import(text: str) -> str:
    printed = print_file(import_program(text, "prog.txt"))
    assert print_file(parse_file_text(printed, "printed.mlir")) == printed  # valid, stable
    return printed


def test_seed_program_with_input_first_imports_nhwc() -> None:
    module = import_program(SEED_FIXED.read_text(), str(SEED_FIXED))
    (function,) = module.ops
    assert isinstance(function, func.FuncOp)
    inputs = function.function_type.inputs.data
    assert [str(t) for t in inputs] == [
        "!migraphx.shaped<1x16x4x4xf32, 256x1x64x16>",
        "!migraphx.shaped<2x16x3x3xf32, 144x1x48x16>",
    ]
    assert [str(t) for t in function.function_type.outputs.data] == [
        "!migraphx.shaped<1x2x2x2xf32, 8x1x4x2>"
    ]
    names = [op.name for op in function.body.ops]
    assert names == ["migraphx.convolution", "migraphx.exp", "func.return"]


@requires_shared
def test_seed_text_as_filed_names_its_dangling_reference(tmp_path: Path) -> None:
    lines = [ln for ln in SEED.read_text().splitlines() if ln.startswith("mlir_main:")]
    program = tmp_path / "seed.txt"
    program.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConvcanonError) as info:
        import_program(program.read_text(), "seed.txt")
    rendered = info.value.render()
    assert rendered.startswith("seed.txt:3:")
    assert "`mlir_main:pointwise0:@y1` names no earlier instruction" in rendered
    assert "did you mean `mlir_main:pointwise0:y1.0`?" in rendered


P = "x = @param:x -> float_type, {4, 3}, {3, 1}\n"
CONV_1D = (
    "x = @param:x -> float_type, {1, 1, 4}, {4, 4, 1}\n"
    "w = @param:w -> float_type, {1, 1, 1}, {1, 1, 1}\n"
)
PROGRAMS = {
    "add": P + "@1 = add(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "sub": P + "@1 = sub(x,x) -> float_type, {4, 3}, {1, 4}\n@2 = @return(@1)\n",
    "mul": P + "@1 = mul(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "div": P + "@1 = div(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "max": P + "@1 = max(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "min": P + "@1 = min(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "pow": P + "@1 = pow(x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    **{
        name: P + f"@1 = {name}(x) -> float_type, {{4, 3}}, {{3, 1}}\n@2 = @return(@1)\n"
        for name in (
            "relu exp log tanh sigmoid neg abs floor ceil sqrt rsqrt recip erf contiguous".split()
        )
    },
    "clip": P + "@1 = clip(x,x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "where": P
    + "c = @param:c -> bool_type, {4, 3}, {3, 1}\n"
    + "@1 = where(c,x,x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "convert": P
    + "@1 = convert[target_type=1](x) -> half_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "transpose": P
    + "@1 = transpose[permutation={1, 0}](x) -> float_type, {3, 4}, {1, 3}\n@2 = @return(@1)\n",
    "reshape": P + "@1 = reshape[dims={2, -1}](x) -> float_type, {2, 6}, {6, 1}\n"
    "@2 = @return(@1)\n",
    "broadcast": "v = @param:v -> float_type, {3}, {1}\n"
    "@1 = broadcast[axis=1,out_lens={4, 3}](v) -> float_type, {4, 3}, {0, 1}\n"
    "@2 = contiguous(@1) -> float_type, {4, 3}, {3, 1}\n@3 = @return(@2)\n",
    "multibroadcast": "v = @param:v -> float_type, {3}, {1}\n"
    "@1 = multibroadcast[out_lens={4, 3},out_dyn_dims={}](v) -> float_type, {4, 3}, {0, 1}\n"
    "@2 = contiguous(@1) -> float_type, {4, 3}, {3, 1}\n@3 = @return(@2)\n",
    "slice": P + "@1 = slice[axes={0, 1},starts={1, 0},ends={3, -1}](x) -> float_type, {2, 2}, "
    "{3, 1}\n@2 = @return(@1)\n",
    "reduce_sum": P + "@1 = reduce_sum[axes={0, 1}](x) -> float_type, {1, 1}, {1, 1}\n"
    "@2 = @return(@1)\n",
    "reduce_mean": P + "@1 = reduce_mean[axes={1}](x) -> float_type, {4, 1}, {1, 1}\n"
    "@2 = @return(@1)\n",
    "reduce_max": P + "@1 = reduce_max[axes={0}](x) -> float_type, {1, 3}, {3, 1}\n"
    "@2 = @return(@1)\n",
    "reduce_min": P + "@1 = reduce_min[axes={-1}](x) -> float_type, {4, 1}, {1, 1}\n"
    "@2 = @return(@1)\n",
    "softmax": P + "@1 = softmax[axis=1](x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    "dot": P + "w = @param:w -> float_type, {3, 5}, {5, 1}\n"
    "@1 = dot(x,w) -> float_type, {4, 5}, {5, 1}\n@2 = @return(@1)\n",
    "literal": P + "@1 = @literal{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} -> float_type, {4, 3}, "
    "{1, 4}\n@2 = add(x,@1) -> float_type, {4, 3}, {3, 1}\n@3 = @return(@2)\n",
    "convolution": 'module: "main"\n'
    "main:x = @param:x -> half_type, {1, 4, 5, 5}, {100, 1, 20, 4}, target_id=0\n"
    "main:w = @param:w -> half_type, {6, 2, 3, 3}, {18, 9, 3, 1}, target_id=0\n"
    "main:@2 = convolution[padding={1, 1, 0, 0},stride={2, 2},dilation={1, 1},group=2,"
    "padding_mode=0,use_dynamic_same_auto_pad=0](main:x,main:w) -> half_type, {1, 6, 2, 2}, "
    "{24, 1, 12, 6}, target_id=0\nmain:@3 = @return(main:@2), target_id=0\n",
}


@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_every_op_imports(op: str) -> None:
    printed = _import(PROGRAMS[op])
    assert f"migraphx.{op}" in printed


def test_literal_in_memory_order_becomes_its_logical_value() -> None:
    module = import_program(PROGRAMS["literal"], "prog.txt")
    literal = next(op for op in module.walk() if isinstance(op, LiteralOp))
    # strides {1, 4}: the buffer 1..12 is column-major, so row 0 is 1, 5, 9
    assert list(literal.value.get_values())[:3] == [1.0, 5.0, 9.0]
    assert isinstance(literal.output.type, ShapedType)
    assert literal.output.type.stride_values == (1, 4)


def test_params_in_order_of_appearance_and_fp8_types() -> None:
    text = (
        "b = @param:b -> fp8e4m3fnuz_type, {2}, {1}\n"
        "a = @param:a -> fp8e5m2_type, {2}, {1}\n"
        "@2 = @return(a, b)\n"
    )
    (function,) = import_program(text, "p.txt").ops
    assert isinstance(function, func.FuncOp)
    assert [str(t) for t in function.function_type.inputs.data] == [
        "!migraphx.shaped<2xf8E4M3FNUZ, 1>",
        "!migraphx.shaped<2xf8E5M2, 1>",
    ]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (P + "@1 = add(x,x -> float_type, {4, 3}, {3, 1}\n", ":2:", "expected `,` or `)`"),
        (P + "@1 = add(x,x) -> float_type, {4, 3}\n", ":2:", "expected `,` between lens"),
        (P + "@1 add(x,x)\n", ":2:4", "expected `=` after the instruction name"),
        (P + "@1 = add(x,x) -> floaty_type, {4, 3}, {3, 1}\n", ":2:", "unknown MIGraphX type"),
        (P + "@1 = frobnicate(x) -> float_type, {4, 3}, {3, 1}\n", ":2:6", "`frobnicate`"),
        (P + "@1 = exp(x) -> float_type, {4, 4}, {4, 1}\n", ":2:6", "disagree with the computed"),
        (P + "@1 = dot(x,x) -> float_type, {4, 4}, {4, 1}\n", ":2:6", "contracting dims"),
        (P + "@1 = exp(x) -> float_type, {4, 3}, {3, 1}, target=0\n", ":2:", "target_id"),
        (P + "@1 = softmax[axes=1](x) -> float_type, {4, 3}, {3, 1}\n", ":2:", "unknown field"),
        (
            P + "@1 = softmax[axis=1,axis=0](x) -> float_type, {4, 3}, {3, 1}\n",
            ":2:21",
            "field `axis` is given twice",  # MIGraphX prints each once: the second would win
        ),
        (P, "prog.txt", "no @return"),
        (
            P + P.replace("{4, 3}, {3, 1}", "{2}, {1}"),
            ":2:1",
            "`x` is defined twice (first on line 1)",
        ),
        (P + "@1 = exp(x) -> float_type, {4, 3}, {3, 1}\n" * 2, ":3:1", "`@1` is defined twice"),
        (
            P + "@1 = exp(x) -> float_type, {4, 3}, {3, 1}\n"
            " @1 = softmax[axis=1](@1) -> float_type, {4, 3}, {3, 1}\n",
            ":3:2",
            "`@1` is defined twice (first on line 2)",
        ),
        (
            'module: "main"\n' + P + "@1 = @return(x)\n" + 'module: "if_sub"\n' + P,
            ":4:1",
            "a second module (after line 1): one function per program",
        ),
        *(
            (
                CONV_1D.replace("float", element)
                + f"@2 = {op}[padding={pads},stride={{1}},dilation={{1}},group=1,"
                f"padding_mode=0](x,w) -> {result}, {{1, 1, 2}}, {{2, 2, 1}}\n",
                ":3:6",
                "convolution padding must be >= 0",
            )
            for op, element, result in [
                ("convolution", "float", "float_type"),
                ("convolution_backwards", "float", "float_type"),
                ("quant_convolution", "int8", "int32_type"),
            ]
            for pads in ["{-1}", "{-1, 0}"]  # one symmetric value per dim, or begin and end
        ),
    ],
)
def test_bad_programs_name_line_and_expectation(text: str, where: str, message: str) -> None:
    with pytest.raises(ConvcanonError) as info:
        import_program(text, "prog.txt")
    rendered = info.value.render()
    assert where in rendered and message in rendered, rendered


@pytest.mark.parametrize("separator", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\r"])
def test_lines_are_numbered_by_newlines_alone(separator: str) -> None:
    """Python's `splitlines` also ends a line at a form feed, U+2028 and the like: trailing one
    on the first line numbered every later line one too far."""
    text = P.replace("\n", separator + "\n", 1) + "@1 = exp(x) -> float_type, {4, 4}, {4, 1}\n"
    with pytest.raises(ConvcanonError) as info:
        import_program(text, "prog.txt")
    assert info.value.render().startswith("prog.txt:2:6: error: "), info.value.render()


def test_cli_writes_output_and_writes_nothing_on_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.mlir"
    assert main(["import-migraphx", str(SEED_FIXED), "-o", str(out), "--name", "conv"]) == 0
    assert "func.func @conv(" in out.read_text()
    bad = tmp_path / "bad.txt"
    bad.write_text(P + "@1 = frobnicate(x) -> float_type, {4, 3}, {3, 1}\n")
    out2 = tmp_path / "out2.mlir"
    assert main(["import-migraphx", str(bad), "-o", str(out2)]) == 1
    assert not out2.exists()
    assert f"{bad}:2:6: error: unknown MIGraphX op `frobnicate`" in capsys.readouterr().err


FAST_PATH_PROGRAMS = [
    SEED_FIXED.read_text(),
    P + "@1 = exp(x) -> float_type, {4, 3}, {3, 1}, target_id=0\n@2 = @return(@1)\n",
    P + "@1 = add( x , x ) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    P + "@1 = greater(x,x) -> bool_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",
    P + "@1 = transpose[permutation={1,0}](x) -> float_type, {3, 4}, {1, 3}\n@2 = @return(@1)\n",
]


@pytest.mark.parametrize("program", FAST_PATH_PROGRAMS)
def test_single_regex_line_import_equals_the_general_scanner(
    program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = print_file(import_program(program, "prog.txt"))
    monkeypatch.setattr(importer, "_plain_instruction", lambda *_: False)
    assert print_file(import_program(program, "prog.txt")) == fast


BAD_PLAIN_LINES = [
    P + "@1 = exp(y) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",  # unknown operand
    P + "@1 = exp(x) -> float_type, {4, 4}, {3, 1}\n@2 = @return(@1)\n",  # wrong lens
    P + "@1 = exp(x) -> float_type, {4, 0}, {3, 1}\n@2 = @return(@1)\n",  # a zero length
    P + "@1 = exp(x) -> float_type, {4, 3}, {3}\n@2 = @return(@1)\n",  # stride count
    P + "@1 = add(x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",  # operand count
    P + "@1 = exq(x) -> float_type, {4, 3}, {3, 1}\n@2 = @return(@1)\n",  # unknown op
]


@pytest.mark.parametrize("program", BAD_PLAIN_LINES)
def test_single_regex_line_import_reports_what_the_general_scanner_reports(
    program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConvcanonError) as fast:
        import_program(program, "prog.txt")
    monkeypatch.setattr(importer, "_plain_instruction", lambda *_: False)
    with pytest.raises(ConvcanonError) as general:
        import_program(program, "prog.txt")
    assert fast.value.render() == general.value.render()
