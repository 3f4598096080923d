"""A bad `!migraphx.shaped` type is reported as `file:line:col: error: <its message>` wherever it
sits: at the end of a line (xDSL's error span then reaches into the next line, and its printed
form ends with a caret line, not the message), at the very end of the file, or split across
lines. Both commands that read migraphx files say it and exit 1."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import NamedTuple

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.migraphx import layout
from convcanon.xdsl_io import parse_file_text


class Kind(NamedTuple):
    """A bad shaped-type body, the exact message, and where in `body + '>'` the error points
    (None: at the body's first character, where the type verifier reports)."""

    what: str
    body: str
    message: str
    at: str | None = None


NOT_REPRESENTABLE = "!migraphx.shaped layout is not representable: "
KINDS = [
    Kind(
        "zero-length dim",
        "2x0xf32, 3x1",
        NOT_REPRESENTABLE + "dim lengths must be >= 1, got [2, 0]",
    ),
    Kind(
        "stride overflows int64",
        "2x2xf32, 9223372036854775808x1",
        "!migraphx.shaped lens and strides must fit in int64, got 9223372036854775808",
    ),
    Kind(
        "length overflows int64",
        "9223372036854775808x2xf32, 2x1",
        "!migraphx.shaped lens and strides must fit in int64, got 9223372036854775808",
    ),
    Kind(
        "spans over 2^63 elements",
        "99999999999x99999999999xf32, 99999999999x1",
        "!migraphx.shaped<99999999999x99999999999xf32, 99999999999x1> spans more than 2^63 "
        "elements of memory",
    ),
    Kind(
        "integer element type of no MIGraphX width",
        "2x3xi7, 3x1",
        "!migraphx.shaped element type i7 is not a known MIGraphX type",
    ),
    Kind(
        "index element type",
        "2x3xindex, 3x1",
        "!migraphx.shaped element type index is not a known MIGraphX type",
    ),
    Kind(
        "complex element type",
        "2x3xcomplex<f32>, 3x1",
        "!migraphx.shaped element type complex<f32> is not a known MIGraphX type",
    ),
    Kind(
        "fewer strides than dims",
        "2x3xf32, 1",
        "!migraphx.shaped has 2 dims but 1 strides (one stride per dim)",
    ),
    Kind(
        "more strides than dims",
        "2x3xf32, 3x1x1",
        "!migraphx.shaped has 2 dims but 3 strides (one stride per dim)",
    ),
    Kind(
        "a scalar with strides",
        "f32, 1",
        "!migraphx.shaped has 0 dims but 1 strides (one stride per dim)",
    ),
    Kind("dynamic dim", "?x3xf32, 3x1", "dynamic dims are not allowed in !migraphx.shaped"),
    Kind(
        "negative stride",
        "2x3xf32, -3x1",
        "expected strides (non-negative integers joined by `x`, e.g. `4x1`) after `,`",
        at="-",
    ),
    Kind(
        "empty strides",
        "2x3xf32, ",
        "expected strides (non-negative integers joined by `x`, e.g. `4x1`) after `,`",
        at=">",
    ),
    Kind("no strides", "2x3xf32", "expected `,` and 2 strides after the lens", at=">"),
    Kind(
        "junk before the closing bracket",
        "2x3xf32, 3x1 7",
        "Expected '>' to end the shaped type (strides must be non-negative integers joined by `x`)",
        at="7",
    ),
]

GOOD = "2x3xf32, 3x1"
_HEAD = f"func.func @main(%a: !migraphx.shaped<{GOOD}>) -> !migraphx.shaped<{GOOD}> {{\n"


def _across(body: str) -> str:
    """The body split over two lines: after its first comma, else before the closing `>`."""
    return body.replace(", ", ",\n      ", 1) if ", " in body else body + "\n  "


# placement -> (text before the `<`, text after the `>`, body rewrite)
PLACEMENTS: dict[str, tuple[str, str, bool]] = {
    "op result at the end of its line": (
        f"{_HEAD}  %0 = migraphx.relu %a : <{GOOD}> -> ",
        f"\n  return %0 : !migraphx.shaped<{GOOD}>\n}}\n",
        False,
    ),
    "return type at the end of its line": (
        f"{_HEAD}  return %a : !migraphx.shaped",
        "\n}\n",
        False,
    ),
    "the last characters of the file": ("func.func private @g() -> !migraphx.shaped", "", False),
    "the last line of the file": ("func.func private @g() -> !migraphx.shaped", "\n\n", False),
    "op operand type across lines": (
        f"{_HEAD}  %0 = migraphx.relu %a : ",
        f" -> <{GOOD}>\n  return %0 : !migraphx.shaped<{GOOD}>\n}}\n",
        True,
    ),
    "argument type across lines": ("func.func private @g(%a: !migraphx.shaped", ")\n", True),
}


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _placed(kind: Kind, placement: str, gap: str = "") -> tuple[str, int, int]:
    """The file's text (`gap` right after the type) and the line:col its diagnostic names."""
    before, after, split = PLACEMENTS[placement]
    body = _across(kind.body) if split else kind.body
    text = f"{before}<{body}>{gap}{after}"
    start = len(before) + 1
    offset = start if kind.at is None else start + (body + ">").rindex(kind.at)
    return (text, *_line_col(text, offset))


def _run(entry: str, path: Path) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        if entry == "convcanon-opt":
            code = opt_main([str(path), "-p", "migraphx-to-tosa"])
        else:
            code = main(["run", str(path)])
    return code, err.getvalue()


@pytest.mark.parametrize("entry", ["convcanon-opt", "convcanon run"])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("kind", KINDS, ids=[k.what for k in KINDS])
def test_cli_names_the_type_error_where_it_is(
    kind: Kind, placement: str, entry: str, tmp_path: Path
) -> None:
    text, line, col = _placed(kind, placement)
    path = tmp_path / "m.mlir"
    path.write_text(text)
    code, stderr = _run(entry, path)
    assert code == 1, stderr
    assert without_source_lines(stderr) == f"{path}:{line}:{col}: error: {kind.message}\n"


_GAPS = st.sampled_from(["", " ", "\n", " \n", "\n\n", "\n  // a comment\n", "\r\n", "\t\n "])


def _layout_text(lens: list[int], strides: list[int]) -> str:
    return f"{'x'.join(map(str, lens))}xf32, {'x'.join(map(str, strides))}"


_UNTILED_LAYOUTS = (
    st.integers(1, 4)
    .flatmap(
        lambda rank: st.tuples(
            st.lists(st.integers(1, 6), min_size=rank, max_size=rank),
            st.lists(st.integers(0, 40), min_size=rank, max_size=rank),
        )
    )
    .filter(lambda pair: layout.check_layout(*pair) is not None)
)


_SIGNATURES = [p for p in PLACEMENTS if PLACEMENTS[p][0].startswith("func.func private")]


@settings(max_examples=200, deadline=None)
@given(drawn=_UNTILED_LAYOUTS, placement=st.sampled_from(_SIGNATURES), gap=_GAPS)
def test_every_layout_migraphx_describes_parses_whatever_follows(
    drawn: tuple[list[int], list[int]], placement: str, gap: str
) -> None:
    """Overlapping, interleaved and gathered layouts (none tiles memory) are types: whether a
    value of one may be written is decided where it is written, not by the parser."""
    lens, strides = drawn
    kind = Kind("drawn", _layout_text(lens, strides), "")
    text, _, _ = _placed(kind, placement, gap)
    module = parse_file_text(text, "drawn.mlir")
    assert _layout_text(lens, strides) in str(module)
