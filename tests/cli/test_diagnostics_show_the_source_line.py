"""A located diagnostic prints the input's line under it, and a caret under its column, as
mlir-opt does: the same stderr as iree-opt (a real mlir-opt) for the same bad input, whatever the
line's indentation (tabs), its line ends, its non-ASCII text, the chunk it is in or the
expectation that was not met; and nothing where a line cannot be shown."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import IREE_OPT, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import MAX_SHOWN_LINE

HEAD = "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {"
# Errors MLIR's parser and verifier report (the same words from jaxlib's MLIR and iree-opt's;
# a verifier error under --verify-diagnostics, where MLIR attaches no dump of the op), as the
# lines of a function body: `{i}` is where the drawn indentation goes, `{c}` a drawn trailing
# comment.
ERRORS = {
    "undeclared": [
        "{i}%0 = stablehlo.add %a, %b : tensor<2xf32>{c}",
        "  return %0 : tensor<2xf32>",
    ],
    "prior use (a note)": [
        '{i}%0 = "stablehlo.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>{c}',
        "{i}return %0 : tensor<2xf32>{c}",
    ],
    "expected error not produced": [
        "{i}// expected-error @+1 {{{{no such error}}}}",
        "{i}return %a : tensor<2xf32>{c}",
    ],
    "unexpected verifier error": ["{i}return{c}"],
    "unexpected error": [
        "{i}// expected-error @+1 {{{{prior use}}}}",
        '{i}%0 = "stablehlo.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>{c}',
        "{i}return %0 : tensor<2xf32>",
    ],
}
GOOD = "func.func @g() {\n  return\n}\n"


def _module(error: str, indent: str, comment: str) -> str:
    body = [line.format(i=indent, c=comment) for line in ERRORS[error]]
    return "\n".join([HEAD, *body, "}"]) + "\n"


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    error=st.sampled_from(sorted(ERRORS)),
    indent=st.text(alphabet=" \t", min_size=0, max_size=11),
    comment=st.sampled_from(["", " // ok", " // é", "\t// a\ttab"]),
    lines_before=st.lists(st.sampled_from(["// x", "", "\t// é"]), max_size=3),
    crlf=st.booleans(),
    chunk=st.integers(0, 2),
)
def test_stderr_is_iree_opts_for_a_parse_error(
    opt: Runner,
    tmp_path: Path,
    error: str,
    indent: str,
    comment: str,
    lines_before: list[str],
    crlf: bool,
    chunk: int,
) -> None:
    text = "".join(f"{line}\n" for line in lines_before) + _module(error, indent, comment)
    text = "// -----\n".join([GOOD] * chunk + [text])
    path = tmp_path / "bad.mlir"
    path.write_bytes(text.replace("\n", "\r\n").encode() if crlf else text.encode())
    flags = ["--split-input-file"] if chunk else []
    flags += ["--verify-diagnostics"] if "expected" in error else []
    ours = opt(path, *flags, "-o", tmp_path / "out.mlir")
    theirs = iree_opt(path, *flags, "-o", tmp_path / "theirs.mlir", check=False)
    assert (ours.code, ours.err) == (theirs.returncode, theirs.stderr)
    assert "^" in ours.err or any(ord(c) > 127 for c in text), ours.err


def test_stdin_is_shown_as_its_lines(
    opt: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _module("undeclared", "\t", " // é")
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    ours = opt("-")
    theirs = subprocess.run([IREE_OPT, "-"], input=text, capture_output=True, text=True)
    assert (
        ours.err
        == theirs.stderr
        == (
            "<stdin>:2:25: error: use of undeclared SSA value name\n"
            "        %0 = stablehlo.add %a, %b : tensor<2xf32> // é\n"
        )
    )


def test_a_line_too_long_or_with_control_characters_is_not_shown(
    opt: Runner, tmp_path: Path
) -> None:
    """Lines over MAX_SHOWN_LINE bytes (a hex constant; a one-line hostile file) and lines a
    terminal would act on print only the diagnostic's own line."""
    path = tmp_path / "bad.mlir"
    long_comment = " //" + "x" * MAX_SHOWN_LINE
    for comment in [long_comment, " // \x1b[2J"]:
        path.write_text(_module("undeclared", "  ", comment))
        result = opt(path)
        assert result.code == 1
        assert result.err == f"{path}:2:26: error: use of undeclared SSA value name\n"
    path.write_text(_module("undeclared", "  ", " //" + "x" * (MAX_SHOWN_LINE - 50)))
    assert opt(path).err.count("\n") == 3  # the line and its caret


def test_errors_of_every_command_show_the_line(cc: Runner, tmp_path: Path) -> None:
    """run, explain, verify and graph read through the same reader and print the same way."""
    path = tmp_path / "bad.mlir"
    path.write_text(_module("undeclared", "  ", ""))
    expected = (
        f"{path}:2:26: error: use of undeclared SSA value name\n"
        "  %0 = stablehlo.add %a, %b : tensor<2xf32>\n"
        "                         ^\n"
    )
    for argv in (
        ["run", path],
        ["explain", path],
        ["verify", path, path],
        ["graph", path, "-o", tmp_path / "g.dot"],
    ):
        result = cc(*argv)
        assert (result.code, result.err) == (1, expected), argv
