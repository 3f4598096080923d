"""The nesting check reads brackets as MLIR's lexer does. Counting those in comments and strings,
a comment of 100k `)` (or a string `")"` beside each `[`) let a 100k-deep nest through to
MLIR's parser, which overflowed its stack: the process died by SIGSEGV with no diagnostic. A
chain of 100k unary minus signs in an affine map did the same. And a comment or a string of 300
`(` refused a valid module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]

ENTRY = "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"
DEEP = 100_000
HLO_MAIN = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> attributes {{x = {x}}} {{\n"
HLO_BODY = "  return %a : tensor<4xf32>\n}\n"


def _deep_hlo(x: str, before: str = "") -> str:
    return before + HLO_MAIN.format(x=x) + HLO_BODY


CASES = {
    "a comment of closers, then a nest": (
        _deep_hlo("[" * DEEP + "]" * DEEP, before="// " + ")" * DEEP + "\n"),
        [],
        "levels of brackets",
    ),
    'a string ")" beside each "["': (
        _deep_hlo('[")", ' * DEEP + "1" + "]" * DEEP),
        [],
        "levels of brackets",
    ),
    "unary minus signs in an affine map": (
        "#m = affine_map<(d0) -> (" + "-" * DEEP + "d0)>\n" + _deep_hlo("#m"),
        [],
        "levels of unary minus signs",
    ),
    "a comment of closers, then a migraphx nest": (
        "// "
        + ")" * DEEP
        + "\n"
        + MIGRAPHX_EXP.replace("{\n", "attributes {x = " + "[" * DEEP + "]" * DEEP + "} {\n", 1),
        ["-p", "migraphx-to-tosa"],
        "levels of brackets",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_nest_hidden_from_the_count_is_a_located_error(case: str, tmp_path: Path) -> None:
    text, flags, what = CASES[case]
    module = tmp_path / "m.mlir"
    module.write_text(text)
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, str(module), *flags], capture_output=True, timeout=600
    )
    assert done.returncode == 1, done.stderr[-500:]
    line = done.stderr.decode().splitlines()[0]
    assert line.startswith(f"{module}:") and line.endswith(f"input nests deeper than 256 {what}")


@pytest.mark.parametrize(
    "text",
    [
        "// " + "(" * 300 + "\n" + _deep_hlo("1"),
        _deep_hlo('"' + "(" * 300 + '"'),
        "// " + "-" * 300 + "\n" + _deep_hlo("-1"),
    ],
    ids=["comment", "string", "a rule of dashes"],
)
def test_brackets_in_comments_and_strings_are_no_nesting(
    opt: Runner, tmp_path: Path, text: str
) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    result = opt(module)
    assert (result.code, result.err) == (0, "")
