"""mlir-opt's diagnostic flags: `--mlir-print-op-on-diagnostic[=bool]` (an error at an op
carries the op as the note `see current operation: ...`), `--mlir-diagnostic-verbosity-level`
(which warnings and remarks print) and `--mlir-disable-diagnostic-notes`. For the same bad input
and flags, convcanon-opt's stderr is iree-opt's (a real mlir-opt), byte for byte; convcanon-opt
leaves the op out unless asked, as iree-opt does under `=false`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import CNN, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HEAD = "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {"
# Bad function bodies: errors MLIR's verifier reports at an op (one that prints on a line, one
# with a region, which prints over lines) and parser errors with a note at another place.
BODIES = {
    "verifier, one line": [
        '  %0 = "stablehlo.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>',
        '  %1 = "stablehlo.slice"(%0) <{start_indices = array<i64: 0>, limit_indices ='
        " array<i64: 2>, strides = array<i64: 1>}> : (tensor<3xf32>) -> tensor<2xf32>",
        "  return %1 : tensor<2xf32>",
    ],
    "parser, a note elsewhere": [
        '  %0 = "stablehlo.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>',
        "  return %0 : tensor<2xf32>",
    ],
    "parser, redefinition": [
        "  %0 = stablehlo.add %a, %a : tensor<2xf32>",
        "  %0 = stablehlo.add %a, %a : tensor<2xf32>",
        "  return %0 : tensor<2xf32>",
    ],
}
GOOD = "func.func @g() {\n  return\n}\n"
# A function whose verifier fails: the op it dumps has a region, printed over lines.
REGION = (
    '"func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "h"}> ({\n'
    "^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):\n"
    '  "func.return"(%a) : (tensor<2xf32>) -> ()\n'
    "}) : () -> ()\n"
)
TEXTS = {
    **{name: "\n".join([HEAD, *body, "}"]) + "\n" for name, body in BODIES.items()},
    "verifier, a region": REGION,
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.sampled_from(sorted(TEXTS)),
    print_op=st.sampled_from([None, "", "=true", "=1", "=false", "=0"]),
    verbosity=st.sampled_from([None, "errors", "warnings", "remarks"]),
    no_notes=st.sampled_from(["", "=true", "=1", "=false", "=0"]),
    chunk=st.integers(0, 1),
)
def test_stderr_is_iree_opts_under_the_diagnostic_flags(
    opt: Runner,
    tmp_path: Path,
    body: str,
    print_op: str | None,
    verbosity: str | None,
    no_notes: str,
    chunk: int,
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("// -----\n".join([GOOD] * chunk + [TEXTS[body]]))
    flags = ["--split-input-file"] if chunk else []
    flags += [f"--mlir-diagnostic-verbosity-level={verbosity}"] if verbosity else []
    flags += [f"--mlir-disable-diagnostic-notes{no_notes}"]
    ours = opt(
        path, *flags, *([f"--mlir-print-op-on-diagnostic{print_op}"] * (print_op is not None))
    )
    # iree-opt prints the op unless told not to; convcanon-opt only when told to
    asked = print_op in ("", "=true", "=1")
    theirs = iree_opt(path, *flags, f"--mlir-print-op-on-diagnostic={asked}".lower(), check=False)
    assert (ours.code, ours.err) == (theirs.returncode, theirs.stderr)
    assert ("see current operation" in ours.err) == (asked and body.startswith("verifier"))


def test_an_op_dump_spanning_lines_starts_on_a_line_of_its_own(opt: Runner, tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(REGION)
    err = opt(path, "--mlir-print-op-on-diagnostic").err
    assert f"{path}:1:1: note: see current operation: \n" in err
    assert err.endswith('\n  "func.return"(%arg0) : (tensor<2xf32>) -> ()\n}) : () -> ()\n')


_F8_CONV = (
    "func.func @f(%x: tensor<1x8x8x4xf8E8M0FNU>, %w: tensor<3x3x4x4xf8E8M0FNU>)"
    " -> tensor<1x8x8x4xf8E8M0FNU> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
    " window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 :"
    " i64} : (tensor<1x8x8x4xf8E8M0FNU>, tensor<3x3x4x4xf8E8M0FNU>) -> tensor<1x8x8x4xf8E8M0FNU>\n"
    "  return %0 : tensor<1x8x8x4xf8E8M0FNU>\n}\n"
)


def test_the_pass_s_own_error_at_a_conv_carries_the_conv_as_mlir_prints_it(
    opt: Runner, tmp_path: Path
) -> None:
    """The conv pass's errors at a conv (here: a padded element type without a zero) carry the
    conv as MLIR would dump it into a diagnostic: iree-opt's generic print of that op."""
    path = tmp_path / "f8.mlir"
    path.write_text(_F8_CONV)
    pipeline = ["-p", "stablehlo-canonicalize-conv"]
    plain = opt(path, *pipeline)
    assert plain.code == 1 and "see current operation" not in plain.err
    ours = opt(path, *pipeline, "--mlir-print-op-on-diagnostic")
    generic = iree_opt(
        path, "--mlir-print-op-generic", "--mlir-print-local-scope"
    ).stdout.splitlines()
    (conv,) = [line.strip() for line in generic if "stablehlo.convolution" in line]
    conv = re.sub(r" loc\(.*\)$", "", conv)
    assert ours.code == 1
    assert ours.err.splitlines()[3] == f"{path}:2:8: note: see current operation: {conv}"
    assert "EUET001" in ours.err.splitlines()[0]


def test_verbosity_drops_the_pass_s_remarks_but_not_a_near_miss(
    opt: Runner, tmp_path: Path
) -> None:
    """Remarks (`verbose=true`) print at `remarks` only; a split marker's near-miss warning is
    printed whatever the level, as iree-opt prints it (mlir-opt's source manager writes it
    itself, past the diagnostics filter)."""
    pipeline = ["-p", "stablehlo-canonicalize-conv{verbose=true}", "-o", tmp_path / "out.mlir"]
    counts = {
        level: opt(CNN, *pipeline, f"--mlir-diagnostic-verbosity-level={level}").err.count(
            ": remark: "
        )
        for level in ("errors", "warnings", "remarks")
    }
    assert counts["errors"] == counts["warnings"] == 0 < counts["remarks"]
    assert opt(CNN, *pipeline).err.count(": remark: ") == counts["remarks"]
    near = tmp_path / "near.mlir"
    near.write_text("module {}\n// ---\nmodule {}\n")
    flags = ["--split-input-file", "--mlir-diagnostic-verbosity-level=errors"]
    ours = opt(near, *flags, "-o", tmp_path / "out.mlir")
    theirs = iree_opt(near, *flags, "-o", tmp_path / "theirs.mlir")
    assert ours.err == theirs.stderr
    assert "warning: near miss" in ours.err


@pytest.mark.parametrize(
    "flag",
    [
        "--mlir-print-op-on-diagnostic=yes",
        "--mlir-print-op-on-diagnostic=TRUE",
        "--mlir-print-op-on-diagnostic=",
        "--mlir-diagnostic-verbosity-level=all",
        "--mlir-disable-diagnostic-notes=yes",
    ],
)
def test_a_bad_value_is_a_usage_error_as_iree_opt_refuses_it(opt: Runner, flag: str) -> None:
    result = opt(CNN, flag)
    assert result.code == 2 and result.out == ""
    assert flag.split("=")[0] in result.err
    assert iree_opt(CNN, flag, check=False).returncode != 0


TWO_BAD_FUNCTIONS = (
    "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    '  %0 = "stablehlo.abs"(%a) : (tensor<4xf32>) -> tensor<5xf32>\n'
    "  return %0 : tensor<5xf32>\n}\n"
    "func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  // expected-error @+1 {{all non-scalar operands/results must have the same shape}}\n"
    '  %0 = "stablehlo.abs"(%a) : (tensor<4xf32>) -> tensor<5xf32>\n'
    "  return %0 : tensor<5xf32>\n}\n"
)


@pytest.mark.parametrize(
    "flags",
    [[], ["--verify-diagnostics"], ["--mlir-print-op-on-diagnostic"], ["--mlir-disable-threading"]],
)
def test_every_op_the_verifier_refuses_is_reported_as_iree_opt_reports_it(
    opt: Runner, tmp_path: Path, flags: list[str]
) -> None:
    """MLIR's verifier refuses each bad op of a module, in its own function: each is an error,
    not only the first (under --verify-diagnostics, the second's expectation was 'not produced')."""
    source = tmp_path / "two.mlir"
    expecting = "--verify-diagnostics" in flags  # iree-opt checks the comments without it too
    source.write_text(TWO_BAD_FUNCTIONS if expecting else _without_expectations(TWO_BAD_FUNCTIONS))
    ours = opt(source, *flags)
    print_op = "true" if "--mlir-print-op-on-diagnostic" in flags else "false"
    theirs = iree_opt(source, *flags, f"--mlir-print-op-on-diagnostic={print_op}", check=False)
    assert (ours.code, ours.err) == (theirs.returncode, theirs.stderr)
    errors = [line for line in ours.err.splitlines() if ": error: " in line]
    assert len(errors) == (1 if expecting else 2)


def _without_expectations(text: str) -> str:
    return "".join(line for line in text.splitlines(True) if "expected-" not in line)
