"""Limits: enormous or deeply nested inputs fail fast with a located message, before allocating.

Each case here was a real failure before its fix (see docs/fuzzing.md): xDSL expanding a splat
into a Python list, the importer materializing a huge literal, the migraphx/TOSA interpreter
allocating without a limit, RecursionError from xDSL's parser, `-o` overwriting the input.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from _counting import Reached, record_calls  # pyright: ignore[reportMissingImports]
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.parser import attribute_parser
from xdsl.utils.mlir_lexer import MLIRLexer

from convcanon.cli import main, opt_main
from convcanon.migraphx import importer
from convcanon.migraphx import io as migraphx_io
from convcanon.reference.hlo import ops as hlo_ops
from convcanon.verify.plan import Plan

from . import sources
from .conftest import digest, run_cli

HUGE = "99999999999x4"

SPLAT_MIGRAPHX = f"""func.func @main() -> !migraphx.shaped<{HUGE}xf32, 4x1> {{
  %0 = migraphx.literal(dense<1.0> : tensor<{HUGE}xf32>) : <{HUGE}xf32, 4x1>
  func.return %0 : !migraphx.shaped<{HUGE}xf32, 4x1>
}}
"""
SPLAT_TOSA = f"""func.func @main() -> tensor<{HUGE}xf32> {{
  %0 = "tosa.const"() <{{values = dense<1.0> : tensor<{HUGE}xf32>}}> : () -> tensor<{HUGE}xf32>
  func.return %0 : tensor<{HUGE}xf32>
}}
"""
# the splat spelled so that no pattern over the text sees it: its bytes in hex, its type an
# alias, a comment between the literal and its type
SPLAT_TOSA_HEX = SPLAT_TOSA.replace("dense<1.0>", 'dense<"0x0000803F">')
SPLAT_TOSA_ALIAS = f"""!big = tensor<{HUGE}xf32>
func.func @main() -> !big {{
  %0 = "tosa.const"() <{{values = dense<1.0> : !big}}> : () -> !big
  func.return %0 : !big
}}
"""
SPLAT_TOSA_COMMENT = SPLAT_TOSA.replace("dense<1.0> :", "dense<1.0> // a note\n    :")
SPLAT_HLO = f"""func.func @main() -> tensor<{HUGE}xf32> {{
  %0 = stablehlo.constant dense<1.0> : tensor<{HUGE}xf32>
  return %0 : tensor<{HUGE}xf32>
}}
"""
ARG_HLO = f"""func.func @main(%a: tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32> {{
  return %a : tensor<{HUGE}xf32>
}}
"""

SHAPED = f"!migraphx.shaped<{HUGE}xf32, 4x1>"
ARG_MIGRAPHX = f"""func.func @main(%x: {SHAPED}) -> {SHAPED} {{
  func.return %x : {SHAPED}
}}
"""
ARG_TOSA = f"""func.func @main(%a: tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32> {{
  %0 = "tosa.abs"(%a) : (tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32>
  func.return %0 : tensor<{HUGE}xf32>
}}
"""


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# What each limit refuses before: xDSL's expansion of a splat (a Python list of every element,
# or the hex form's bytes repeated), the interpreter's op that would make the value, verify's
# plan (its inputs, then the engines).
XDSL_PARSER = (migraphx_io, "_Parser")
XDSL_SPLAT = (DenseIntOrFPElementsAttr, "from_list")
XDSL_HEX_SPLAT = (attribute_parser, "BytesAttr")
CONSTANT_OP = (hlo_ops.OPS, "constant")
VERIFY_PLAN = (Plan, "__init__")  # wherever a Plan is built
SPLAT_OVER = "dense splat of 399999999996 elements is over the limit"
GRAPH = ["graph", "-o", "g.dot", "--format", "dot"]
VERIFY = ["verify", "SELF"]


@pytest.mark.parametrize(
    ("text", "argv", "fragment", "guarded"),
    [
        (SPLAT_MIGRAPHX, ["run"], SPLAT_OVER, XDSL_SPLAT),
        (SPLAT_TOSA, ["run"], SPLAT_OVER, XDSL_SPLAT),
        (SPLAT_MIGRAPHX, GRAPH, "dense splat of", XDSL_SPLAT),
        (SPLAT_TOSA_HEX, ["run"], SPLAT_OVER, XDSL_HEX_SPLAT),
        (SPLAT_TOSA_ALIAS, ["run"], SPLAT_OVER, XDSL_SPLAT),
        (SPLAT_TOSA_COMMENT, ["run"], SPLAT_OVER, XDSL_SPLAT),
        (SPLAT_HLO, ["run"], "over the memory limit", CONSTANT_OP),
        (SPLAT_HLO, VERIFY, "over the memory limit", VERIFY_PLAN),
        (ARG_HLO, VERIFY, "over the memory limit", VERIFY_PLAN),
        (ARG_MIGRAPHX, VERIFY, "argument 0 (flat buffer float32[399999999996])", VERIFY_PLAN),
        (ARG_TOSA, VERIFY, "needs 1599999999984 bytes, over the memory limit", VERIFY_PLAN),
    ],
)
def test_huge_declared_shape_is_refused_before_the_step_that_would_make_it(
    tmp_path, capsys, monkeypatch, text, argv, fragment, guarded
):
    """The step the limit guards is never reached (a call raises `Reached` instead of running),
    while the same module with a 2x4 shape reaches it: the count is of a step on the path."""

    def command(module: str) -> list[str]:
        path = _write(tmp_path, "huge.mlir", module)
        args = [a if a != "SELF" else str(path) for a in argv]
        args = [args[0], str(path), *args[1:]]
        return [str(tmp_path / a) if a == "g.dot" else a for a in args]

    calls = record_calls(monkeypatch, *guarded, refuse=True)
    with pytest.raises(Reached):
        main(command(text.replace(HUGE, "2x4")))
    calls.clear()
    (tmp_path / "g.dot").unlink(missing_ok=True)
    outcome = run_cli(main, command(text), capsys)
    assert calls == [], outcome
    assert outcome.code == 1 and fragment in outcome.stderr, outcome
    literal = text.find("dense<")  # located at the literal, or at the line that declares it
    lines = [text.count("\n", 0, literal) + 1] if literal >= 0 else [1, 2]
    assert any(f"huge.mlir:{line}:" in outcome.stderr for line in lines), outcome
    assert not (tmp_path / "g.dot").exists()


def test_opt_refuses_huge_migraphx_splat(tmp_path, capsys):
    path = _write(tmp_path, "huge.mlir", SPLAT_MIGRAPHX)
    outcome = run_cli(opt_main, [str(path), "-p", "migraphx-to-tosa"], capsys)
    assert outcome.code == 1
    assert f"{path}:2:25: error: dense splat of 399999999996 elements" in outcome.stderr


def test_importer_refuses_huge_literal_before_building_its_attribute(tmp_path, capsys, monkeypatch):
    program = (
        "x = @param:x -> float_type, {4}, {1}\n"
        "@1 = @literal{1} -> float_type, {99999999, 4}, {0, 0}\n@2 = @return(@1)\n"
    )
    path = _write(tmp_path, "p.txt", program)
    out = tmp_path / "out.mlir"
    built = record_calls(monkeypatch, importer, "_dense", refuse=True)
    small = _write(tmp_path, "small.txt", program.replace("{99999999, 4}", "{2, 4}"))
    with pytest.raises(Reached):  # a literal's dense attribute is built here, holding every element
        main(["import-migraphx", str(small), "-o", str(out)])
    built.clear()
    outcome = run_cli(main, ["import-migraphx", str(path), "-o", str(out)], capsys)
    assert built == [], outcome
    assert outcome.code == 1 and f"{path}:2:" in outcome.stderr
    assert "literal of 399999996 elements is over the limit" in outcome.stderr
    assert not out.exists()


def test_migraphx_interpreter_refuses_over_the_memory_limit(tmp_path, capsys):
    module = _write(tmp_path, "m.mlir", sources.migraphx_text())
    feed = _write(tmp_path, "in.npz", sources.migraphx_inputs())
    ok = run_cli(main, ["run", str(module), "--inputs", str(feed)], capsys)
    assert ok.code == 0, ok
    low = run_cli(
        main, ["run", str(module), "--inputs", str(feed), "--memory-limit", "400"], capsys
    )
    assert low.code == 1 and "over the memory limit of 400" in low.stderr, low
    assert f"{module}:" in low.stderr


def test_tosa_interpreter_refuses_conv_im2col_over_the_limit(tmp_path, capsys):
    module = _write(tmp_path, "t.mlir", sources.tosa_text())
    feed = _write(tmp_path, "in.npz", sources.migraphx_inputs())
    ok = run_cli(main, ["run", str(module), "--inputs", str(feed)], capsys)
    assert ok.code == 0, ok
    low = run_cli(
        main, ["run", str(module), "--inputs", str(feed), "--memory-limit", "600"], capsys
    )
    assert low.code == 1 and "im2col buffer needs" in low.stderr, low


def _deep(depth: int) -> str:
    return (
        "func.func @f() -> tensor<1xf32> {\n  %0 = migraphx.literal(dense<"
        + "[" * depth
        + "1.0"
        + "]" * depth
        + "> : tensor<1xf32>) : <1xf32, 1>\n  func.return %0 : tensor<1xf32>\n}\n"
    )


@pytest.mark.parametrize("argv", [[], ["-p", "migraphx-to-tosa"]])
def test_deeply_nested_migraphx_is_a_located_error(tmp_path, capsys, argv):
    path = _write(tmp_path, "deep.mlir", _deep(100_000))
    outcome = run_cli(opt_main, [str(path), *argv], capsys)
    assert outcome.code == 1
    assert f"{path}:2:" in outcome.stderr and "nests deeper than 256" in outcome.stderr


def test_parse_time_attribute_check_is_a_located_error(tmp_path, capsys):
    """xDSL verifies `2 : i1` while parsing (VerifyException, not ParseError)."""
    text = sources.migraphx_text().replace("group = 2 : i64", "group = 2 : i1")
    path = _write(tmp_path, "m.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr
    assert f"{path}:3:" in outcome.stderr and "out of range for type i1" in outcome.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "IN", "--output", "IN"],
        ["run", "IN", "--inputs", "NPZ", "--output", "NPZ"],
        ["graph", "IN", "--format", "dot", "-o", "IN"],
        ["import-migraphx", "PROG", "-o", "PROG"],
    ],
)
def test_output_equal_to_an_input_is_refused(tmp_path, capsys, argv):
    files = {
        "IN": _write(tmp_path, "m.mlir", sources.migraphx_text()),
        "NPZ": _write(tmp_path, "in.npz", sources.migraphx_inputs()),
        "PROG": _write(tmp_path, "p.txt", sources.PROGRAM.read_bytes()),
    }
    digests = {k: digest(p) for k, p in files.items()}
    outcome = run_cli(main, [str(files[a]) if a in files else a for a in argv], capsys)
    assert outcome.code == 2 and "is the input file" in outcome.stderr, outcome
    assert {k: digest(p) for k, p in files.items()} == digests


def test_large_file_is_parsed_once_up_to_its_first_bad_line(tmp_path, capsys, monkeypatch):
    """200 MB of junk after a valid module: xDSL's parser is handed the text once and lexes as
    many of its tokens as with one junk line (it stops at the first)."""
    lexed = record_calls(monkeypatch, MLIRLexer, "lex")

    def tokens_of(path: Path) -> int:
        return sum(1 for (lexer,) in lexed if lexer.input.name == str(path))

    one_line = _write(tmp_path, "one.mlir", sources.migraphx_text() + "%x = junk\n")
    assert run_cli(opt_main, [str(one_line)], capsys).code == 1
    path = tmp_path / "big.mlir"
    with open(path, "wb") as handle:
        handle.write(sources.migraphx_text().encode())
        chunk = b"%x = junk\n" * (1 << 20)
        for _ in range(20):
            handle.write(chunk)
    handed = record_calls(monkeypatch, *XDSL_PARSER)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert [len(args[1]) for args in handed] == [path.stat().st_size]
    assert tokens_of(path) == tokens_of(one_line) > 0
    assert outcome.code == 1 and f"{path}:" in outcome.stderr, outcome
    np.testing.assert_equal(path.stat().st_size, len(sources.migraphx_text()) + 20 * 10 * (1 << 20))


def test_bad_first_character_is_a_located_error(tmp_path, capsys):
    """xDSL's Parser lexes the first token in its constructor: a NUL there is a ParseError too."""
    path = _write(tmp_path, "m.mlir", b"\x00" + sources.migraphx_text().encode()[1:])
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr
    assert f"{path}:1:1: error: Unexpected character" in outcome.stderr, outcome


def _nested_variable_repeats(items: object, inside: bool = False) -> int:
    """Repeats of variable length inside another repeat of a parsed regex (`(?:[^"]+|x)*`):
    the shape whose near-misses a backtracking matcher tries in exponentially many ways."""
    from re import _constants as sre  # pyright: ignore[reportAttributeAccessIssue]

    count = 0
    for op, arg in items:  # pyright: ignore[reportGeneralTypeIssues]
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = arg
            count += int(inside and low != high)
            count += _nested_variable_repeats(body, inside or low != high)
        elif op is sre.SUBPATTERN:
            count += _nested_variable_repeats(arg[-1], inside)
        elif op is sre.BRANCH:
            count += sum(_nested_variable_repeats(branch, inside) for branch in arg[1])
    return count


def test_unterminated_string_is_lexed_by_a_regex_without_nested_repeats(
    tmp_path, capsys, monkeypatch
):
    """xDSL's string regex `"(?:[^"...]+|...)*"` backtracked exponentially on an unterminated
    string (minutes for one line). The regex the lexer uses nests no repeat of variable length,
    so its match is linear in the line."""
    from re import _parser as sre_parse  # pyright: ignore[reportAttributeAccessIssue]

    regex = MLIRLexer._unescaped_characters_regex  # pyright: ignore[reportAttributeAccessIssue]
    assert _nested_variable_repeats(sre_parse.parse(regex.pattern)) == 0, regex.pattern
    xdsl_0_75 = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'  # the exponential one
    assert _nested_variable_repeats(sre_parse.parse(xdsl_0_75)) == 1
    in_use = SimpleNamespace(match=regex.match)  # the same regex, its matches counted
    monkeypatch.setattr(MLIRLexer, "_unescaped_characters_regex", in_use)
    matched = record_calls(monkeypatch, in_use, "match")
    text = sources.tosa_text().replace('"tosa.reshape"', '"tosa.reshape', 1)
    path = _write(tmp_path, "t.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert matched, "the lexer did not use the regex checked above"
    assert outcome.code == 1 and "before closing string literal" in outcome.stderr, outcome


def test_empty_literal_value_is_a_located_error(tmp_path, capsys):
    """`dense<0.5> : tensor<0x6x3x2xf32>` made the literal verifier index an empty attribute."""
    text = sources.migraphx_text().replace(": tensor<1x6x3x2xf32>)", ": tensor<0x6x3x2xf32>)")
    path = _write(tmp_path, "m.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and f"{path}:4:" in outcome.stderr, outcome
    assert "has no elements" in outcome.stderr


def test_inconsistent_tosa_conv_is_a_located_error(tmp_path, capsys):
    """A TOSA conv whose pad crops more than its input holds reached numpy (ValueError)."""
    text = sources.tosa_text()
    start = text.index("pad = array<i64: ")
    end = text.index(">", start)
    path = _write(tmp_path, "t.mlir", text[:start] + "pad = array<i64: -9, 0, 0, 0" + text[end:])
    feed = _write(tmp_path, "in.npz", sources.migraphx_inputs())
    outcome = run_cli(main, ["run", str(path), "--inputs", str(feed)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}:" in outcome.stderr and "error: " in outcome.stderr


def test_llvm_size_overflow_is_an_error(tmp_path, capsys):
    """A huge spatial dim number in dim_numbers made MLIR's parser raise ValueError (SmallVector
    unable to grow) out of Module.parse; it is refused at its place before the parse now."""
    text = sources.mhlo_text().replace(
        "dim_numbers = [b, 0, 1, f]", "dim_numbers = [b, 9223372036854775807, 1, f]", 1
    )
    path = _write(tmp_path, "h.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    at = text.index("9223372036854775807")
    where = f"{text.count(chr(10), 0, at) + 1}:{at - text.rfind(chr(10), 0, at)}"
    assert f"{path}:{where}: error: conv dimension index 9223372036854775807" in outcome.stderr


def test_program_field_beyond_i64_is_a_located_error(tmp_path, capsys):
    text = sources.PROGRAM.read_text().replace("stride={2, 2}", "stride={99999999999999999999, 2}")
    path = _write(tmp_path, "p.txt", text)
    outcome = run_cli(main, ["import-migraphx", str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}:4:" in outcome.stderr and "does not fit in int64" in outcome.stderr


def test_mlir_verifier_message_is_one_line(tmp_path, capsys):
    """MLIR appends a dump of the failing op to some verifier messages; keep one line."""
    text = sources.STABLEHLO.read_text().replace(
        "attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}",
        "attributes {num_replicas = 1 : i32}",
    )
    path = _write(tmp_path, "m.mlir", text)
    outcome = run_cli(main, ["explain", str(path)], capsys)
    assert outcome.code == 1
    lines = diagnostic_lines(outcome.stderr.strip())
    assert len(lines) == 1 and "dialect-prefixed names" in lines[0], outcome


@pytest.mark.parametrize("number", ["99999999999999999999", "9" * 5000])
def test_integer_overflow_in_tosa_is_a_located_error(tmp_path, capsys, number):
    """An index beyond int64 raised OverflowError out of xDSL's parser (found by the campaign)."""
    text = sources.tosa_text().replace("dense<[1, 6, 6, 4]>", f"dense<[{number}, 6, 6, 4]>", 1)
    path = _write(tmp_path, "t.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}:3:" in outcome.stderr, outcome


# -- every allocation under the memory limit: kernels plan their peak before allocating ---------

MIB = "1MiB"
CROPPING_PAD = """func.func @main() -> tensor<8xf32> {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %c = stablehlo.constant dense<-1.0> : tensor<f32>
  %0 = stablehlo.pad %x, %c, low = [LOW], high = [HIGH], interior = [0]
    : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
DILATED_CONV = """func.func @main() -> tensor<1x1x8xf32> {
  %x = stablehlo.constant dense<[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]]> : tensor<1x1x8xf32>
  %w = stablehlo.constant dense<2.0> : tensor<1x1x1xf32>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
    window = {stride = [DIL], lhs_dilate = [DIL]}
    {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
    : (tensor<1x1x8xf32>, tensor<1x1x1xf32>) -> tensor<1x1x8xf32>
  return %0 : tensor<1x1x8xf32>
}
"""
WIDE_REDUCE_WINDOW = """func.func @main() -> tensor<2049xf32> {
  %x = stablehlo.constant dense<1.0> : tensor<4096xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %z) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2048>} : (tensor<4096xf32>, tensor<f32>) -> tensor<2049xf32>
  return %0 : tensor<2049xf32>
}
"""
PADDED_MIGRAPHX_CONV = """func.func @main(%x: !migraphx.shaped<1x1x4x4xf32, 16x16x4x1>,
    %w: !migraphx.shaped<1x1x3x3xf32, 9x9x3x1>) -> !migraphx.shaped<1x1x2x2xf32, 4x4x2x1> {
  %0 = migraphx.convolution %x, %w {dilation = [1, 1], group = 1 : i64,
    padding = [5000, 5000, 5000, 5000], padding_mode = 0 : i64, stride = [10001, 10001]}
    : <1x1x4x4xf32, 16x16x4x1>, <1x1x3x3xf32, 9x9x3x1> -> <1x1x2x2xf32, 4x4x2x1>
  func.return %0 : !migraphx.shaped<1x1x2x2xf32, 4x4x2x1>
}
"""


def _run_result(tmp_path: Path, capsys, text: str, *argv: str) -> tuple[object, np.ndarray | None]:
    module = _write(tmp_path, "m.mlir", text)
    out = tmp_path / "out.npz"
    outcome = run_cli(main, ["run", str(module), "--output", str(out), *argv], capsys)
    result = np.load(out)["result0"] if outcome.code == 0 else None
    return outcome, result


def _traced(text: str) -> tuple[np.ndarray, int]:
    """Run @main in-process under a 1 MiB limit; its result and tracemalloc's peak in bytes."""
    import tracemalloc

    from convcanon.reference.run import run_hlo_text

    run_hlo_text(CROPPING_PAD.replace("LOW", "0").replace("HIGH", "0"), "warm-up.mlir")
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        (report,) = run_hlo_text(text, "m.mlir", memory_limit=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return report.results[0], peak


@pytest.mark.parametrize(("low", "high"), [(100000000, -100000000), (-100000000, 100000000)])
def test_cropping_pad_runs_in_its_result_size(tmp_path, capsys, low, high):
    """pad low=+1e8 high=-1e8 of 8 elements built a 400 MB intermediate; it needs 32 bytes."""
    text = CROPPING_PAD.replace("LOW", str(low)).replace("HIGH", str(high))
    result, peak = _traced(text)
    np.testing.assert_array_equal(result, np.full(8, -1.0, np.float32))
    assert peak < 1 << 20, peak
    outcome, result = _run_result(tmp_path, capsys, text, "--memory-limit", MIB)
    assert outcome.code == 0, outcome
    np.testing.assert_array_equal(result, np.full(8, -1.0, np.float32))


@pytest.mark.parametrize(
    ("low", "high", "interior", "expected"),
    [
        (-3, 3, 0, [4, 5, 6, 7, 8, -1, -1, -1]),
        (2, -2, 0, [-1, -1, 1, 2, 3, 4, 5, 6]),
        (-5, -4, 1, [-1, 4, -1, 5, -1, 6]),
        (-15, 0, 1, []),
    ],
)
def test_partly_cropping_pad_keeps_the_right_elements(low, high, interior, expected):
    text = (
        CROPPING_PAD.replace("LOW", str(low))
        .replace("HIGH", str(high))
        .replace("interior = [0]", f"interior = [{interior}]")
        .replace("-> tensor<8xf32>", f"-> tensor<{len(expected)}xf32>")
        .replace("tensor<8xf32> {", f"tensor<{len(expected)}xf32> {{")
        .replace("return %0 : tensor<8xf32>", f"return %0 : tensor<{len(expected)}xf32>")
    )
    result, _ = _traced(text)
    np.testing.assert_array_equal(result, np.array(expected, np.float32))


def test_lhs_dilated_conv_refuses_its_dilated_input_over_the_limit(tmp_path, capsys):
    """lhs dilation 1e6 of 8 elements: a 28 MB dilated input behind an 8-element result."""
    text = DILATED_CONV.replace("DIL", "1000000")
    outcome, _ = _run_result(tmp_path, capsys, text, "--memory-limit", MIB)
    assert outcome.code == 1, outcome
    assert "m.mlir:4:8: error: out of memory: stablehlo.convolution: convolution needs" in (
        outcome.stderr
    ), outcome
    assert "over the memory limit of 1048576" in outcome.stderr
    small = DILATED_CONV.replace("DIL", "1000")  # 28 kB: runs, every output reads one input
    outcome, result = _run_result(tmp_path, capsys, small, "--memory-limit", MIB)
    assert outcome.code == 0, outcome
    np.testing.assert_array_equal(result.ravel(), 2 * np.arange(1, 9, dtype=np.float32))


def test_wide_reduce_window_needs_no_window_copy(tmp_path, capsys):
    """2049 windows of 2048 elements: the window copy was 16 MB; the fold needs 25 kB."""
    result, peak = _traced(WIDE_REDUCE_WINDOW)
    np.testing.assert_array_equal(result, np.full(2049, 2048.0, np.float32))
    assert peak < 1 << 20, peak
    outcome, result = _run_result(tmp_path, capsys, WIDE_REDUCE_WINDOW, "--memory-limit", MIB)
    assert outcome.code == 0, outcome
    np.testing.assert_array_equal(result, np.full(2049, 2048.0, np.float32))


@pytest.mark.parametrize("dialect", ["migraphx", "tosa"])
def test_padded_conv_refuses_its_padded_input_over_the_limit(tmp_path, capsys, dialect):
    """padding 5000 and stride 10001: a 2x2 result, im2col of 36 floats, a 400 MB padded input."""
    text = PADDED_MIGRAPHX_CONV
    if dialect == "tosa":
        from convcanon.driver import transform_text

        text = transform_text(text, "m.mlir", "migraphx-to-tosa")
    module = _write(tmp_path, "m.mlir", text)
    feed = _write(
        tmp_path, "in.npz", _npz(arg0=np.ones(16, np.float32), arg1=np.ones(9, np.float32))
    )
    outcome = run_cli(
        main, ["run", str(module), "--inputs", str(feed), "--memory-limit", MIB], capsys
    )
    assert outcome.code == 1, outcome
    assert "error: out of memory: " in outcome.stderr and "over the memory limit" in outcome.stderr
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "conv" in row and "=" in row)
    assert f"{module}:{line}:" in outcome.stderr, outcome


def _npz(**arrays: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # pyright: ignore[reportArgumentType]
    return buffer.getvalue()
