"""The bracket-depth check every reader runs before a recursive parser: what it refuses and where
it says so, against a plain scan as MLIR's lexer reads the text (strings and comments hold no
nesting), whatever the chunking; that the fast bound in front of it lets no refusal through; and
memory that does not grow with the text (over the whole text it took 11 bytes a character:
2.2 GB for a 200 MB file)."""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError, offset_loc
from convcanon.fileio import text_checks
from convcanon.fileio.text_checks import check_nesting, nesting_may_exceed


def _plain_scan(text: str, limit: int) -> tuple[int, str] | None:
    """(offset, what) of the first place deeper than `limit`, walking the characters as MLIR's
    lexer reads them: a string literal (to its quote, or a newline) and a `//` comment hold no
    nesting; a closer with nothing open closes nothing; the `>` of `->` closes nothing; unary
    minus signs in a row (whitespace and comments between them) nest too."""
    depth = deepest = run = 0
    where: int | None = None
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':  # a string: a breaker of minus runs, no nesting
            i += 1
            while i < len(text) and text[i] not in '"\n':
                if text[i] == "\\":
                    if i + 1 >= len(text) or text[i + 1] == "\n":
                        break
                    i += 1
                i += 1
            i += 1 if i < len(text) and text[i] == '"' else 0
            run = 0
            continue
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if c == "-" and not text.startswith("->", i):
            run += 1
            if run > limit:
                return i, "unary minus signs"
        elif c not in " \t\r\n":
            run = 0
        if c in "[{(<":
            depth += 1
        elif c in "]})>" and not (c == ">" and i > 0 and text[i - 1] == "-"):
            depth = max(depth - 1, 0)
        if depth > deepest:
            deepest, where = depth, i
        i += 1
    return (where, "brackets") if deepest > limit and where is not None else None


@settings(max_examples=600, deadline=None)
@given(
    text=st.text(alphabet='[{(<>)}]-\n aé€"\\/', max_size=60),
    limit=st.integers(0, 4),
    chunk=st.integers(1, 9),
)
@example(text="-" + ">" * 3 + "((((", limit=3, chunk=1)  # "->" cut between two chunks
@example(text="//" + ")" * 5 + "\n" + "(" * 3, limit=2, chunk=1)  # a comment closes nothing
@example(text='"\\"' + "(" * 3 + '"(', limit=2, chunk=2)  # an escaped quote, cut
@example(text="-/" + "/x\n-" * 2, limit=2, chunk=2)  # a comment cut after its first "/"
def test_nesting_is_refused_at_the_first_deepest_bracket_whatever_the_chunks(
    text: str, limit: int, chunk: int
) -> None:
    want = _plain_scan(text, limit)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_checks, "NESTING_CHUNK", chunk)
        if want is None:
            check_nesting(text, "t.mlir", limit)
            return
        with pytest.raises(ConvcanonError) as err:
            check_nesting(text, "t.mlir", limit)
    assert err.value.loc == offset_loc(text, want[0], "t.mlir")
    assert err.value.message == f"input nests deeper than {limit} levels of {want[1]}"
    assert nesting_may_exceed(text, limit)  # the fast bound never lets a refusal through


def _peak_bytes(text: str) -> int:
    tracemalloc.start()
    try:
        check_nesting(text, "big.mlir")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_nesting_scan_memory_does_not_grow_with_the_text() -> None:
    line = "%0 = stablehlo.add %a, %b : (tensor<2x[3]xf32>) -> tensor<2xf32>\n"
    small = line * ((1 << 22) // len(line) + 1)  # a chunk's worth
    large = small * 8  # ~34 MB: the whole-text scan peaked at ~370 MB here
    assert _peak_bytes(large) < 1.5 * _peak_bytes(small)


# MLIR's string literal (to its quote, or a newline) and `//` comment, as a regex: the reference
# the scan, which finds them with `bytes.find`, is held to.
_STRING_OR_COMMENT_BY_REGEX = re.compile(rb'"(?:[^"\\\n]|\\.)*"?|//[^\n]*')


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(['"', "\\", "/", "//", "\n", "-", ">", "(", ")", "a", " "]), max_size=60
    )
)
def test_the_code_scan_blanks_what_the_string_or_comment_pattern_matches(parts: list[str]) -> None:
    """The pre-check's blanking jumps from `"` to `//` by `find` instead of trying its pattern at
    every character: the same bytes come out."""
    text = "".join(parts)
    data = text.encode()
    expected = _STRING_OR_COMMENT_BY_REGEX.sub(b" ", data).replace(b"->", b"==")
    assert text_checks._code_of(text) == expected  # pyright: ignore[reportPrivateUsage]


_BODY_BY_REGEX = re.compile(rb'(?:[^"\\\n]|\\.)*')  # a string's body, as a regex


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from([b'"', b"\\", b"\\\\", b'\\"', b"\n", b"a", b"[", b"//"]), max_size=30)
)
def test_a_string_body_ends_where_the_regex_ended_it(parts: list[bytes]) -> None:
    """The scan finds string ends with `bytes.find`, not a regex walking each body: the same
    ends, from every start."""
    data = b"".join(parts)
    for body in range(len(data) + 1):
        expected = _BODY_BY_REGEX.match(data, body)
        assert expected is not None
        assert text_checks._string_body_end(data, body) == expected.end(), (data, body)  # pyright: ignore[reportPrivateUsage]
