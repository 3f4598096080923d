"""`convcanon run` on bad input: one `file:line:col: error:` line and exit 1, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main

ADD = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_unsupported_op_is_named_with_its_location(tmp_path: Path, capsys) -> None:
    text = """func.func @main() -> tensor<4xui32> {
  %0 = stablehlo.constant dense<[3, 1]> : tensor<2xui64>
  %1:2 = "stablehlo.rng_bit_generator"(%0) <{rng_algorithm = #stablehlo<rng_algorithm DEFAULT>}>
    : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
  return %1#1 : tensor<4xui32>
}
"""
    path = _write(tmp_path, "rng.mlir", text)
    code, _, err = _run([path], capsys)
    assert code == 1
    unsupported = "the interpreter does not support op 'stablehlo.rng_bit_generator'"
    assert without_source_lines(err).strip() == f"{path}:3:10: error: {unsupported}", err


def test_location_counts_lines_of_earlier_chunks(tmp_path: Path, capsys) -> None:
    text = "func.func @ok() {\n  func.return\n}\n// -----\n" + (
        'func.func @bad() {\n  %0 = "stablehlo.rng_bit_generator_x"() : () -> tensor<2xf32>\n'
        "  func.return\n}\n"
    )
    path = _write(tmp_path, "chunks.mlir", text)
    code, _, err = _run([path, "--split-input-file"], capsys)
    assert code == 1
    assert err.startswith(f"{path}:6:"), err  # line 6 of the file, not of the chunk


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        ("%0 = stablehlo.constant dense<1.0> : tensor<65536x65536xf32>", "1GiB"),
        (
            "%c = stablehlo.constant dense<1.0> : tensor<f32>\n"
            "  %0 = stablehlo.broadcast_in_dim %c, dims = [] "
            ": (tensor<f32>) -> tensor<65536x65536xf32>",
            "1GiB",
        ),
    ],
    ids=["splat-constant", "broadcast"],
)
def test_result_over_memory_limit_is_refused_before_allocating(
    tmp_path: Path, capsys, body: str, limit: str
) -> None:
    text = f"func.func @main() {{\n  {body}\n  func.return\n}}\n"
    path = _write(tmp_path, "big.mlir", text)
    code, _, err = _run([path, "--memory-limit", limit], capsys)
    assert code == 1
    assert "over the memory limit" in err and f"{path}:" in err, err


def test_memory_limit_allows_what_fits(tmp_path: Path, capsys) -> None:
    text = (
        "func.func @main() -> tensor<64x64xf32> {\n"
        "  %0 = stablehlo.constant dense<1.0> : tensor<64x64xf32>\n"
        "  return %0 : tensor<64x64xf32>\n}\n"
    )
    path = _write(tmp_path, "small.mlir", text)
    assert _run([path, "--memory-limit", "16KiB"], capsys)[0] == 0
    assert _run([path, "--memory-limit", "16000"], capsys)[0] == 1


def test_bad_memory_limit_is_usage_error(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "add.mlir", ADD)
    code, _, err = _run([path, "--memory-limit", "lots"], capsys)
    assert code == 2 and "memory limit" in err


def _npz(tmp_path: Path, **arrays: np.ndarray) -> str:
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)  # pyright: ignore[reportArgumentType]
    return str(path)


def test_inputs_run_and_results_are_written(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "add.mlir", ADD)
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 0.5, np.float32)
    out = tmp_path / "out.npz"
    code, stdout, _ = _run(
        [path, "--inputs", _npz(tmp_path, arg0=a, arg1=b), "--output", str(out)], capsys
    )
    assert code == 0 and "main: ok" in stdout
    with np.load(out) as data:
        np.testing.assert_array_equal(data["result0"], a + b)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (
            {"arg0": np.zeros((2, 3), np.float32)},
            "@main takes 2 argument(s); missing input(s) arg1",
        ),
        (
            {f"arg{i}": np.zeros((2, 3), np.float32) for i in range(3)},
            "@main takes 2 argument(s); unexpected input(s) arg2",
        ),
        (
            {"arg0": np.zeros((3, 2), np.float32), "arg1": np.zeros((2, 3), np.float32)},
            "input arg0 is float32[3, 2] but @main expects f32[2, 3]",
        ),
        (
            {"arg0": np.zeros((2, 3), np.float64), "arg1": np.zeros((2, 3), np.float32)},
            "input arg0 is float64[2, 3] but @main expects f32[2, 3]",
        ),
        (  # as wide as f32, but fields, not raw bits (plain void of 4 bytes would be)
            {
                "arg0": np.zeros((2, 3), [("a", "<i2"), ("b", "<i2")]),
                "arg1": np.zeros((2, 3), np.float32),
            },
            "input arg0 is [('a', '<i2'), ('b', '<i2')][2, 3] but @main expects f32[2, 3]",
        ),
    ],
    ids=["missing", "extra", "shape", "dtype", "structured-dtype"],
)
def test_input_mismatch_is_a_clear_error(tmp_path: Path, capsys, arrays, message: str) -> None:
    """At the entry for a wrong set of names; at the argument an array does not fit (it was
    the file alone)."""
    path = _write(tmp_path, "add.mlir", ADD)
    code, _, err = _run([path, "--inputs", _npz(tmp_path, **arrays)], capsys)
    assert code == 1
    column = ADD.index("%a") + 1 if message.startswith("input arg0") else 1
    assert err == f"{path}:1:{column}: error: {message}\n{ADD.splitlines()[0]}\n{'^':>{column}}\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not a zip at all", "no zip header"), (b"PK\x03\x04garbage", "cannot read inputs")],
    ids=["not-zip", "broken-zip"],
)
def test_malformed_npz_is_a_clear_error(
    tmp_path: Path, capsys, content: bytes, message: str
) -> None:
    path = _write(tmp_path, "add.mlir", ADD)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(content)
    code, _, err = _run([path, "--inputs", str(bad)], capsys)
    assert code == 1 and message in err and err.startswith(f"{bad}: error:"), err


def test_failing_check_prints_location_and_index(tmp_path: Path, capsys) -> None:
    text = """func.func @wrong() {
  %0 = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  check.expect_eq_const %0, dense<[1, 2, 4]> : tensor<3xi32>
  func.return
}
"""
    path = _write(tmp_path, "wrong.mlir", text)
    out_file = tmp_path / "out.npz"
    code, out, err = _run([path, "--output", str(out_file)], capsys)
    assert code == 1
    assert "wrong: FAILED" in out
    assert f"{path}:3:3: error: expect_eq_const failed at index [2]" in err, err
    assert err.splitlines()[-1].startswith(f"{path}: error:")
    assert not out_file.exists()  # a failed run writes nothing


def test_cli_subprocess_gives_one_line_and_exit_1(tmp_path: Path) -> None:
    path = _write(tmp_path, "add.mlir", ADD)
    proc = subprocess.run(
        [sys.executable, "-m", "convcanon.cli", "run", path, "--inputs", str(tmp_path / "no.npz")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"{tmp_path / 'no.npz'}: error: no such file"
