"""`convcanon run` without `--output` prints each result: dtype, shape, range, first values."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from convcanon.cli import main
from convcanon.reference.summary import summarize

MODULE = """func.func @main(%arg0: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<i1>) {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2x4xf32>
  %1 = stablehlo.constant dense<true> : tensor<i1>
  return %0, %1 : tensor<2x4xf32>, tensor<i1>
}
"""


def test_summary_names_dtype_shape_range_mean_and_first_values():
    line = summarize(np.arange(8, dtype=np.float32).reshape(2, 4))
    assert line == "float32[2, 4] min 0 max 7 mean 3.5 first [0, 1, 2, 3, 4, 5, ...]"


def test_summary_counts_non_finite_values_and_ranges_the_rest():
    line = summarize(np.array([1.0, np.nan, np.inf, -2.0]))
    assert line.startswith("float64[4] min -2 max 1 mean -0.5 non-finite 2 (1 nan)")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.zeros((0, 3), np.float32), "float32[0, 3] (empty)"),
        (np.array([True, False, True]), "bool[3] true 2 of 3 first [True, False, True]"),
        (np.array([1.5, -1], ml_dtypes.bfloat16), "bfloat16[2] min -1 max 1.5 mean 0.25"),
    ],
)
def test_summary_reads_every_dtype(value: np.ndarray, expected: str):
    assert summarize(value).startswith(expected)


def test_run_without_output_prints_one_line_per_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.arange(8, dtype=np.float32).reshape(2, 4))
    assert main(["run", str(module), "--inputs", str(inputs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "main: ok (0 check(s), 0 failed, 2 result(s))"
    assert lines[1] == "  result0: float32[2, 4] min 0 max 14 mean 7 first [0, 2, 4, 6, 8, 10, ...]"
    assert lines[2] == "  result1: bool[] true 1 of 1 first [True]"


def test_run_with_output_writes_the_file_and_prints_no_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.ones((2, 4), np.float32))
    assert (
        main(["run", str(module), "--inputs", str(inputs), "--output", str(tmp_path / "o.npz")])
        == 0
    )
    assert "result0:" not in capsys.readouterr().out
    assert np.load(tmp_path / "o.npz")["result0"].tolist() == [[2.0] * 4] * 2
