"""The StableHLO conformance corpus, split into the chunks `--interpret -split-input-file` runs."""

from __future__ import annotations

from pathlib import Path

from _shared import SHARED, skip_module_without_shared  # pyright: ignore[reportMissingImports]

from convcanon.fileio.split_input import split_input_file

REPO = Path(__file__).resolve().parents[2]
CORPUS = SHARED / "corpus" / "stablehlo"


def corpus_chunks() -> list[tuple[str, int, str]]:
    """(case id, line offset, text) for every `// -----` chunk of every corpus file.

    Called while a test module is collected: without the corpus that module is skipped (one line
    saying what is missing), and an empty corpus directory is an error, never zero tests.
    """
    skip_module_without_shared()
    cases = []
    for path in sorted(CORPUS.glob("*.mlir")):
        text = path.read_text()
        for offset, chunk in split_input_file(text):
            if "func.func" in chunk:
                cases.append((f"{path.name}:{offset + 1}", offset, chunk))
    assert cases, f"no corpus cases under {CORPUS}"
    return cases
