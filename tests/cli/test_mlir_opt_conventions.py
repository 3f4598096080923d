"""mlir-opt habits: passes as flags, `-pass-pipeline=` with one or two dashes, the printer flags,
`--version`, and `--help` that describes every option with its default."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from cli_support import CNN, MIGRAPHX_EXP, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from convcanon.command_arguments import main_parser
from convcanon.opt_arguments import opt_parser

GENERAL = "stablehlo-canonicalize-conv{gate=general}"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def by_pipeline() -> str:
    from convcanon.driver import transform_text

    return transform_text(CNN.read_text(), str(CNN), GENERAL) + "\n"  # as mlir-opt ends it


@pytest.mark.parametrize(
    "spelling",
    [
        ["--stablehlo-canonicalize-conv=gate=general"],
        ["--stablehlo-canonicalize-conv={gate=general}"],
        ["-stablehlo-canonicalize-conv=gate=general"],
        [f"--pass-pipeline={GENERAL}"],
        [f"-pass-pipeline={GENERAL}"],
        ["-pass-pipeline", GENERAL],
        [f"--pass-pipeline=builtin.module({GENERAL})"],
        ["-p", GENERAL],
        # MLIR's pass option parser drops a value's quotes or braces; `any(...)` anchors
        # anywhere, and our passes run on the module under any anchor
        ["-p", 'stablehlo-canonicalize-conv{gate="general"}'],
        ["-p", "stablehlo-canonicalize-conv{gate='general'}"],
        ["-p", "stablehlo-canonicalize-conv{gate={general} engine='generic'}"],
        ["-p", f"any({GENERAL})"],
        ["-p", f"builtin.module(any({GENERAL}))"],
        ["-p", f"builtin.module(func.func({GENERAL}))"],
    ],
)
def test_every_spelling_runs_the_same_pipeline(
    opt: Runner, by_pipeline: str, spelling: list[str]
) -> None:
    result = opt(CNN, *spelling)
    assert result.code == 0, result.err
    assert result.out == by_pipeline


def test_pass_flags_form_a_pipeline_in_order(opt: Runner) -> None:
    result = opt(
        CNN,
        "--stablehlo-canonicalize-conv=gate=general negative-padding=slice",
        "--stablehlo-canonicalize-conv",
        "--stats",
    )
    assert result.code == 0, result.err
    first, second = result.err.split("stablehlo-canonicalize-conv (pass 2 of the pipeline)")
    assert "stablehlo-canonicalize-conv (pass 1 of the pipeline)" in first
    assert "5 rewritten-pad" in first and "convs-seen" in second
    assert "rewritten-pad" not in second  # the second run finds only canonical convs


def test_flags_and_a_pipeline_together_are_bad_usage(opt: Runner) -> None:
    result = opt(CNN, "--stablehlo-canonicalize-conv", "-p", GENERAL)
    assert result.code == 2 and "not both" in result.err


def test_an_unknown_flag_is_bad_usage_not_an_abbreviation(opt: Runner) -> None:
    result = opt(CNN, "--stablehlo-canon")
    assert result.code == 2 and result.out == ""


def test_migraphx_to_tosa_as_a_flag(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "exp.mlir"
    source.write_text(MIGRAPHX_EXP)
    flag, pipeline = opt(source, "--migraphx-to-tosa"), opt(source, "-p", "migraphx-to-tosa")
    assert flag.code == 0, flag.err
    assert "tosa.exp" in flag.out and flag.out == pipeline.out


def test_print_debuginfo_prints_the_input_locations(opt: Runner) -> None:
    result = opt(CNN, "--mlir-print-debuginfo")
    assert result.code == 0, result.err
    assert f'loc("{CNN}":3:10)' in result.out and 'loc("-"' not in result.out
    plain = opt(CNN)
    assert "loc(" not in plain.out


def test_print_debuginfo_names_the_file_where_only_some_ops_have_locations(
    opt: Runner, tmp_path: Path
) -> None:
    """The ops without a location of their own get the file's line and column, as iree-opt
    prints them (the parser names its buffer "-")."""
    source = tmp_path / "part.mlir"
    source.write_text(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %0 = stablehlo.add %a, %a : tensor<2xf32> loc("model.py":7:3)\n'
        "  %1 = stablehlo.multiply %0, %0 : tensor<2xf32>\n"
        "  return %1 : tensor<2xf32>\n}\n"
    )
    result = opt(source, "--mlir-print-debuginfo")
    assert result.code == 0, result.err
    assert 'loc("-"' not in result.out and f'loc("{source}":3:' in result.out
    iree_opt = Path(sys.executable).parent / "iree-opt"  # iree-base-compiler, a test extra
    theirs = subprocess.run(
        [iree_opt, source, "--mlir-print-debuginfo"], capture_output=True, text=True, timeout=120
    )
    assert theirs.returncode == 0, theirs.stderr
    locs = [line for line in result.out.splitlines() if line.startswith("#loc")]
    assert locs == [line for line in theirs.stdout.splitlines() if line.startswith("#loc")]


def test_print_op_generic(opt: Runner) -> None:
    result = opt(CNN, "-p", GENERAL, "--mlir-print-op-generic")
    assert result.code == 0, result.err
    assert '"stablehlo.convolution"(' in result.out and '"stablehlo.pad"(' in result.out
    assert "stablehlo.convolution(%" not in result.out


def test_printer_flags_on_migraphx(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "exp.mlir"
    source.write_text(MIGRAPHX_EXP)
    assert '"migraphx.exp"(' in opt(source, "--mlir-print-op-generic").out
    assert "loc(" in opt(source, "--mlir-print-debuginfo").out


@pytest.mark.parametrize("tool", ["convcanon-opt", "convcanon"])
def test_version_is_the_package_version(tool: str) -> None:
    result = subprocess.run(
        [str(BIN / tool), "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{tool} {version('convcanon')}\n"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = main_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"convcanon-opt": opt_parser(), **sub.choices}


@pytest.mark.parametrize("name", ["convcanon-opt", "explain", "run", "verify", "graph",
                                  "import-migraphx"])  # fmt: skip
def test_help_describes_every_option_with_its_default(name: str) -> None:
    parser = _subcommands()[name]
    help_text = parser.format_help()  # what --help prints (some help is written only then)
    formatter = parser._get_formatter()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not action.option_strings:
            continue
        if action.default is argparse.SUPPRESS:  # --version and the pass flags: no value
            assert action.help, action.option_strings
            continue
        text = formatter._get_help_string(action) or ""
        assert len(text.split("(default")[0].strip()) > 5, (name, action.option_strings)
        assert "default" in text, (name, action.option_strings, text)
    assert parser.description, name
    assert "default" in help_text


def test_help_lists_the_pass_flags(opt: Runner) -> None:
    with pytest.raises(SystemExit) as exit_:
        opt("--help")
    assert exit_.value.code == 0


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(
        st.tuples(st.sampled_from(["cse", "canonicalize"]), st.booleans()), min_size=1, max_size=3
    ),
    anchored=st.booleans(),
)
@example(items=[("cse", True), ("canonicalize", True)], anchored=True)
@example(items=[("canonicalize", True), ("cse", False), ("cse", True)], anchored=False)
def test_nested_anchors_run_as_iree_opt_runs_them(
    opt: Runner, items: list[tuple[str, bool]], anchored: bool
) -> None:
    """`func.func(cse),func.func(canonicalize)` and the like, with or without the
    `builtin.module(...)` anchor: the module iree-opt prints (it was refused as unbalanced when
    the first item opened a `func.func(` the last one closed)."""
    body = ",".join(f"func.func({name})" if nested else name for name, nested in items)
    ours = opt(CNN, "-p", f"builtin.module({body})" if anchored else body)
    assert ours.code == 0, ours.err
    theirs = iree_opt(CNN, f"--pass-pipeline=builtin.module({body})")
    assert ours.out.rstrip() == theirs.stdout.rstrip()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["cse", "symbol-dce", "canonicalize"]),
            st.sampled_from(["", "func.func(", "builtin.module(", "any("]),
        ),
        min_size=1,
        max_size=3,
    ),
)
@example(items=[("symbol-dce", "func.func(")])
@example(items=[("symbol-dce", "builtin.module(")])
def test_a_nest_runs_where_it_says_as_iree_opt_runs_it(
    opt: Runner, items: list[tuple[str, str]]
) -> None:
    """A nested pipeline runs on the ops it names, also when it is the whole pipeline: symbol-dce
    in `func.func(...)` fails on a function as in iree-opt (it ran on the module when a
    `func.func(...)` around the whole pipeline was peeled), and in a nested `builtin.module(...)`
    it runs on no op (it ran on the top module)."""
    body = ",".join(f"{anchor}{name})" if anchor else name for name, anchor in items)
    # unanchored, ours is the module's pipeline; one `any(...)` or `builtin.module(...)` around
    # all of it is the module's anchor, as iree-opt reads it
    whole_anchor = len(items) == 1 and items[0][1] in ("any(", "builtin.module(")
    for pipeline in (body, f"builtin.module({body})"):
        as_iree = pipeline if whole_anchor or pipeline != body else f"builtin.module({body})"
        theirs = iree_opt(CNN, f"--pass-pipeline={as_iree}", check=False)
        ours = opt(CNN, "-p", pipeline)
        assert ours.code == (1 if theirs.returncode else 0), (ours.err, theirs.stderr)
        if theirs.returncode:
            error = theirs.stderr.splitlines()[0].partition(": error: ")[2]
            assert f"error: {error}" in ours.err, (ours.err, theirs.stderr)
        else:
            assert ours.out.rstrip() == theirs.stdout.rstrip()
