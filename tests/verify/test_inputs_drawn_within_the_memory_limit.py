"""Random inputs are bounded together, not one argument at a time: `verify` and `run` checked
each argument against the memory limit and then drew them all, each in 64 bits before its cast,
so ten arguments just under the limit took over ten times it (and verify adds an f64 copy of all
of them). Now what the draw holds together is checked before anything is drawn (proven by a
draw that raises if reached); and `run` says so instead of "missing input(s)"."""

from __future__ import annotations

from pathlib import Path

import pytest
from _counting import Reached, record_calls  # pyright: ignore[reportMissingImports]
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

import convcanon.verify.inputs
from convcanon.reference import hlo_interp, migraphx_interp

from .cli_calls import cli

LIMIT = 4_000_000  # bytes; each argument below is 2,000,000 in f32
THREE_ARGUMENTS = """func.func @main(%a: tensor<500000xf32>, %b: tensor<500000xf32>,
                  %c: tensor<500000xf32>) -> tensor<500000xf32> {
  %0 = stablehlo.add %a, %b : tensor<500000xf32>
  %1 = stablehlo.add %0, %c : tensor<500000xf32>
  return %1 : tensor<500000xf32>
}
"""
T = "!migraphx.shaped<500000xf32, 1>"
MIGRAPHX_THREE_ARGUMENTS = f"""func.func @main(%a: {T}, %b: {T}, %c: {T}) -> {T} {{
  %0 = migraphx.add %a, %b : <500000xf32, 1>, <500000xf32, 1> -> <500000xf32, 1>
  %1 = migraphx.add %0, %c : <500000xf32, 1>, <500000xf32, 1> -> <500000xf32, 1>
  return %1 : {T}
}}
"""
REFUSAL = (
    "@main's 3 argument(s) take 18000000 bytes drawn at random (each in its type and in 64"
    " bits), over the memory limit of 4000000"
)


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hlo_interp, "DEFAULT_MEMORY_LIMIT", LIMIT)
    monkeypatch.setattr(migraphx_interp, "DEFAULT_MEMORY_LIMIT", LIMIT)
    record_calls(monkeypatch, convcanon.verify.inputs, "random_array", refuse=True)


@pytest.mark.parametrize("program", [THREE_ARGUMENTS, MIGRAPHX_THREE_ARGUMENTS], ids=["hlo", "mgx"])
def test_arguments_under_the_limit_one_by_one_are_refused_together(
    program: str, limited: None, tmp_path: Path
):
    module = tmp_path / "m.mlir"
    module.write_text(program)
    try:
        code, out, err = cli("verify", str(module), str(module))
    except Reached as reached:
        pytest.fail(f"inputs were drawn: {reached}")
    assert code == 1 and out == "", (out, err)
    assert without_source_lines(err).endswith(f"error: {REFUSAL}\n"), err


def test_run_names_the_limit_an_argument_is_over(tmp_path: Path):
    """`run` without --inputs said "missing input(s) arg0" of an argument too large to draw."""
    module = tmp_path / "m.mlir"
    module.write_text(
        "func.func @main(%a: tensor<100000x100000x100000xf32>) -> tensor<100000x100000x100000xf32>"
        " {\n  return %a : tensor<100000x100000x100000xf32>\n}\n"
    )
    code, out, err = cli("run", str(module))
    assert code == 1 and out == "", (out, err)
    assert without_source_lines(err) == (
        f"{module}:1:1: error: @main argument 0 (f32[100000, 100000, 100000]) needs"
        " 4000000000000000 bytes, over the memory limit of 4294967296\n"
    )


@pytest.mark.parametrize("program", [THREE_ARGUMENTS, MIGRAPHX_THREE_ARGUMENTS], ids=["hlo", "mgx"])
def test_run_draws_within_its_own_memory_limit(
    program: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """`run` draws within its `--memory-limit` (the draw was checked against the default 4 GiB,
    so a 4 MB limit let 18 MB be drawn before the interpreter refused the run)."""
    record_calls(monkeypatch, convcanon.verify.inputs, "random_array", refuse=True)
    module = tmp_path / "m.mlir"
    module.write_text(program)
    try:
        code, out, err = cli("run", str(module), "--memory-limit", "4000000")
    except Reached as reached:
        pytest.fail(f"inputs were drawn: {reached}")
    assert code == 1 and out == "", (out, err)
    assert without_source_lines(err).endswith(f"error: {REFUSAL}\n"), err
