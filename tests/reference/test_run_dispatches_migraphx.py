"""`convcanon run` hands files with migraphx ops to half B's interpreter (flat buffers in/out)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from convcanon.cli import main

ADD = """func.func @main(%arg0: !migraphx.shaped<2x3xf32, 1x2>,
                %arg1: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {
  %0 = migraphx.add %arg0, %arg1 : <2x3xf32, 1x2>, <2x3xf32, 3x1> -> <2x3xf32, 3x1>
  return %0 : !migraphx.shaped<2x3xf32, 3x1>
}
"""


def test_migraphx_file_runs_through_the_migraphx_interpreter(tmp_path: Path, capsys) -> None:
    module = tmp_path / "add.mlir"
    module.write_text(ADD)
    a = np.arange(6, dtype=np.float32)  # column-major 2x3: logical [[0, 2, 4], [1, 3, 5]]
    b = np.full(6, 10, dtype=np.float32)
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b)
    out = tmp_path / "out.npz"
    code = main(["run", str(module), "--inputs", str(tmp_path / "in.npz"), "--output", str(out)])
    assert code == 0, capsys.readouterr()
    with np.load(out) as data:
        np.testing.assert_array_equal(data["result0"], [10, 12, 14, 11, 13, 15])


def test_inputs_that_do_not_fit_are_an_error_at_the_entry(tmp_path: Path, capsys) -> None:
    """A wrong set of arrays, or an array of the wrong size, is reported at the entry function
    (it was at the file alone); half A reports a wrong array at its argument."""
    module = tmp_path / "add.mlir"
    module.write_text(ADD)
    cases = [
        ({"arg0": np.zeros(6, np.float32)}, "@main takes 2 flat buffer(s); missing arg1"),
        (
            {"arg0": np.zeros(5, np.float32), "arg1": np.zeros(6, np.float32)},
            "input arg0 is float32[5] but @main expects the flat buffer float32[6]",
        ),
    ]
    for arrays, message in cases:
        np.savez(tmp_path / "in.npz", **arrays)
        capsys.readouterr()
        assert main(["run", str(module), "--inputs", str(tmp_path / "in.npz")]) == 1
        first = ADD.splitlines()[0]
        assert capsys.readouterr().err == f"{module}:1:1: error: {message}\n{first}\n^\n"
