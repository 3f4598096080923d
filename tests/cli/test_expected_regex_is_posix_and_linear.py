"""`--verify-diagnostics`' `expected-*-re` patterns are POSIX EREs, as mlir-opt's llvm::Regex
reads them, matched in steps linear in the message: Python's backtracking `re` took days on
`(a|a)*Z` against a message of 40 `a`s (an unknown op's name), and read `[[:digit:]]` as a set
of `[:digt` followed by `]`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from cli_support import Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.posix_regex import MAX_GROUP_DEPTH, MAX_STATES, Regex, RegexError


def _pattern(depth: int) -> st.SearchStrategy[str]:
    """EREs on which Python's `re` agrees with POSIX on whether a text matches: literals, `.`,
    bracket expressions, groups, alternation, the quantifiers, `^` and `$` (texts hold no
    newline, where Python's `$` differs)."""
    atom = st.sampled_from(["a", "b", "c", ".", "[ab]", "[^a]", "[a-b]", "\\."])
    if depth > 0:
        atom = st.one_of(atom, _pattern(depth - 1).map(lambda inner: f"({inner})"))
    quantifier = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}"])
    piece = st.one_of(st.tuples(atom, quantifier).map("".join), st.sampled_from(["^", "$"]))
    branch = st.lists(piece, min_size=1, max_size=4).map("".join)
    return st.lists(branch, min_size=1, max_size=3).map("|".join)


@settings(max_examples=400, deadline=None)
@given(pattern=_pattern(2), text=st.text(alphabet="abc.", max_size=10))
def test_matches_where_a_backtracking_engine_does(pattern: str, text: str) -> None:
    assert Regex(pattern).search(text) == (re.search(pattern, text) is not None)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("[[:digit:]]+", "spatial extent 3 needs", True),
        ("[[:digit:]]", "no digits", False),
        ("[[:alpha:]_]+[[:space:]]", "x_y z", True),
        ("[]x]", "a]b", True),
        ("[a-]", "-", True),
        ("[\\d]", "\\", True),  # a backslash in brackets is itself
        ("a{0}b", "b", True),
        ("(ab|cd){2}$", "xabcd", True),
        ("^b", "ab", False),
    ],
)
def test_posix_syntax_as_llvm_regex_reads_it(pattern: str, text: str, found: bool) -> None:
    assert Regex(pattern).search(text) is found


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(", "parentheses not balanced"),
        ("a)", "parentheses not balanced"),
        ("[a", "brackets ([ ]) not balanced"),
        ("*a", "repetition-operator operand invalid"),
        ("a**", "repetition-operator operand invalid"),
        ("a{256}", "invalid repetition count(s)"),
        ("a{3,2}", "invalid repetition count(s)"),
        ("a{2", "braces not balanced"),
        ("[z-a]", "invalid character range"),
        ("[[:nope:]]", "invalid character class"),
        ("a|", "empty (sub)expression"),
        ("(a)\\1", "backreference"),
        ("\\d+", "is not POSIX ERE"),
        ("a\\", "trailing backslash"),
        ("((a{255}){255}){255}", f"over {MAX_STATES} states"),
        ("(" * 5000 + "a" + ")" * 5000, f"nest deeper than {MAX_GROUP_DEPTH}"),
    ],
)
def test_what_is_no_ere_is_refused_by_name(pattern: str, why: str) -> None:
    with pytest.raises(RegexError, match=re.escape(why)):
        Regex(pattern)


@pytest.mark.parametrize("length", [10, 100, 5000])
def test_steps_are_at_most_states_times_characters(length: int) -> None:
    regex = Regex("(a|a)*(a*)*Z")
    assert regex.search("a" * length) is False
    assert regex.steps <= len(regex.states) * (length + 1)


def test_a_backtracking_pattern_against_a_long_message_is_answered(
    opt: Runner, tmp_path: Path
) -> None:
    hopeless = (
        "%0 = stablehlo." + "a" * 60 + " %a : tensor<4xf32> // expected-error-re {{{{(a|a)*Z}}}}"
    )
    module = tmp_path / "m.mlir"
    module.write_text(
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        f"  {hopeless}\n"
        "  return %0 : tensor<4xf32>\n"
        "}\n"
        "// expected-error-re @-3 {{custom op 'stablehlo.a{{[[:alpha:]]+}}' is unknown}}\n"
    )
    result = opt(module, "--verify-diagnostics")
    assert result.code == 1
    column = hopeless.index("expected-") + 3
    assert diagnostic_lines(result.err)[:-1] == [
        f'{module}:2:{column}: error: expected error "{{{{(a|a)*Z}}}}" was not produced'
    ]
