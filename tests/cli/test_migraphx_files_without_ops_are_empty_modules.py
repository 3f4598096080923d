"""A half-B file that holds no op (empty, blank, only `//` comments; the chunk after a trailing
`// -----`) is an empty module, as MLIR reads it and the HLO half already did: xDSL refused it
("Could not parse entire input! (this file is not MLIR: it starts with '// a comment', not an
op, an alias or a comment)"), and one trailing `// -----` failed a whole migraphx-to-tosa run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st
from jaxlib.mlir import ir

from convcanon.xdsl_io import holds_no_op


@pytest.mark.parametrize("text", ["", "\n\n", "// a comment\n", "  // one\n\t\n// two"])
def test_no_op_is_an_empty_module(opt: Runner, tmp_path: Path, text: str) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    result = opt(module, "-p", "migraphx-to-tosa")
    assert (result.code, result.err) == (0, "")
    with ir.Context():
        parsed = ir.Module.parse(result.out)  # upstream MLIR reads what we print
        assert len(parsed.body.operations) == 0


def test_a_trailing_split_marker_is_an_empty_chunk(opt: Runner, tmp_path: Path) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(MIGRAPHX_EXP + "// -----\n" + MIGRAPHX_EXP + "// -----\n")
    result = opt(module, "-p", "migraphx-to-tosa", "--split-input-file")
    assert (result.code, result.err) == (0, "")
    chunks = result.out.split("// -----\n")
    assert len(chunks) == 3 and chunks[2] == "builtin.module {\n}\n"
    assert "tosa.exp" in chunks[0] and "tosa.exp" in chunks[1]


def _without_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


@given(st.text(alphabet=" \t\r\n\v/x%", max_size=30))
def test_holds_no_op_exactly_when_only_space_and_comments(text: str) -> None:
    assert holds_no_op(text) == (_without_comments(text).strip(" \t\r\n") == "")
