"""The subcommands share one vocabulary: `-o/--output` wherever a command writes (once),
`--split-input-file` wherever it reads modules, and `run` draws seeded random inputs when none are
given, as `verify` does, and says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_support import CNN, MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]

GENERAL = "stablehlo-canonicalize-conv{gate=general}"


def _results(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def test_run_writes_with_dash_o(cc: Runner, tmp_path: Path) -> None:
    out = tmp_path / "r.npz"
    result = cc("run", CNN, "--inputs", CNN.with_name("small_cnn.inputs.npz"), "-o", out)
    assert result.code == 0, result.err
    assert list(_results(out)) == ["result0"]


def test_run_refuses_a_second_output(cc: Runner, tmp_path: Path) -> None:
    result = cc("run", CNN, "-o", tmp_path / "a.npz", "--output", tmp_path / "b.npz")
    assert result.code == 2 and "-o/--output given twice" in result.err


def test_run_draws_seeded_inputs_and_says_so(cc: Runner, tmp_path: Path) -> None:
    runs = {}
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        out = tmp_path / f"{name}.npz"
        result = cc("run", CNN, "--seed", seed, "-o", out)
        assert result.code == 0, result.err
        assert "note: no --inputs: @main's 15 argument(s) drawn at random" in result.err
        assert f"with --seed {seed}" in result.err
        runs[name] = _results(out)["result0"]
    assert np.array_equal(runs["a"], runs["b"])  # same seed, same inputs, same results
    assert not np.array_equal(runs["a"], runs["c"])
    assert np.all(np.isfinite(runs["a"])) and runs["a"].shape == (1, 10)


def test_run_with_inputs_draws_nothing(cc: Runner) -> None:
    result = cc("run", CNN, "--inputs", CNN.with_name("small_cnn.inputs.npz"))
    assert result.code == 0 and "drawn at random" not in result.err


def test_run_draws_a_migraphx_module_s_inputs(cc: Runner, tmp_path: Path) -> None:
    """exp of a 2-vector: the drawn input's exp is the result (positive, not all 1)."""
    module = tmp_path / "exp.mlir"
    module.write_text(MIGRAPHX_EXP)
    out = tmp_path / "r.npz"
    result = cc("run", module, "-o", out)
    assert result.code == 0, result.err
    assert "@main's 1 argument(s) drawn at random" in result.err
    value = _results(out)["result0"]
    assert value.shape == (2,) and np.all(value > 0) and not np.allclose(value, 1.0)


def test_explain_reads_split_chunks(cc: Runner, tmp_path: Path) -> None:
    """Two chunks (the CNN, then the CNN again): every conv of both, at its line in the file,
    in one table and one summary."""
    text = CNN.read_text()
    split = tmp_path / "two.mlir"
    split.write_text(text + "// -----\n" + text)
    one = json.loads(cc("explain", CNN, "-p", GENERAL, "--format", "json").out)
    result = cc("explain", split, "-p", GENERAL, "--format", "json", "--split-input-file")
    assert result.code == 0, result.err
    both = json.loads(result.out)
    lines = text.count("\n") + 1  # the second chunk starts after the first and the separator
    first = [row["location"].split(":", 1)[1] for row in one["convs"]]
    again = [f"{int(line) + lines}:{col}" for line, col in (place.split(":") for place in first)]
    assert [row["location"].split(":", 1)[1] for row in both["convs"]] == first + again
    assert both["summary"]["convs_seen"] == 2 * one["summary"]["convs_seen"]
    assert both["summary"]["macs_after"] == 2 * one["summary"]["macs_after"]


@pytest.mark.parametrize("bad_chunk", [1, 2])
def test_explain_reports_every_bad_chunk_at_its_line(
    cc: Runner, tmp_path: Path, bad_chunk: int
) -> None:
    good = CNN.read_text()
    bad = "func.func @f() {\n  %0 = stablehlo.bogus\n}\n"
    chunks = [good, bad] if bad_chunk == 2 else [bad, good]
    split = tmp_path / "mixed.mlir"
    split.write_text("// -----\n".join(chunks))
    result = cc("explain", split, "--split-input-file")
    assert result.code == 1 and result.out == ""
    line = 2 if bad_chunk == 1 else good.count("\n") + 3
    assert result.err.startswith(f"{split}:{line}:")


@pytest.mark.parametrize("spelling", ["bare-first", "bare-last", "empty", "marker"])
def test_run_and_explain_split_as_convcanon_opt_does(
    cc: Runner, opt: Runner, tmp_path: Path, spelling: str
) -> None:
    """`--split-input-file[=MARKER]` reads as in convcanon-opt (and mlir-opt): bare or `=` the
    default marker, a value only after `=`, so a bare flag before the file does not take it."""
    marker = "// -----" if spelling != "marker" else "#cut"
    source = tmp_path / "two.mlir"
    source.write_text(f"{MIGRAPHX_EXP}{marker}\n{MIGRAPHX_EXP.replace('exp', 'neg')}")
    flag = {"bare-first": "--split-input-file", "bare-last": "--split-input-file"}.get(
        spelling, "--split-input-file=" + ("#cut" if spelling == "marker" else "")
    )
    first = spelling == "bare-first"
    for command in ("run", "opt"):
        argv = [flag, source] if first else [source, flag]
        if command == "run":
            result = cc("run", *argv, "--seed", "3")
            assert result.code == 0, result.err
            heads = [line for line in result.out.splitlines() if not line.startswith(" ")]
            assert heads == ["chunk1.main: ok (1 result(s))", "chunk2.main: ok (1 result(s))"]
        else:
            result = opt(*argv)
            assert result.code == 0, result.err
            assert result.out.count("func.func @main") == 2, result.out
    cnn = tmp_path / "cnn.mlir"
    cnn.write_text(f"{CNN.read_text()}{marker}\n{CNN.read_text()}")
    argv = [flag, cnn] if first else [cnn, flag]
    result = cc("explain", *argv, "-p", GENERAL, "--format", "json")
    assert result.code == 0, result.err
    assert len(json.loads(result.out)["convs"]) == 2 * CNN.read_text().count("convolution(")
