"""`--verify-diagnostics` reads its `expected-*` comments in time linear in the text: the
expectation pattern, searched on a line that cannot match (no closing `}}`), scanned the rest of
the line from each `expected-` on it (a 200 KB comment line of them took 18 s), so only lines
ending in `}}` are searched; and a `-re` text's blocks are cut by index, not by copying the rest
of the text at each block."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convcanon import diagnostic_verifier
from convcanon.diagnostic_verifier import expectations
from convcanon.posix_regex import RegexError, escape


class _CountingPattern:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.searched: list[str] = []

    def search(self, line: str) -> Any:
        self.searched.append(line)
        return self.pattern.search(line)


def test_only_lines_that_can_match_are_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingPattern(diagnostic_verifier._EXPECTED)  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(diagnostic_verifier, "_EXPECTED", counting)
    hopeless = "// " + "expected-error {{" * 2000
    text = "\n".join([hopeless, "%0 = stablehlo.abs %a // expected-error {{x}}", hopeless])
    found, problems = expectations(text, "m.mlir")
    assert [(e.kind, e.line, e.text) for e in found] == [("error", 2, "x")] and not problems
    assert counting.searched == ["%0 = stablehlo.abs %a // expected-error {{x}}"]


def _regex_by_partition(text: str) -> str:
    """The `-re` pattern as the verifier built it before: literal text escaped, each block in
    parentheses (mlir-opt's computeRegex)."""
    parts, rest = [], text
    while "{{" in rest:
        literal, _, rest = rest.partition("{{")
        inner, close, rest = rest.partition("}}")
        if not close:
            raise RegexError("found start of regex with no end '}}'")
        parts += [escape(literal), f"({inner})"]
    return "".join([*parts, escape(rest)])


@given(st.text(alphabet="ab{}.", max_size=24))
def test_blocks_are_cut_as_before(text: str) -> None:
    try:
        want = _regex_by_partition(text)
    except RegexError as err:
        with pytest.raises(RegexError, match=re.escape(str(err))):
            diagnostic_verifier._regex(text)  # pyright: ignore[reportPrivateUsage]
        return
    try:
        got = diagnostic_verifier._regex(text)  # pyright: ignore[reportPrivateUsage]
    except RegexError:
        return  # a block that is no ERE (`{`, `}`): refused by the block's own compile
    assert got.pattern == want
