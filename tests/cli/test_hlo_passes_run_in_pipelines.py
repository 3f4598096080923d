"""StableHLO's, CHLO's and MHLO's own passes, which jaxlib registers on request, run in a
convcanon-opt pipeline beside ours, as stablehlo-opt runs them: by name in `-p`, as flags, a pass
restricted to functions nested on each (mlir-opt's implicit nesting), each named in dumps and
timings by its class, as jaxlib's own pass manager names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import CNN, Runner, iree_opt  # pyright: ignore[reportMissingImports]

from convcanon.cli import main
from convcanon.hlo.context import ir, make_context
from convcanon.hlo.upstream import _stderr_captured, pass_manager
from convcanon.pipeline import HLO_PASSES, MLIR_PASSES

CHLO = (
    "func.func @main(%a: tensor<4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {\n"
    "  %0 = chlo.erf %a : tensor<4xf32> -> tensor<4xf32>\n"
    "  %1 = chlo.broadcast_add %0, %b : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>\n"
    "  return %1 : tensor<2x4xf32>\n}\n"
)


@pytest.mark.parametrize(
    "spelling",
    [
        ["--chlo-legalize-to-stablehlo"],
        ["-p", "chlo-legalize-to-stablehlo"],
        ["-p", "builtin.module(chlo-legalize-to-stablehlo)"],
        ["-p", "func.func(chlo-legalize-to-stablehlo)"],
    ],
)
def test_chlo_legalization_prints_what_iree_opt_prints(
    opt: Runner, tmp_path: Path, spelling: list[str]
) -> None:
    """The pass restricted to functions runs on each, however it is spelled: the module
    iree-opt prints with the same pass (its flag: iree-opt nests it implicitly)."""
    source = tmp_path / "chlo.mlir"
    source.write_text(CHLO)
    ours = opt(source, *spelling)
    theirs = iree_opt(source, "--chlo-legalize-to-stablehlo")
    assert ours.code == 0, ours.err
    assert ours.out == theirs.stdout
    assert "chlo." not in ours.out


def test_the_mhlo_route_computes_what_the_original_does_on_xla(opt: Runner, tmp_path: Path) -> None:
    """StableHLO to MHLO, the MHLO conv pass, and back: every conv canonical, and XLA computes
    the same results from the rewritten module as from the original."""
    pipeline = "stablehlo-legalize-to-hlo,canonicalize-conv{gate=general},hlo-legalize-to-stablehlo"
    out = tmp_path / "canon.mlir"
    result = opt(CNN, "-p", pipeline, "-o", out)
    assert result.code == 0, result.err
    text = out.read_text()
    assert "= mhlo." not in text and "stablehlo.pad" in text
    convs = [line for line in text.splitlines() if "stablehlo.convolution" in line]
    assert len(convs) >= 6
    for conv in convs:  # the window written out by the legalization, all of it unit
        windows = re.findall(r"(stride|pad|lhs_dilate) = \[([\d, \[\]]+)\]", conv)
        assert all(
            set(re.findall(r"\d+", v)) <= ({"0"} if k == "pad" else {"1"}) for k, v in windows
        )
    assert main(["verify", str(CNN), str(out), "--engine", "xla", "--trials", "2"]) == 0


def test_flags_and_the_list_name_the_hlo_passes(opt: Runner, tmp_path: Path) -> None:
    listing = opt("--list-passes").out
    for name in HLO_PASSES:
        assert f"\n  --{name} " in listing
    assert "    --allow-xla-features" in listing  # an option, as jaxlib prints it
    source = tmp_path / "chlo.mlir"
    source.write_text(CHLO)
    flags = opt(source, "--chlo-legalize-to-stablehlo", "--stablehlo-legalize-to-hlo")
    assert flags.code == 0, flags.err
    assert "mhlo.add" in flags.out and "chlo." not in flags.out


def test_a_pass_on_functions_is_dumped_and_its_pipeline_printed_as_iree_opt_does(
    opt: Runner, tmp_path: Path
) -> None:
    source = tmp_path / "chlo.mlir"
    source.write_text(CHLO)
    flags = ["--chlo-legalize-to-stablehlo", "--cse", "--dump-pass-pipeline"]
    ours, theirs = opt(source, *flags), iree_opt(source, *flags)
    assert ours.err == theirs.stderr
    header = "// -----// IR Dump After ChloLegalizeToStablehloPass: chlo-legalize-to-stablehlo"
    dumped = opt(source, "--chlo-legalize-to-stablehlo", "--mlir-print-ir-after-all").err
    assert dumped.startswith(header)
    assert iree_opt(
        source, "--chlo-legalize-to-stablehlo", "--mlir-print-ir-after-all"
    ).stderr.startswith(header)


@pytest.mark.parametrize("name", sorted({**MLIR_PASSES, **HLO_PASSES}))
def test_each_listed_pass_has_the_class_name_jaxlib_times_it_by(name: str) -> None:
    """The name dumps and timings give a pass is the one jaxlib's own timing report gives it."""
    context = make_context()
    module = ir.Module.parse("func.func @f() {\n  return\n}\n", context)
    manager = pass_manager(name, context)
    manager.enable_timing()
    with _stderr_captured() as report:
        try:
            with context:
                manager.run(module.operation)
        except ir.MLIRError:
            pass  # a pass that needs options (vhlo-to-version) is still timed
        del manager  # the report is printed when the pass manager goes
    names = {row.strip() for row in re.findall(r"\)\s{2}(.+)$", report[0], re.M)}
    assert {**MLIR_PASSES, **HLO_PASSES}[name][0] in names, report[0]


@pytest.mark.parametrize(
    "item, words",
    [
        ("chlo-legalize-to-stablehlo{x=1}", "<Pass-Options-Parser>: no such option x"),
        (
            "stablehlo-legalize-deprecated-ops{fail-on-unused=maybe}",
            "for the --fail-on-unused option: 'maybe' is invalid value for boolean argument! "
            "Try 0 or 1",
        ),
    ],
)
@pytest.mark.parametrize("as_flag", [False, True], ids=["-p", "flag"])
def test_a_bad_option_of_a_pass_on_functions_is_said_once_without_the_nesting_advice(
    opt: Runner, tmp_path: Path, item: str, words: str, as_flag: bool
) -> None:
    """What iree-opt says (the option's error, then `failed to add`), once: not MLIR's advice
    to nest the pass (convcanon-opt nests it, as mlir-opt does), nor the option's error twice."""
    source = tmp_path / "chlo.mlir"
    source.write_text(CHLO)
    name, _, options = item.partition("{")
    spelling = [f"--{name}={options[:-1]}"] if as_flag else ["-p", item]
    result = opt(source, *spelling)
    assert (result.code, result.err) == (
        2,
        f"error: pass '{item}': {words} failed to add `{name}` with options `{options[:-1]}`\n",
    )


XLA_FIRST = """\
import sys
import jax.numpy as jnp

jnp.zeros(1).block_until_ready()  # XLA parses its flags: LLVM's program name becomes "xla"
from convcanon.cli import opt_main

sys.exit(opt_main(sys.argv[1:]))
"""


def test_a_bad_option_is_said_alike_after_xla_ran_in_the_process(tmp_path: Path) -> None:
    """LLVM starts an option's complaint with the program's name: empty, or "xla" once XLA has
    run in the process (in CI, after another test's `verify`). The message is the same."""
    import subprocess
    import sys

    pytest.importorskip("jax")
    source = tmp_path / "chlo.mlir"
    source.write_text(CHLO)
    item = "stablehlo-legalize-deprecated-ops{fail-on-unused=maybe}"
    done = subprocess.run(
        [sys.executable, "-c", XLA_FIRST, str(source), "-p", item], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: pass '{item}': for the --fail-on-unused option"), (
        done.stderr
    )
