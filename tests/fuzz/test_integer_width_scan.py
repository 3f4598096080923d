"""The integer-width check refuses exactly the types a scan of the whole pattern at every
character would find outside strings and comments, and lexes each line once."""

from __future__ import annotations

import re

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.fileio import text_checks
from convcanon.fileio.text_checks import (
    _WIDE_INTEGER,  # pyright: ignore[reportPrivateUsage]
    MAX_READ_INTEGER_WIDTH,
    check_integer_widths,
)

_FRAGMENTS = st.sampled_from(
    ["i", "si", "ui", "x", "4x", "?x", '"', '\\"', "\\", "//", "/", "\n", "a", "%", "-", " ", ":"]
)
_WIDTHS = st.sampled_from([3, 4, 5, 7, 8, 9, 12]).flatmap(
    lambda n: st.integers(10 ** (n - 1), 10**n - 1).map(str)
)


def _code_mask(text: str) -> list[bool]:
    """Per character, whether MLIR's lexer reads it as code: not inside a string literal
    (backslash escapes) nor a `//` comment. A character-by-character walk."""
    mask: list[bool] = []
    in_string = escaped = in_comment = False
    for at, char in enumerate(text):
        if char == "\n":
            in_string = escaped = in_comment = False  # a string does not span lines
            mask.append(True)
        elif in_comment:
            mask.append(False)
        elif in_string:
            mask.append(False)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"' and _closed(text, at):
            in_string = True  # a literal only if it is closed on its line
            mask.append(False)
        elif text.startswith("//", at):
            in_comment = True
            mask.append(False)
        else:
            mask.append(True)
    return mask


def _closed(text: str, at: int) -> bool:
    """Whether the quote at `at` opens a string that an unescaped quote closes on its line."""
    escaped = False
    for char in text[at + 1 :]:
        if char == "\n":
            return False
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return True
    return False


def _first_refused(text: str) -> int | None:
    """The offset the check must refuse at: the whole pattern tried at every character, a
    match inside a string or a comment skipped."""
    mask = _code_mask(text)
    for match in re.finditer(_WIDE_INTEGER, text):
        if int(match[1]) > MAX_READ_INTEGER_WIDTH and mask[match.start()]:
            return match.start()
    return None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, _WIDTHS), max_size=40))
def test_refuses_where_the_whole_pattern_matches_outside_strings_and_comments(parts: list[str]):
    text = "".join(parts)
    expected = _first_refused(text)
    try:
        check_integer_widths(text, "t.mlir")
    except ConvcanonError as err:
        assert expected is not None
        line = text.count("\n", 0, expected) + 1
        column = expected - (text.rfind("\n", 0, expected) + 1) + 1
        assert err.loc is not None and (err.loc.line, err.loc.col) == (line, column)
    else:
        assert expected is None


def test_a_width_after_an_escaped_quote_is_refused():
    """`"a\\"b"` is one string: counting quotes put the width after it inside a string, and
    xDSL then computed `1 << 99999999999`."""
    text = 'func.func @f() attributes {note = "a\\"b", axis = 0 : i99999999999}'
    with pytest.raises(ConvcanonError, match="invalid integer width") as caught:
        check_integer_widths(text, "t.mlir")
    assert caught.value.loc is not None and caught.value.loc.col == text.index("i9") + 1


@pytest.mark.parametrize("strings", [2_000, 8_000])
def test_each_line_is_lexed_once(strings: int, monkeypatch: pytest.MonkeyPatch):
    """Widths quoted in strings and in a comment on one line: the line is lexed for its strings
    once, not once per width."""
    lexed: list[int] = []
    real = text_checks.lex_line

    def counting(line: str) -> tuple[list[tuple[int, int]], int]:
        lexed.append(len(line))
        return real(line)

    monkeypatch.setattr(text_checks, "lex_line", counting)
    text = '"x" ' + ' "i99999999999" ' * strings + "// i99999999999 " * strings
    check_integer_widths(text, "t.mlir")
    assert sum(lexed) <= len(text)


WIDE_ATTRIBUTES = (
    "func.func @main() attributes {a = 1 : i16777215, b = 2 : i16777215} {\n  return\n}\n"
)
WIDE_MIGRAPHX = (
    "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> "
    "attributes {n = 1 : i5000} {\n  return %x : !migraphx.shaped<2xf32, 1>\n}\n"
)


@pytest.mark.parametrize(
    "text, pipeline, where, bits",
    [
        (WIDE_ATTRIBUTES, [], "1:39", 16777215),
        (WIDE_MIGRAPHX, ["-p", "migraphx-to-tosa"], "1:99", 5000),
    ],
    ids=["StableHLO", "migraphx"],
)
def test_an_integer_type_wider_than_4096_bits_is_refused_in_either_half(
    tmp_path, capsys, text: str, pipeline: list[str], where: str, bits: int
) -> None:
    """MLIR holds each value of an integer type in its width: 300 attributes `N : i16777215`
    (7 KB of text) took 735 MB, and were read (as xDSL read an i5000)."""
    from convcanon.cli import opt_main

    module = tmp_path / "m.mlir"
    module.write_text(text)
    assert opt_main([str(module), *pipeline]) == 1
    assert without_source_lines(capsys.readouterr().err) == (
        f"{module}:{where}: error: integer type of {bits} bits: at most 4096 are read (each value"
        " of it would take that many bits)\n"
    )
