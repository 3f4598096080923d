"""The StableHLO conformance corpus's convolutions all canonicalize (gate=general) and verify."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _shared import SHARED, skip_module_without_shared  # pyright: ignore[reportMissingImports]

from convcanon.fileio.split_input import split_input_file
from convcanon.hlo.dialects import MHLO, STABLEHLO

from .cases import all_conv_params, assert_canonical, assert_same_results, run_pass, xla

skip_module_without_shared()
CORPUS = SHARED / "corpus" / "stablehlo"
FILES = sorted(CORPUS.glob("conv_general_dilated_*.mlir")) + [CORPUS / "convolution.mlir"]
CHUNKS = [
    pytest.param(path, chunk, id=f"{path.stem}:{offset}")
    for path in FILES
    for offset, chunk in split_input_file(path.read_text())
]


def test_corpus_is_present() -> None:
    assert len(FILES) >= 10 and all(p.exists() for p in FILES)


@pytest.mark.parametrize(("path", "chunk"), CHUNKS)
@pytest.mark.parametrize("dialect", [STABLEHLO, MHLO], ids=["stablehlo", "mhlo"])
def test_corpus_case_canonicalizes_and_verifies(path: Path, chunk: str, dialect) -> None:
    after, stats, _ = run_pass(chunk, dialect, gate="general")  # run_pass re-parses and verifies
    assert stats.counters["convs-seen"] >= 1
    assert_canonical(all_conv_params(after, dialect))


_CHECK = re.compile(r"^\s*stablehlo\.custom_call @check\.expect\w*\(.*$", re.MULTILINE)


@pytest.mark.parametrize("path", [p for p in FILES if p.name.startswith("conv_general_dilated")])
def test_jax_corpus_case_computes_the_same_under_xla(path: Path) -> None:
    text = _CHECK.sub("", path.read_text())
    _, _, printed = run_pass(text, STABLEHLO, gate="general")
    assert_same_results(xla(text, []), xla(printed, []), "f32")
