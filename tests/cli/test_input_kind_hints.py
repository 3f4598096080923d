"""A file of the wrong kind is told what it is and where it belongs: not MLIR at all, a MIGraphX
printed program (`import-migraphx`), the other half's module (its pass); and pass options written
with commas are told they are separated by spaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from cli_support import CNN, MIGRAPHX_EXP, REPO, Runner  # pyright: ignore[reportMissingImports]

from convcanon.ir_kind import with_input_kind_hint

PROGRAM = REPO / "examples" / "seed003_nhwc_conv.migraphx.txt"


def test_a_markdown_file_is_told_it_is_not_mlir(opt: Runner) -> None:
    """The README mentions migraphx. and stablehlo. ops: that does not make it a module."""
    result = opt(REPO / "README.md", "-p", "stablehlo-canonicalize-conv")
    assert result.code == 1 and result.out == ""
    assert "this file is not MLIR: it starts with '# " in result.err
    assert "migraphx" not in result.err and "TOSA" not in result.err


@pytest.mark.parametrize("pipeline", ["", "migraphx-to-tosa", "stablehlo-canonicalize-conv"])
def test_a_migraphx_program_points_at_import_migraphx(opt: Runner, pipeline: str) -> None:
    result = opt(PROGRAM, *(["-p", pipeline] if pipeline else []))
    assert result.code == 1 and result.out == ""
    assert without_source_lines(result.err).count("\n") == 1
    assert "MIGraphX printed program, not MLIR: `convcanon import-migraphx FILE`" in result.err


def test_explain_on_a_migraphx_program_points_at_import_migraphx(cc: Runner) -> None:
    result = cc("explain", PROGRAM)
    assert result.code == 1 and "convcanon import-migraphx" in result.err


def test_a_migraphx_module_given_to_graph_with_an_hlo_pass_names_its_pass(
    cc: Runner, tmp_path: Path
) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(MIGRAPHX_EXP)
    result = cc("graph", module, "-p", "stablehlo-canonicalize-conv", "-o", tmp_path / "g.dot")
    assert result.code == 1
    assert "this module holds migraphx/TOSA ops: migraphx-to-tosa takes them" in result.err
    assert "allowUnregisteredDialects" not in result.err
    assert not (tmp_path / "g.dot").exists()


def test_an_unknown_dialect_is_told_our_flag_not_mlirs_api(opt: Runner, tmp_path: Path) -> None:
    module = tmp_path / "u.mlir"
    module.write_text('func.func @f() {\n  "foo.bar"() : () -> ()\n  return\n}\n')
    result = opt(module)
    assert result.code == 1
    assert without_source_lines(result.err).endswith(
        "(--allow-unregistered-dialect lets ops of unknown dialects through)\n"
    )


def test_comma_separated_options_are_told_spaces(opt: Runner) -> None:
    result = opt(CNN, "-p", "stablehlo-canonicalize-conv{gate=general,engine=iree-cpu}")
    assert result.code == 2 and result.out == ""
    assert "options are separated by spaces, not commas" in result.err
    assert "'stablehlo-canonicalize-conv{gate=general engine=iree-cpu}'" in result.err


def test_a_comma_inside_a_value_is_the_value_s_own_error(opt: Runner) -> None:
    """Only `,key=` reads as a second option: a bad value keeps the option's own message."""
    result = opt(CNN, "-p", "stablehlo-canonicalize-conv{gate=general,}")
    assert result.code == 2 and "option 'gate' must be one of" in result.err


def _mlir_files() -> list[Path]:
    roots = [REPO / "examples", REPO / "tests", REPO / "bench"]
    return sorted(p for root in roots for p in root.rglob("*.mlir"))


@pytest.mark.parametrize("path", _mlir_files(), ids=lambda p: p.name)
def test_no_mlir_file_of_ours_is_called_not_mlir(path: Path) -> None:
    """The hint reads only the first statement: every module we ship starts like MLIR."""
    hinted = with_input_kind_hint("error", path.read_text(), "hlo")
    assert "not MLIR" not in hinted


def test_blank_lines_cost_the_hint_linear_time() -> None:
    """The start patterns are matched on refused input: thousands of blank lines stay cheap."""
    text = "\n \n" * 20_000 + "# notes"
    assert "not MLIR" in with_input_kind_hint("error", text, "hlo")
