"""The integer-width check refuses exactly the types a scan of the whole pattern at every
character would, and reads each character of a line a bounded number of times."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import (
    _WIDE_INTEGER,  # pyright: ignore[reportPrivateUsage]
    MAX_INTEGER_WIDTH,
    ConvcanonError,
    check_integer_widths,
)

_FRAGMENTS = st.sampled_from(
    ["i", "si", "ui", "x", "4x", "?x", '"', "\n", "a", "%", "-", ".", " ", ":", "<", ">", "_"]
)
_WIDTHS = st.sampled_from([7, 8, 9, 12]).flatmap(
    lambda n: st.integers(10 ** (n - 1), 10**n - 1).map(str)
)


def _first_refused(text: str) -> int | None:
    """The offset the check must refuse at: the whole pattern tried at every character, a
    match inside a string (odd quotes before it on its line) skipped."""
    for match in re.finditer(_WIDE_INTEGER, text):
        if int(match[1]) <= MAX_INTEGER_WIDTH:
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text.count('"', line_start, match.start()) % 2 == 0:
            return match.start()
    return None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, _WIDTHS), max_size=40))
def test_refuses_where_the_whole_pattern_matches_outside_strings(parts: list[str]):
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


class _CountingText(str):
    """A text that adds up how many characters `count` reads."""

    read = 0

    def count(self, sub: str, start: int | None = None, end: int | None = None, /) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        lo = 0 if start is None else start
        hi = len(self) if end is None else end
        _CountingText.read += max(0, hi - lo)
        return str.count(self, sub, start, end)


@pytest.mark.parametrize("strings", [2_000, 8_000])
def test_each_character_of_a_long_line_is_counted_once(strings: int):
    """Wide widths quoted in strings on one line: counting the quotes before each from the
    line's start read the line once per width (quadratic)."""
    text = _CountingText('"' + ' i99999999999 "x" ' * strings + '"')
    _CountingText.read = 0
    check_integer_widths(text, "t.mlir")
    assert _CountingText.read <= len(text)
