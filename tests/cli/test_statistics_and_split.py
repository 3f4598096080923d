"""`--stats` like `-mlir-pass-statistics` (per pass instance, summed over split chunks), and
`--split-input-file` reporting the error of every bad chunk at its own line, writing nothing."""

from __future__ import annotations

import re
from pathlib import Path

from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from cli_support import CNN, MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]

GENERAL = "stablehlo-canonicalize-conv{gate=general}"


def _counters(stderr: str) -> dict[str, dict[str, int]]:
    """{pass heading: {counter: value}} from the statistics report."""
    report: dict[str, dict[str, int]] = {}
    heading = ""
    for line in stderr.splitlines():
        match = re.fullmatch(r"  \(S\)\s+(\d+) (.+)", line)
        if match:
            report[heading][match[2]] = int(match[1])
        elif line and not line.startswith("===") and "statistics report" not in line:
            heading = line.strip()
            report[heading] = {}
    return report


def test_statistics_report_each_pass_instance(opt: Runner) -> None:
    result = opt(CNN, "-p", f"{GENERAL},{GENERAL}", "--stats", "-o", "/dev/null")
    assert result.code == 0, result.err
    assert "Pass statistics report" in result.err
    report = _counters(result.err)
    first = report["stablehlo-canonicalize-conv (pass 1 of the pipeline)"]
    second = report["stablehlo-canonicalize-conv (pass 2 of the pipeline)"]
    assert first["convs-seen"] == 6 and first["rewritten-pad"] == 5
    assert second["convs-seen"] > 6 and "rewritten-pad" not in second


def test_statistics_are_summed_over_split_chunks(opt: Runner, tmp_path: Path) -> None:
    text = CNN.read_text()
    split = tmp_path / "two.mlir"
    split.write_text(text + "// -----\n" + text)
    result = opt(split, "-p", GENERAL, "--split-input-file", "--mlir-pass-statistics")
    assert result.code == 0, result.err
    one = _counters(opt(CNN, "-p", GENERAL, "--stats").err)["stablehlo-canonicalize-conv"]
    both = _counters(result.err)["stablehlo-canonicalize-conv"]
    assert both == {key: 2 * value for key, value in one.items()}
    assert result.out.count("// -----") == 1


def test_every_bad_chunk_is_reported_at_its_line(opt: Runner, tmp_path: Path) -> None:
    good = "func.func @ok(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n"
    bad_op = "func.func @f() {\n  %0 = stablehlo.bogus\n}\n"  # error on the chunk's line 2
    bad_type = good.replace("@ok", "@g").replace("-> tensor<2xf32>", "-> tensor<3xf32>")
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([good, bad_op, good, bad_type]))
    out = tmp_path / "out.mlir"
    result = opt(source, "--split-input-file", "-p", GENERAL, "-o", out)
    assert result.code == 1 and result.out == ""
    lines = diagnostic_lines(result.err)[:-1]
    assert len(lines) == 2, result.err
    assert lines[0].startswith(f"{source}:6:8: error: ")  # chunk 2 starts at line 5
    assert lines[1].startswith(f"{source}:14:3: error: ")  # chunk 4 starts at line 13
    assert not out.exists()


def test_a_split_chunk_error_on_migraphx_has_its_line(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "mx.mlir"
    bad = MIGRAPHX_EXP.replace("migraphx.exp", "migraphx.bogus")
    source.write_text(MIGRAPHX_EXP + "// -----\n" + bad)
    result = opt(source, "--split-input-file", "--migraphx-to-tosa")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"{source}:7:"), result.err
