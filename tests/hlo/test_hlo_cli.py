"""`convcanon-opt` and `convcanon explain` as a user runs them: subprocesses, exit codes, files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from convcanon.hlo import legalize
from convcanon.hlo.context import make_context, parse_module

from .cases import DYNAMIC, EXAMPLES

BIN = Path(sys.executable).parent
CNN = EXAMPLES / "small_cnn.stablehlo.mlir"
GENERAL = "stablehlo-canonicalize-conv{gate=general}"
XLA_CPU = "stablehlo-canonicalize-conv{gate=general engine=xla-cpu}"


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert path is not None, f"{name} is not installed"
    return path


def run(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    tool, *rest = (str(a) for a in args)
    return subprocess.run(
        [_tool(tool), *rest], capture_output=True, text=True, input=stdin, timeout=120
    )


def _assert_clean_failure(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_round_trip_without_passes_prints_jax_module_unchanged() -> None:
    result = run("convcanon-opt", CNN)
    assert result.returncode == 0, result.stderr
    assert result.stdout == CNN.read_text() + "\n"  # mlir-opt ends its output with a newline more


def test_canonicalized_output_parses_and_verifies(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = run("convcanon-opt", CNN, "-p", GENERAL, "-o", out, "--stats")
    assert result.returncode == 0, result.stderr
    assert "6 convs-seen" in result.stderr and "4 rewritten-stride" in result.stderr
    parse_module(out.read_text(), str(out), make_context())


def test_mhlo_pass_on_an_mhlo_file(tmp_path: Path) -> None:
    module = parse_module(CNN.read_text(), "cnn", make_context())
    legalize.to_mhlo(module)
    source = tmp_path / "cnn.mhlo.mlir"
    source.write_text(str(module))
    result = run("convcanon-opt", source, "-p", "canonicalize-conv{gate=general}")
    assert result.returncode == 0, result.stderr
    assert "mhlo.pad" in result.stdout and "stablehlo." not in result.stdout
    parse_module(result.stdout, "out", make_context())


def test_malformed_mlir_is_a_located_error_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %0 = stablehlo.add %x : tensor<f32>\n}\n")
    out = tmp_path / "out.mlir"
    result = run("convcanon-opt", bad, "-p", GENERAL, "-o", out)
    _assert_clean_failure(result, 1)
    assert result.stderr.startswith(f"{bad}:2:")
    assert ": error: " in result.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.mlir"]  # no temporary left either


def test_failed_run_leaves_an_existing_output_untouched(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("module {\n  func.func @f(\n")
    out = tmp_path / "out.mlir"
    out.write_text("previous\n")
    _assert_clean_failure(run("convcanon-opt", bad, "-p", GENERAL, "-o", out), 1)
    assert out.read_text() == "previous\n"


def test_unknown_pass_and_option_exit_2_and_list_what_exists() -> None:
    result = run("convcanon-opt", CNN, "-p", "canonicalize-everything")
    _assert_clean_failure(result, 2)
    assert "stablehlo-canonicalize-conv" in result.stderr and "canonicalize-conv" in result.stderr
    result = run("convcanon-opt", CNN, "-p", "stablehlo-canonicalize-conv{strides=on}")
    _assert_clean_failure(result, 2)
    for option in ("gate", "allow-small-spatial", "max-window-param", "negative-padding"):
        assert option in result.stderr
    result = run("convcanon-opt", CNN, "-p", "stablehlo-canonicalize-conv{gate=everything}")
    _assert_clean_failure(result, 2)
    assert "neuron" in result.stderr and "general" in result.stderr


def test_dynamic_shapes_are_skipped_with_a_reason(tmp_path: Path) -> None:
    source = tmp_path / "dyn.mlir"
    source.write_text(DYNAMIC)
    result = run("convcanon-opt", source, "-p", GENERAL, "--stats")
    assert result.returncode == 0, result.stderr
    assert (
        "1 skipped: dynamic spatial or feature extent: lhs is tensor<1x?x8x2xf32>" in result.stderr
    )
    verbose = run("convcanon-opt", source, "-p", "stablehlo-canonicalize-conv{verbose=true}")
    assert f"{source}:3:8: remark: convolution not canonicalized: dynamic spatial" in verbose.stderr
    assert verbose.stdout == result.stdout


def test_input_is_never_modified_and_output_equal_to_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "cnn.mlir"
    source.write_bytes(CNN.read_bytes())
    result = run("convcanon-opt", source, "-p", GENERAL, "-o", source)
    _assert_clean_failure(result, 2)
    assert "input" in result.stderr
    assert source.read_bytes() == CNN.read_bytes()
    assert run("convcanon-opt", source, "-p", GENERAL, "-o", tmp_path / "o.mlir").returncode == 0
    assert source.read_bytes() == CNN.read_bytes()


def test_stdin_to_stdout() -> None:
    result = run("convcanon-opt", "-", "-p", GENERAL, stdin=CNN.read_text())
    assert result.returncode == 0, result.stderr
    # the 7x7/2 RGB stem's 4 phases, each 3x3/2 conv 6 (line phases one 1x1 conv per tap), 3 more
    assert result.stdout.count("stablehlo.convolution") == 19


def test_explain_table_json_and_markdown() -> None:
    table = run("convcanon", "explain", CNN, "-p", XLA_CPU)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:4] == ["location", "lhs", "rhs", "result"]
    assert sum(str(CNN) in line for line in lines) == 6
    # the 7x7/2 stem over 3 features is one 4x4 conv over its fold (the engine policy's
    # pad-kernel choice: 64/49 of its 301056 multiply-adds); every other conv at the floor
    assert "convs seen: 6" in table.stdout and "multiply-adds: 687104 before, 779264 after" in (
        table.stdout
    )
    data = json.loads(run("convcanon", "explain", CNN, "-p", XLA_CPU, "--format", "json").stdout)
    first = data["convs"][0]
    assert first["location"] == f"{CNN}:3:10"
    assert first["stride"] == [2, 2] and first["padding"] == [[3, 3], [3, 3]]
    assert first["decision"] == "rewrite" and first["phases"] == 1
    assert first["ops_added"].count("convolution") == 1 and first["ops_added"].count("add") == 0
    assert first["merge"] == "pad-kernel" and data["convs"][1]["merge"] == "exact"
    opt = run("convcanon-opt", CNN, "-p", XLA_CPU)  # what explain lists is what the pass writes
    emitted = Counter(re.findall(r"= stablehlo\.(\w+)", opt.stdout))
    original = Counter(re.findall(r"= stablehlo\.(\w+)", CNN.read_text()))
    listed = Counter(op for row in data["convs"] for op in row["ops_added"])
    listed["convolution"] -= sum(row["decision"] == "rewrite" for row in data["convs"])
    added = {k: emitted[k] - original[k] for k in emitted | original}
    assert {k: v for k, v in added.items() if v} == {k: v for k, v in listed.items() if v}
    summary = data["summary"]
    module_ops = summary.pop("module_ops_before"), summary.pop("module_ops_after")
    assert module_ops[1] - module_ops[0] == sum(added.values())  # as the printed module has it
    assert summary == {
        "convs_seen": 6,
        "rewritten": 6,
        "already_canonical": 0,
        "rejected": {},
        "macs_before": 687104,
        "macs_after": 779264,
        "ops_before": {"convolution": 6},
        "ops_after": dict(Counter(op for row in data["convs"] for op in row["ops_added"])),
    }
    markdown = run("convcanon", "explain", CNN, "--format", "markdown").stdout
    assert markdown.startswith("| location | lhs |") and "|---|" in markdown


def test_explain_reports_rejections_with_reasons() -> None:
    data = json.loads(
        run(
            "convcanon",
            "explain",
            CNN,
            "-p",
            "stablehlo-canonicalize-conv{max-window-param=2}",
            "--format",
            "json",
        ).stdout
    )
    assert data["summary"]["rejected"] == {"padding 3 exceeds max-window-param 2": 1}
    assert data["summary"]["rewritten"] == 5


def test_explain_usage_errors_exit_2() -> None:
    _assert_clean_failure(run("convcanon", "explain", CNN, "-p", "migraphx-to-tosa"), 2)
    _assert_clean_failure(run("convcanon", "explain", CNN, "--format", "yaml"), 2)


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_explain_bad_input_is_a_located_error(tmp_path: Path, fmt: str) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("module {\n  oops\n}\n")
    result = run("convcanon", "explain", bad, "--format", fmt)
    _assert_clean_failure(result, 1)
    assert result.stderr.startswith(f"{bad}:2:")
