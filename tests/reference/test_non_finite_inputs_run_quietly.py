"""inf and nan inputs give the IEEE results the ops define, on the migraphx and TOSA reference
too, without numpy's RuntimeWarnings (each printed a line of our source on stderr)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from convcanon.cli import main, opt_main

DOT = (
    "a = @param:a -> float_type, {2, 2}, {2, 1}\n"
    "b = @param:b -> float_type, {2, 2}, {2, 1}\n"
    "@2 = dot(a,b) -> float_type, {2, 2}, {2, 1}\n"
    "@3 = @return(@2)\n"
)


@pytest.mark.parametrize("lowered", [False, True], ids=["migraphx", "tosa"])
def test_a_dot_of_infinities_runs_without_warnings(
    tmp_path: Path, lowered: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    program, module, tosa = tmp_path / "dot.txt", tmp_path / "dot.mlir", tmp_path / "dot.tosa.mlir"
    program.write_text(DOT)
    assert main(["import-migraphx", str(program), "-o", str(module)]) == 0
    if lowered:
        assert opt_main([str(module), "-p", "migraphx-to-tosa", "-o", str(tosa)]) == 0
    inputs = tmp_path / "inputs.npz"
    infinities = np.array([np.inf, -np.inf, 1, 2], np.float32)
    np.savez(inputs, arg0=infinities, arg1=np.ones(4, np.float32))
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(["run", str(tosa if lowered else module), "--inputs", str(inputs)])
    out = capsys.readouterr().out
    assert code == 0
    assert "non-finite 2 (2 nan) first [nan, nan, 3, 3]" in out  # inf + -inf in row 0
