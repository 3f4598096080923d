"""A file or a `--split-input-file` chunk that holds no op (empty, blank, only `//` comments; the
chunk after a trailing `// -----`) is an empty module, as MLIR reads it and the HLO half already
did: xDSL refused it ("Could not parse entire input! (this file is not MLIR: it starts with '// a
comment', not an op, an alias or a comment)"), one trailing `// -----` failed a whole
migraphx-to-tosa run, and `run` passed over a blank chunk but failed on a chunk of comments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st
from jaxlib.mlir import ir

from convcanon.ir_kind import holds_no_op


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
    assert len(chunks) == 3 and chunks[2] == "builtin.module {\n}\n\n"
    assert "tosa.exp" in chunks[0] and "tosa.exp" in chunks[1]


def _without_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


@given(st.text(alphabet=" \t\r\n\v/x%", max_size=30))
def test_holds_no_op_exactly_when_only_space_and_comments(text: str) -> None:
    assert holds_no_op(text) == (_without_comments(text).strip(" \t\r\n") == "")


HLO_ABS = """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.abs %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("module", [HLO_ABS, MIGRAPHX_EXP], ids=["hlo", "migraphx"])
def test_run_passes_over_a_chunk_of_comments(cc: Runner, tmp_path: Path, module: str) -> None:
    """As over a blank chunk: a chunk of comments has no module to run (it was 'chunk 2: no
    @main and no public function without arguments to run', exit 1)."""
    path = tmp_path / "m.mlir"
    path.write_text(module + "// -----\n// a note on the next chunk\n// -----\n" + module)
    result = cc("run", path, "--split-input-file")
    assert result.code == 0, result.err
    assert [line.split(":")[0] for line in result.out.splitlines() if "ok" in line] == [
        "chunk1.main",
        "chunk3.main",
    ]
