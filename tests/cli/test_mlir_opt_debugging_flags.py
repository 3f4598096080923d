"""The mlir-opt flags a debugging session or a lit RUN line adds, checked against iree-opt (a real
mlir-opt) where it can run the same pipeline: `--mlir-print-ir-after-change`,
`--mlir-print-ir-after-failure`, `--mlir-print-ir-module-scope`, `--mlir-print-local-scope` and
`--mlir-disable-threading`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from cli_support import MIGRAPHX_EXP, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.hlo import context

# Two adds cse merges, in a named module: the first cse changes it, a second one does not.
PROGRAM = (
    "module @m {\n"
    "  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
    "    %1 = stablehlo.add %a, %a : tensor<4xf32>\n"
    "    %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n"
    "    return %2 : tensor<4xf32>\n  }\n}\n"
)
# A conv whose padding wraps int64: our pass fails at it, before rewriting anything.
WRAPPING = (
    "module @w {\n"
    "  func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32> {\n"
    "    %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
    "[b, 0, 1, f], window = {pad = [[9223372036854775807, 9223372036854775807], [0, 0]]}"
    " {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x1xf32>,"
    " tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32>\n"
    "    return %0 : tensor<1x4x6x1xf32>\n  }\n}\n"
)
CONV = "stablehlo-canonicalize-conv{gate=general}"


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (path := tmp_path / "p.mlir").write_text(PROGRAM)
    return path


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    passes=st.lists(st.sampled_from(["cse", "canonicalize", "symbol-dce"]), min_size=1, max_size=3),
    when=st.sampled_from(
        [
            ["--mlir-print-ir-after-all"],
            ["--mlir-print-ir-after=cse"],
            ["--mlir-print-ir-before-all", "--mlir-print-ir-after-all"],
        ]
    ),
    change=st.booleans(),
    failure=st.booleans(),
    scope=st.booleans(),
)
def test_ir_dumps_are_iree_opt_s_under_every_printing_flag(
    opt: Runner,
    program: Path,
    passes: list[str],
    when: list[str],
    change: bool,
    failure: bool,
    scope: bool,
) -> None:
    """Which dumps print, their headers and the module in each: iree-opt's, byte for byte
    (iree-opt asks for --mlir-disable-threading with the module scope)."""
    flags = [*when]
    flags += ["--mlir-print-ir-after-change"] if change else []
    flags += ["--mlir-print-ir-after-failure"] if failure else []
    flags += ["--mlir-print-ir-module-scope", "--mlir-disable-threading"] if scope else []
    pipeline = ",".join(passes)
    ours = opt(program, "-p", pipeline, *flags, "-o", "/dev/null")
    assert ours.code == 0, ours.err
    theirs = iree_opt(program, f"--pass-pipeline=builtin.module({pipeline})", *flags)
    assert ours.err == theirs.stderr


def test_a_second_cse_changes_nothing_and_is_not_dumped(opt: Runner, program: Path) -> None:
    flags = ["--mlir-print-ir-after-all", "--mlir-print-ir-after-change"]
    result = opt(program, "-p", "cse,cse", *flags, "-o", "/dev/null")
    assert result.code == 0
    assert re.findall(r"^// -----// IR Dump .*$", result.err, re.M) == [
        "// -----// IR Dump After CSEPass: cse //----- //"
    ]


def test_a_failing_pass_dumps_the_module_it_failed_on(opt: Runner, tmp_path: Path) -> None:
    """Only the failing pass is dumped, named as failed, the module scope named; then its error,
    exit 1 and nothing written."""
    (source := tmp_path / "w.mlir").write_text(WRAPPING)
    output = tmp_path / "out.mlir"
    flags = ["--mlir-print-ir-after-failure", "--mlir-print-ir-module-scope"]
    result = opt(source, "-p", f"cse,{CONV},cse", *flags, "-o", output)
    assert result.code == 1 and not output.exists()
    headers = re.findall(r"^// -----// IR Dump .*$", result.err, re.M)
    assert len(headers) == 1
    failed = "StablehloCanonicalizeConvPass Failed: stablehlo-canonicalize-conv{"
    assert headers[0].startswith(f"// -----// IR Dump After {failed}")
    assert headers[0].endswith(" ('builtin.module' operation: @w) //----- //")
    dumped, error = result.err.split("//----- //\n", 1)[1].split("\n\n\n", 1)
    assert "pad = [[9223372036854775807, 9223372036854775807], [0, 0]]" in dumped
    assert error.startswith(f"{source}:3:10: error: spatial dim 0 pads to ")


def test_local_scope_prints_locations_inline_as_iree_opt(opt: Runner, program: Path) -> None:
    flags = ["--mlir-print-debuginfo", "--mlir-print-local-scope"]
    ours = opt(program, "-p", "cse", *flags)
    assert ours.code == 0, ours.err
    assert "#loc" not in ours.out and f'loc("{program}":3:' in ours.out
    assert ours.out == iree_opt(program, "--pass-pipeline=builtin.module(cse)", *flags).stdout


def test_disable_threading_reaches_every_mlir_context(
    opt: Runner, program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each context the run makes is told to run single-threaded; the output is unchanged."""
    told: list[bool] = []

    def enable_multithreading(self: Any, enable: bool) -> None:
        told.append(enable)

    monkeypatch.setattr(context._PlainContext, "enable_multithreading", enable_multithreading)
    plain = opt(program, "-p", "cse,canonicalize")
    assert told == []
    single = opt(program, "-p", "cse,canonicalize", "-mlir-disable-threading")
    assert single.code == 0 and single.out == plain.out
    assert told and not any(told)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    functions=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4),
    marker=st.sampled_from(["// -----", "//=== cut", "// -- next --"]),
    cut_with=st.sampled_from(["bare", "marker", "empty"]),
    output_marker=st.sampled_from([None, "// -----", "// XX", ""]),
)
def test_split_markers_cut_and_join_as_iree_opt(
    opt: Runner,
    tmp_path: Path,
    functions: list[str],
    marker: str,
    cut_with: str,
    output_marker: str | None,
) -> None:
    """`--split-input-file[=MARKER]` (bare, with a marker, or `=`: the default marker) and
    `--output-split-marker`: the same modules and marker lines as iree-opt, blank lines aside
    (mlir-opt ends each module with one more)."""
    body = [f"func.func @{name}{n}() {{\n  return\n}}\n" for n, name in enumerate(functions)]
    (source := tmp_path / "s.mlir").write_text(f"{marker}\n".join(body))
    flag = {"bare": "--split-input-file", "empty": "--split-input-file="}.get(
        cut_with, f"--split-input-file={marker}"
    )
    flags = [flag] if output_marker is None else [flag, f"--output-split-marker={output_marker}"]
    ours = opt(*flags, source)  # a bare flag takes no argument
    theirs = iree_opt(source, *flags)
    assert ours.code == 0, ours.err

    def lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip()]

    assert lines(ours.out) == lines(theirs.stdout)


# Values with name locations, a constant held in a resource blob at a callsite of fused
# locations, and ops at their positions in the file.
NAMED = (
    "module {\n"
    "  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    '    %0 = stablehlo.add %a, %a : tensor<4xf32> loc("sum")\n'
    "    %c = stablehlo.constant dense_resource<blob1> : tensor<4xf32>"
    ' loc(callsite("c"("m.py":3:4) at fused["a.py":5:6, "b.py":7:8]))\n'
    '    %1 = stablehlo.multiply %0, %c : tensor<4xf32> loc("prod")\n'
    "    return %1 : tensor<4xf32>\n  }\n}\n"
    "{-#\n  dialect_resources: {\n    builtin: {\n"
    '      blob1: "0x040000000000803F0000004000004040000080400000"\n'
    "    }\n  }\n#-}\n"
)


@pytest.mark.parametrize(
    "flags",
    [
        ["--mlir-use-nameloc-as-prefix"],
        ["--mlir-elide-resource-strings-if-larger=10"],
        ["--mlir-elide-resource-strings-if-larger=1000"],
        ["--mlir-print-skip-regions"],
        ["--mlir-print-assume-verified"],
        ["--mlir-use-nameloc-as-prefix", "--mlir-print-local-scope"],
        ["--mlir-pretty-debuginfo"],
        ["--mlir-pretty-debuginfo", "--mlir-print-local-scope"],
    ],
)
def test_printer_flags_print_as_iree_opt(opt: Runner, tmp_path: Path, flags: list[str]) -> None:
    """The module as iree-opt prints it under each flag (mlir-opt ends it with one more
    newline)."""
    (source := tmp_path / "n.mlir").write_text(NAMED)
    ours = opt(source, *flags, "--mlir-print-debuginfo")
    assert ours.code == 0, ours.err
    theirs = iree_opt(source, *flags, "--mlir-print-debuginfo")
    assert ours.out.rstrip() == theirs.stdout.rstrip()


@pytest.mark.parametrize(
    "flag",
    [
        "--mlir-print-local-scope",
        "--mlir-use-nameloc-as-prefix",
        "--mlir-elide-resource-strings-if-larger=10",
        "--mlir-elide-resource-strings-if-larger=0",  # 0 elides every blob: it asks too
        "--mlir-print-skip-regions",
        "--mlir-pretty-debuginfo",
    ],
)
def test_mlir_printer_flags_on_migraphx_are_usage_errors(
    opt: Runner, tmp_path: Path, flag: str
) -> None:
    (source := tmp_path / "exp.mlir").write_text(MIGRAPHX_EXP)
    result = opt(source, flag)
    assert result.code == 2 and f"{flag.split('=')[0]} prints HLO modules only" in result.err
