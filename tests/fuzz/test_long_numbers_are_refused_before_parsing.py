"""A number of more digits than any integer up to 4096 bits has is refused before MLIR parses
it: MLIR's parser reads a decimal integer in time that grows with the square of its digits or
worse, so one 40,000-digit literal (a 40 KB file) took 67 s and a 2 MB one never ended. Digits in
strings (a hex blob of zeros) and comments are no number. The scan refuses exactly the runs a
character-by-character walk finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.diagnostics import ConvcanonError, offset_loc
from convcanon.fileio import text_checks
from convcanon.fileio.text_checks import check_number_digits

from .test_integer_width_scan import _code_mask  # pyright: ignore[reportPrivateUsage]

SMALL = 5  # the bound the property runs at, so that its runs cross it often


def _module(digits: int) -> str:
    return (
        "func.func @main() -> tensor<2xi8> {\n"
        f"  %0 = stablehlo.constant dense<[{'1' * digits}, 2]> : tensor<2xi8>\n"
        "  return %0 : tensor<2xi8>\n}\n"
    )


@pytest.mark.parametrize("command", [[], ["run"], ["explain"], ["verify", "{m}"]])
def test_a_long_integer_is_refused_at_its_place(tmp_path, capsys, command: list[str]) -> None:
    """5,000 digits: MLIR took 0.6 s to say 'integer constant out of range for type'."""
    module = tmp_path / "m.mlir"
    module.write_text(_module(5000))
    argv = [w.format(m=module) for w in command] + [str(module)]
    code = main(argv) if command else opt_main(argv)
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines()[-1].startswith(
        f"{module}:2:34: error: a number of 5000 digits: at most 1234 are read"
    ), err


def test_the_widest_number_read_is_read() -> None:
    check_number_digits(_module(text_checks.MAX_NUMBER_DIGITS), "m.mlir")
    with pytest.raises(ConvcanonError, match="a number of 1235 digits"):
        check_number_digits(_module(text_checks.MAX_NUMBER_DIGITS + 1), "m.mlir")


_PARTS = st.one_of(
    st.sampled_from(['"', '\\"', "\\", "//", "/", "\n", " ", "a", "x", "é", "-", ".", "e", "0x"]),
    st.integers(1, 2 * SMALL + 2).map(lambda n: "7" * n),
)


def _first_refused(text: str) -> tuple[int, int] | None:
    """(offset, digits) of the first maximal run of more than SMALL digits in code."""
    mask = _code_mask(text)
    for run in re.finditer(r"[0-9]+", text):
        if len(run[0]) > SMALL and mask[run.start()]:
            return run.start(), len(run[0])
    return None


@settings(max_examples=600, deadline=None)
@given(st.lists(_PARTS, max_size=40))
def test_refuses_the_runs_a_walk_finds_outside_strings_and_comments(parts: list[str]) -> None:
    text = "".join(parts)
    expected = _first_refused(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_checks, "MAX_NUMBER_DIGITS", SMALL)
        try:
            check_number_digits(text, "t.mlir")
        except ConvcanonError as err:
            assert expected is not None, text
            offset, digits = expected
            assert err.message.startswith(f"a number of {digits} digits"), (text, err.message)
            assert err.loc == offset_loc(text, offset, "t.mlir"), text
        else:
            assert expected is None, text


def _lexed_by_regex(line: str) -> tuple[list[tuple[int, int]], int]:
    """lex_line as a regex over string bodies said it (it ran 0.2 us a character)."""
    strings: list[tuple[int, int]] = []
    for token in re.finditer(r'"(?:[^"\\\n]|\\.)*"|//', line):
        if token[0] == "//":
            return strings, token.start()
        strings.append(token.span())
    return strings, len(line)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", "/", "//", "a", " ", "é", "\\\\", '\\"']), max_size=30))
def test_lexing_a_line_finds_what_the_regex_found(parts: list[str]) -> None:
    line = "".join(parts)
    assert text_checks.lex_line(line) == _lexed_by_regex(line)
