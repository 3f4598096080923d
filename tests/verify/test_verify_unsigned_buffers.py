"""`convcanon verify` of an unsigned migraphx program against its TOSA lowering: the lowering
makes ui8 signless i8 (same bits), so the buffers are the same and the results are read with the
migraphx side's signedness; a lowering that computes the wrong unsigned answer still fails."""

from __future__ import annotations

import pytest

from convcanon.cli import main

from .lowered_pair import lowered_and_broken

U8 = "!migraphx.shaped<12xui8, 1>"
PROGRAM = f"""func.func @main(%arg0: {U8}, %arg1: {U8}) -> {U8} {{
  %0 = migraphx.max %arg0, %arg1 : <12xui8, 1>, <12xui8, 1> -> <12xui8, 1>
  return %0 : {U8}
}}
"""


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    tmp = tmp_path_factory.mktemp("unsigned")
    return lowered_and_broken(tmp, PROGRAM, '"tosa.maximum"', '"tosa.minimum"')


@pytest.mark.parametrize("engine", ["reference", "iree"])
def test_unsigned_program_verifies_against_its_signless_lowering(paths, engine, capsys):
    source, lowered, _ = paths
    assert main(["verify", source, lowered, "--engine", engine]) == 0
    assert "integer/bool element(s) equal" in capsys.readouterr().out


def test_wrong_unsigned_lowering_is_a_mismatch(paths, capsys):
    source, _, wrong = paths
    assert main(["verify", source, wrong]) == 1
    assert "mismatch" in capsys.readouterr().err
