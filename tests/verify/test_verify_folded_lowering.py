"""A lowering that folds to a bare `func.return` (a squeeze is only a reshape of the flat buffer)
has no dialect ops; `verify` still compares it with its migraphx source instead of taking it for
StableHLO."""

from __future__ import annotations

from pathlib import Path

from convcanon.cli import main, opt_main

SQUEEZE = """func.func @main(%arg0: !migraphx.shaped<1x4xf32, 4x1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.squeeze %arg0 {axes = [0]} : <1x4xf32, 4x1> -> <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}
"""


def test_squeeze_lowered_to_a_bare_return_verifies(tmp_path: Path, capsys):
    source, lowered = tmp_path / "sq.mlir", tmp_path / "sq.tosa.mlir"
    source.write_text(SQUEEZE)
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    assert "tosa." not in lowered.read_text()
    assert main(["verify", str(source), str(lowered)]) == 0
    assert capsys.readouterr().out.startswith("ok:")
