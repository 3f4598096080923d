"""The StableHLO conformance files whose RUN line is `stablehlo-opt -inline %s |
stablehlo-translate --interpret`, run the same way: `convcanon-opt -inline` prints what iree-opt
prints for them, and `convcanon run` of that passes each file's own checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shared import SHARED, skip_module_without_shared  # pyright: ignore[reportMissingImports]
from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]

skip_module_without_shared()
CORPUS = SHARED / "corpus" / "stablehlo"
INLINED = [p for p in sorted(CORPUS.glob("*.mlir")) if "stablehlo-opt -inline %s" in p.read_text()]


def test_the_corpus_has_files_to_inline() -> None:
    assert len(INLINED) >= 10


@pytest.mark.parametrize("path", INLINED, ids=[p.stem for p in INLINED])
def test_inline_then_run_passes_the_file_s_checks(
    opt: Runner, cc: Runner, tmp_path: Path, path: Path
) -> None:
    ours = opt(path, "-inline")
    assert ours.code == 0, ours.err
    assert ours.out == iree_opt(path, "-inline").stdout
    assert "call @" not in ours.out.replace("custom_call @", "")
    inlined = tmp_path / "inlined.mlir"
    inlined.write_text(ours.out)
    result = cc("run", inlined)
    assert result.code == 0, result.err
    assert result.out.startswith("main: ok (") and " 0 failed" in result.out, result.out
