"""`explain` names a conv that is already canonical as such: it is not counted a rejection,
whatever the gate's own rules would say of it (the neuron gate's rank 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Runner  # pyright: ignore[reportMissingImports]


def _conv(result: str, operands: str, types: str, out: str, dims: str, window: str) -> str:
    return (
        f"  {result} = stablehlo.convolution({operands}) dim_numbers = {dims},"
        f" window = {{{window}}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}"
        f" : ({types}) -> {out}\n"
    )


# A canonical 2-D conv, a canonical 1-D conv (rank 3: outside the neuron gate's rank 4) and a
# padded conv the default gate rejects for its small extent.
D2 = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
MODULE = (
    "func.func @main(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %y: tensor<1x8x3xf32>,"
    " %v: tensor<3x3x4xf32>, %s: tensor<1x3x3x3xf32>)"
    " -> (tensor<1x6x6x4xf32>, tensor<1x6x4xf32>, tensor<1x3x3x4xf32>) {\n"
    + _conv(
        "%0",
        "%x, %w",
        "tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>",
        "tensor<1x6x6x4xf32>",
        D2,
        "stride = [1, 1], pad = [[0, 0], [0, 0]]",
    )
    + _conv(
        "%1",
        "%y, %v",
        "tensor<1x8x3xf32>, tensor<3x3x4xf32>",
        "tensor<1x6x4xf32>",
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "stride = [1], pad = [[0, 0]]",
    )
    + _conv(
        "%2",
        "%s, %w",
        "tensor<1x3x3x3xf32>, tensor<3x3x3x4xf32>",
        "tensor<1x3x3x4xf32>",
        D2,
        "stride = [1, 1], pad = [[1, 1], [1, 1]]",
    )
    + "  return %0, %1, %2 : tensor<1x6x6x4xf32>, tensor<1x6x4xf32>, tensor<1x3x3x4xf32>\n}\n"
)


@pytest.fixture
def module(tmp_path: Path) -> Path:
    (path := tmp_path / "m.mlir").write_text(MODULE)
    return path


def test_canonical_convs_are_not_rejections(cc: Runner, module: Path) -> None:
    result = cc("explain", module, "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert [row["canonical"] for row in data["convs"]] == [True, True, False]
    assert data["summary"]["already_canonical"] == 2
    assert data["summary"]["rejected"] == {"spatial extent 3 needs allow-small-spatial": 1}


def test_the_table_says_canonical(cc: Runner, module: Path) -> None:
    result = cc("explain", module)
    assert result.code == 0, result.err
    rows = result.out.splitlines()[1:4]
    assert ["  canonical  " in row for row in rows] == [True, True, False]
    assert "\nalready canonical: 2\nrejected: 1\n" in result.out
