"""A diagnostic may quote what the input spells (xDSL names the op it could not find): the
control characters a terminal acts on (ESC starts a colour or moves the cursor, CR rewrites the
line) are printed as `\\xNN` escapes, never raw."""

from __future__ import annotations

import re
from pathlib import Path

from cli_support import Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError, SourceLoc

_ACTED_ON = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@given(st.text())
def test_a_rendered_error_holds_no_control_character_but_tab_and_newline(message: str) -> None:
    rendered = ConvcanonError(message, SourceLoc("m.mlir", 1, 1)).render()
    assert not _ACTED_ON.search(rendered)
    unescaped = re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), rendered)
    if "\\x" not in message:  # the escapes are the only change
        assert unescaped == f"m.mlir:1:1: error: {message}"


def test_an_op_name_with_escape_sequences_is_not_echoed_raw(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "esc.mlir"
    source.write_text('func.func @main() {\n  "x\x1b[31mRED\x1b[0m.op"() : () -> ()\n  return\n}\n')
    result = opt(source, "-p", "migraphx-to-tosa")
    assert result.code == 1
    assert "\x1b" not in result.err and "x\\x1b[31mRED\\x1b[0m.op" in result.err, result.err
