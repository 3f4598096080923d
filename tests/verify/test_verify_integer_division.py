"""`convcanon verify` of an integer division: a zero divisor is undefined (our reference gives 0,
IREE another value), so an argument that is directly a divisor is drawn nonzero, and the summary
says so; a wrong quotient still fails."""

from __future__ import annotations

import pytest

from convcanon.cli import main

from .lowered_pair import lowered_and_broken

I32 = "!migraphx.shaped<64xsi32, 1>"
PROGRAM = f"""func.func @main(%arg0: {I32}, %arg1: {I32}) -> {I32} {{
  %0 = migraphx.div %arg0, %arg1 : <64xsi32, 1>, <64xsi32, 1> -> <64xsi32, 1>
  return %0 : {I32}
}}
"""


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    tmp = tmp_path_factory.mktemp("intdiv")  # the broken copy divides arg1 by arg0
    return lowered_and_broken(tmp, PROGRAM, '"tosa.intdiv"(%0, %1)', '"tosa.intdiv"(%1, %0)')


@pytest.mark.parametrize("engine", ["reference", "iree"])
def test_integer_division_never_compares_a_zero_divisor(paths, engine, capsys):
    source, lowered, _ = paths
    assert main(["verify", source, lowered, "--engine", engine, "--trials", "5"]) == 0
    out = capsys.readouterr().out
    assert "integer divisor argument(s) arg1 drawn nonzero (division by zero is undefined)" in out


def test_wrong_integer_division_is_still_a_mismatch(paths, capsys):
    source, _, wrong = paths
    assert main(["verify", source, wrong, "--engine", "iree"]) == 1
    assert "mismatch" in capsys.readouterr().err
