"""Limits: enormous or deeply nested inputs fail fast with a located message, before allocating.

Each case here was a real failure before its fix (see docs/fuzzing.md): xDSL expanding a splat
into a Python list, the importer materializing a huge literal, the migraphx/TOSA interpreter
allocating without a limit, RecursionError from xDSL's parser, `-o` overwriting the input.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from convcanon.cli import main, opt_main

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


@pytest.mark.parametrize(
    ("text", "argv", "fragment"),
    [
        (SPLAT_MIGRAPHX, ["run"], "dense splat of 399999999996 elements is over the limit"),
        (SPLAT_TOSA, ["run"], "dense splat of 399999999996 elements is over the limit"),
        (SPLAT_MIGRAPHX, ["graph", "-o", "g.dot", "--format", "dot"], "dense splat of"),
        (SPLAT_HLO, ["run"], "over the memory limit"),
        (SPLAT_HLO, ["verify", "SELF"], "over the memory limit"),
        (ARG_HLO, ["verify", "SELF"], "over the memory limit"),
        (ARG_MIGRAPHX, ["verify", "SELF"], "argument 0 (flat buffer float32[399999999996])"),
        (ARG_TOSA, ["verify", "SELF"], "needs 1599999999984 bytes, over the memory limit"),
    ],
)
def test_huge_declared_shape_fails_fast(tmp_path, capsys, text, argv, fragment):
    path = _write(tmp_path, "huge.mlir", text)
    args = [a if a != "SELF" else str(path) for a in argv]
    args = [args[0], str(path), *args[1:]]
    args = [str(tmp_path / a) if a == "g.dot" else a for a in args]
    start = time.monotonic()
    outcome = run_cli(main, args, capsys)
    assert time.monotonic() - start < 20
    assert outcome.code == 1 and fragment in outcome.stderr, outcome
    assert "huge.mlir:2:" in outcome.stderr or "huge.mlir:1:" in outcome.stderr, outcome
    assert not (tmp_path / "g.dot").exists()


def test_opt_refuses_huge_migraphx_splat(tmp_path, capsys):
    path = _write(tmp_path, "huge.mlir", SPLAT_MIGRAPHX)
    outcome = run_cli(opt_main, [str(path), "-p", "migraphx-to-tosa"], capsys)
    assert outcome.code == 1
    assert f"{path}:2:25: error: dense splat of 399999999996 elements" in outcome.stderr


def test_importer_refuses_huge_literal(tmp_path, capsys):
    program = (
        "x = @param:x -> float_type, {4}, {1}\n"
        "@1 = @literal{1} -> float_type, {99999999, 4}, {0, 0}\n@2 = @return(@1)\n"
    )
    path = _write(tmp_path, "p.txt", program)
    out = tmp_path / "out.mlir"
    start = time.monotonic()
    outcome = run_cli(main, ["import-migraphx", str(path), "-o", str(out)], capsys)
    assert time.monotonic() - start < 20
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


def test_large_file_fails_fast(tmp_path, capsys):
    """200 MB of junk after a valid module: one pass over the text, then a located error."""
    path = tmp_path / "big.mlir"
    with open(path, "wb") as handle:
        handle.write(sources.migraphx_text().encode())
        chunk = b"%x = junk\n" * (1 << 20)
        for _ in range(20):
            handle.write(chunk)
    start = time.monotonic()
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert time.monotonic() - start < 60
    assert outcome.code == 1 and f"{path}:" in outcome.stderr, outcome
    np.testing.assert_equal(path.stat().st_size, len(sources.migraphx_text()) + 20 * 10 * (1 << 20))


def test_bad_first_character_is_a_located_error(tmp_path, capsys):
    """xDSL's Parser lexes the first token in its constructor: a NUL there is a ParseError too."""
    path = _write(tmp_path, "m.mlir", b"\x00" + sources.migraphx_text().encode()[1:])
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr
    assert f"{path}:1:1: error: Unexpected character" in outcome.stderr, outcome


def test_unterminated_string_fails_fast(tmp_path, capsys):
    """xDSL's string regex backtracked exponentially on an unterminated string (minutes)."""
    text = sources.tosa_text().replace('"tosa.reshape"', '"tosa.reshape', 1)
    path = _write(tmp_path, "t.mlir", text)
    start = time.monotonic()
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert time.monotonic() - start < 10
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
    unable to grow) out of Module.parse."""
    text = sources.mhlo_text().replace(
        "dim_numbers = [b, 0, 1, f]", "dim_numbers = [b, 9223372036854775807, 1, f]", 1
    )
    path = _write(tmp_path, "h.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}: error: cannot parse: SmallVector unable to grow" in outcome.stderr, outcome


def test_program_field_beyond_i64_is_a_located_error(tmp_path, capsys):
    text = sources.PROGRAM.read_text().replace("stride={2, 2}", "stride={99999999999999999999, 2}")
    path = _write(tmp_path, "p.txt", text)
    outcome = run_cli(main, ["import-migraphx", str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}:4:" in outcome.stderr and "field `stride`: Integer value" in outcome.stderr


def test_mlir_verifier_message_is_one_line(tmp_path, capsys):
    """MLIR appends a dump of the failing op to some verifier messages; keep one line."""
    text = sources.STABLEHLO.read_text().replace(
        "attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}",
        "attributes {num_replicas = 1 : i32}",
    )
    path = _write(tmp_path, "m.mlir", text)
    outcome = run_cli(main, ["explain", str(path)], capsys)
    assert outcome.code == 1
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "dialect-prefixed names" in lines[0], outcome


@pytest.mark.parametrize("number", ["99999999999999999999", "9" * 5000])
def test_integer_overflow_in_tosa_is_a_located_error(tmp_path, capsys, number):
    """An index beyond int64 raised OverflowError out of xDSL's parser (found by the campaign)."""
    text = sources.tosa_text().replace("dense<[1, 6, 6, 4]>", f"dense<[{number}, 6, 6, 4]>", 1)
    path = _write(tmp_path, "t.mlir", text)
    outcome = run_cli(opt_main, [str(path)], capsys)
    assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome
    assert f"{path}:3:" in outcome.stderr, outcome
