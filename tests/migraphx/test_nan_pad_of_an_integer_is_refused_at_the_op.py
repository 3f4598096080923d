"""A pad whose fill is NaN has no value in an integer type (MIGraphX's `pad_clamp` casts it:
undefined). The op's verifier refuses it, so every tool says so at the op: the importer, the
MLIR reader, `run` and `migraphx-to-tosa` (whose fill constant raised out of the lowering)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.cli import main, opt_main

MLIR = """func.func @main(%x: !migraphx.shaped<2x3xi8, 3x1>) -> !migraphx.shaped<2x4xi8, 4x1> {
  %0 = migraphx.pad %x {mode = "constant", pads = [0, 1, 0, 0], value = 0x7fc00000 : f32} : \
<2x3xi8, 3x1> -> <2x4xi8, 4x1>
  func.return %0 : !migraphx.shaped<2x4xi8, 4x1>
}
"""
PROGRAM = """x = @param:x -> int8_type, {2, 3}, {3, 1}
@1 = pad[mode=0,pads={0, 1, 0, 0},value=nan](x) -> int8_type, {2, 4}, {4, 1}
@2 = @return(@1)
"""
MESSAGE = "migraphx.pad: a NaN pad value has no int8 value (undefined in MIGraphX)"


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["opt", "-p", "migraphx-to-tosa"], "p.mlir:2:3"),
        (["opt"], "p.mlir:2:3"),
        (["run"], "p.mlir:2:3"),
        (["import-migraphx"], "p.txt:2:6"),
    ],
)
def test_a_nan_fill_of_an_integer_pad_is_an_error_at_the_op(
    argv: list[str], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / where.split(":")[0]
    source.write_text(PROGRAM if source.suffix == ".txt" else MLIR)
    out = tmp_path / "out"
    if argv[0] == "opt":
        code = opt_main([str(source), *argv[1:], "-o", str(out)])
    else:
        code = main([argv[0], str(source), "-o", str(out)])
    assert code == 1
    assert f"{tmp_path / where}: error: {MESSAGE}" in capsys.readouterr().err
    assert not out.exists()
