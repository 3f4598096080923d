"""Declarations and odd entries get a diagnostic from `run` and `verify`, never an IndexError;
a negative `--seed` is a usage error (exit 2)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from convcanon.cli import main

DECLARATION = "func.func private @main(tensor<2xf32>) -> tensor<2xf32>\n"
CALLS_DECLARATION = """func.func private @ext(tensor<2xf32>) -> tensor<2xf32>
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @ext(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""
MIGRAPHX_DECLARATION = (
    "func.func private @main(!migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
)


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.mark.parametrize(
    ("text", "command", "message"),
    [
        (DECLARATION, ["run"], "m.mlir:1:1: error: @main is a declaration: it has no body to run"),
        (DECLARATION, ["verify"], "m.mlir:1:1: error: @main is a declaration: it has no body"),
        (
            CALLS_DECLARATION,
            ["verify"],
            "m.mlir:3:8: error: call to @ext, a declaration without a body",
        ),
        (MIGRAPHX_DECLARATION, ["verify"], "m.mlir:1:1: error: @main is a declaration"),
        (MIGRAPHX_DECLARATION, ["verify", "--engine", "iree"], "error: @main is a declaration"),
    ],
)
def test_declaration_is_a_diagnostic(
    text: str, command: list[str], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(text)
    files = [str(path)] if command[0] == "run" else [str(path), str(path)]
    code, out = _cli(command[0], *files, *command[1:])
    assert code == 1, out
    assert message in out and "Traceback" not in out, out


def test_unknown_entry_names_the_functions(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(CALLS_DECLARATION)
    code, out = _cli("verify", str(path), str(path), "--entry", "nope")
    assert code == 1
    assert "error: no entry function @nope (functions: ext, main)" in out, out


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_bad_seed_is_a_usage_error(seed: str, tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(CALLS_DECLARATION)
    code, out = _cli("verify", str(path), str(path), "--seed", seed)
    assert code == 2
    assert f"argument --seed: must be an integer >= 0, not '{seed}'" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "func.func @main() {\n  return\n}\n",
        "func.func @main(%x: tensor<0xf32>) -> tensor<0xf32> {\n  return %x : tensor<0xf32>\n}\n",
    ],
)
def test_no_result_elements_is_nothing_compared(text: str, tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(text)
    code, out = _cli("verify", str(path), str(path))
    assert code == 1
    assert "error: nothing to compare: the results of @main have no elements" in out, out
    assert not out.startswith("ok"), out


def test_a_migraphx_function_without_results_is_nothing_compared_on_iree(tmp_path: Path) -> None:
    """IREE's call of a function with no results returns None, which was read as one result:
    'mismatch: 0 results before, 1 after' where the reference engine says nothing to compare.
    rocMLIR's dialect tests write such functions (`func.func @f(...) { migraphx.where ...;
    func.return }`)."""
    path = tmp_path / "void.mlir"
    path.write_text(
        "func.func @main(%a: !migraphx.shaped<2xf32, 1>) {\n"
        "  %0 = migraphx.relu %a : <2xf32, 1> -> <2xf32, 1>\n"
        "  return\n"
        "}\n"
    )
    code, out = _cli("verify", str(path), "-p", "migraphx-to-tosa", "--engine", "iree")
    assert code == 1
    assert "error: nothing to compare: the results of @main have no elements" in out, out


COMPLEX = """func.func @main(%x: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %c = stablehlo.constant dense<[(1.0, 2.0), (3.0, -1.0)]> : tensor<2xcomplex<f32>>
  %y = stablehlo.multiply %x, %c : tensor<2xcomplex<f32>>
  return %y : tensor<2xcomplex<f32>>
}
"""


def test_complex_literals_are_widened_and_judged(tmp_path: Path) -> None:
    """Complex literals the MLIR bindings cannot downcast still get an f64 copy."""
    path, wrong = tmp_path / "m.mlir", tmp_path / "wrong.mlir"
    path.write_text(COMPLEX)
    wrong.write_text(COMPLEX.replace("(3.0, -1.0)", "(3.0, 1.0)"))
    code, out = _cli("verify", str(path), str(path))
    assert code == 0 and "judged against BEFORE evaluated in f64 (reference)" in out, out
    code, out = _cli("verify", str(path), str(wrong))
    assert code == 1 and "output 0 differs at index [1]" in out, out


TWO_FUNCTIONS = """func.func private @conv(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %x : tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_private_entry_that_calls_main_runs_on_xla(tmp_path: Path) -> None:
    """XLA runs @main only: the entry becomes @main, the old @main moves aside, calls follow."""
    pytest.importorskip("jax")
    path, wrong = tmp_path / "m.mlir", tmp_path / "wrong.mlir"
    path.write_text(TWO_FUNCTIONS)
    wrong.write_text(TWO_FUNCTIONS.replace("stablehlo.add %0, %x", "stablehlo.subtract %0, %x"))
    code, out = _cli("verify", str(path), str(path), "--engine", "xla", "--entry", "conv")
    assert code == 0 and "ok: 3 trial(s) on engine xla" in out, out
    code, out = _cli("verify", str(path), str(wrong), "--engine", "xla", "--entry", "conv")
    assert code == 1 and "output 0 differs at index" in out, out


NO_MAIN = """func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
"""


@pytest.mark.parametrize("entry", [["--entry", "first"], ["--entry", "second"]], ids=str)
def test_an_entry_without_a_visibility_attribute_runs_on_xla(
    entry: list[str], tmp_path: Path
) -> None:
    """No @main, and functions public by default (no `sym_visibility`, as the StableHLO test
    suite writes them): the entry named is renamed to @main for XLA without a traceback (with
    none named, verify asks which: test_verify_entry_is_never_guessed)."""
    pytest.importorskip("jax")
    path, wrong = tmp_path / "m.mlir", tmp_path / "wrong.mlir"
    path.write_text(NO_MAIN)
    wrong.write_text(NO_MAIN.replace("multiply %x, %x", "add %x, %x"))
    code, out = _cli("verify", str(path), str(path), "--engine", "xla", *entry)
    assert code == 0 and "ok: 3 trial(s) on engine xla" in out, out
    if entry[1] == "first":
        code, out = _cli("verify", str(path), str(wrong), "--engine", "xla", *entry)
        assert code == 1 and "output 0 differs at index" in out, out
