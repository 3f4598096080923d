"""A conv dimension index past any conv's rank is refused before MLIR parses it: StableHLO's and
MHLO's parser of `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` sizes a vector by the largest index,
so `[b, 2000000000, 1, f]` (a 400-byte file) took 15.7 GB and 21 s, and 2^63 - 1 was
'cannot parse: SmallVector unable to grow' with no position (the command-line fuzz found it
unplaced; test_limits had taken that message for the expected one)."""

from __future__ import annotations

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import opt_main
from convcanon.diagnostics import ConvcanonError
from convcanon.fileio.text_checks import check_conv_dimension_indices

from . import sources

PRETTY = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"


def _conv(dimension_numbers: str) -> str:
    return sources.STABLEHLO.read_text().replace(PRETTY, dimension_numbers, 1)


@pytest.mark.parametrize("index", ["10000000", "9223372036854775807"])
def test_a_huge_index_is_refused_at_its_place(tmp_path, capsys, index: str) -> None:
    """10,000,000 took 90 MB and said 'Expected spatial dimensions 0, 2, 3, ... not specified'."""
    text = _conv(PRETTY.replace("[b, 0,", f"[b, {index},", 1))
    module = tmp_path / "m.mlir"
    module.write_text(text)
    assert opt_main([str(module)]) == 1
    at = text.index(index)
    line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    assert without_source_lines(capsys.readouterr().err) == (
        f"{module}:{line}:{column}: error: conv dimension index {index}: at most 4095 (no conv"
        " has more dimensions)\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 5000, f]",
        "%0 = mhlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 99999, f]",
        "dimension_numbers = #stablehlo.conv<[b, 0, 4096, f]x[0, 1, i, o]->[b, 0, 1, f]>",
        "dimension_numbers = #mhlo.conv<[b, 0, 1, f]x[0, 1, i, 12345]->[b, 0, 1, f]>",
    ],
)
def test_every_spelling_is_read(text: str) -> None:
    with pytest.raises(ConvcanonError, match="conv dimension index"):
        check_conv_dimension_indices(text, "m.mlir")


@pytest.mark.parametrize(
    "text",
    [
        "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        "dim_numbers = [b, 4095, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        '"dim_numbers = [b, 99999, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"',
        "// dim_numbers = [b, 99999, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        "dim_numbers = [b, 99999, 1, f] and no x",
    ],
    ids=["plain", "at the bound", "in a string", "in a comment", "not dimension numbers"],
)
def test_what_is_no_huge_index_is_left_to_the_parser(text: str) -> None:
    check_conv_dimension_indices(text, "m.mlir")
