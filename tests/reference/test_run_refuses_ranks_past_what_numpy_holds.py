"""A value of more dims than a run holds (MAX_RANK: the kernels are numpy's, which holds 64
and indexes fewer) is refused where it appears, an argument at its function and an op's result
at the op, before numpy raises out of a kernel (a pad of rank 64: IndexError) or the argument's
layout (rank 65: ValueError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.cli import main
from convcanon.reference.migraphx_interp import MAX_RANK


def _shaped(rank: int, last: int = 2) -> str:
    return f"!migraphx.shaped<{'1x' * (rank - 1)}{last}xf32, {'x'.join(['1'] * rank)}>"


def _pad_of_rank(rank: int) -> str:
    """x of [2] reshaped to `rank` dims, padded (reflect) by one at the end, flattened."""
    wide, padded = _shaped(rank), _shaped(rank, 3)
    pads = ", ".join(["0"] * (2 * rank - 1) + ["1"])
    return (
        "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<3xf32, 1> {\n"
        f"  %0 = migraphx.reshape %x {{dims = [{', '.join(['1'] * (rank - 1))}, 2]}} : "
        f"<2xf32, 1> -> {wide[16:]}\n"
        f'  %1 = migraphx.pad %0 {{mode = "reflect", pads = [{pads}], value = 0.0 : f32}} : '
        f"{wide[16:]} -> {padded[16:]}\n"
        f"  %2 = migraphx.reshape %1 {{dims = [3]}} : {padded[16:]} -> <3xf32, 1>\n"
        "  func.return %2 : !migraphx.shaped<3xf32, 1>\n}\n"
    )


def _argument_of_rank(rank: int) -> str:
    return (
        f"func.func @main(%x: {_shaped(rank)}) -> {_shaped(rank)} {{\n"
        f"  %0 = migraphx.relu %x : {_shaped(rank)[16:]} -> {_shaped(rank)[16:]}\n"
        f"  func.return %0 : {_shaped(rank)}\n}}\n"
    )


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (_pad_of_rank(64), "2:3", "'migraphx.reshape' result has rank 64"),
        (_argument_of_rank(65), "1:1", f"{_shaped(65)} has rank 65"),
    ],
    ids=["op result", "argument"],
)
def test_a_rank_past_the_limit_is_refused_where_it_appears(
    text: str, where: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module, results = tmp_path / "m.mlir", tmp_path / "r.npz"
    module.write_text(text)
    assert main(["run", str(module), "-o", str(results)]) == 1
    err = capsys.readouterr().err
    assert f"m.mlir:{where}: error: " in err and message in err
    assert f"a run holds at most {MAX_RANK} dims" in err
    assert not results.exists()


def test_a_rank_at_the_limit_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(_pad_of_rank(MAX_RANK))
    assert main(["run", str(module)]) == 0, capsys.readouterr().err
