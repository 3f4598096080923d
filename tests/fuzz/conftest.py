"""Shared fuzzing harness: run a CLI entry point in-process and check the no-harm property."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    code: int
    stderr: str


def run_cli(
    entry: Callable[[Sequence[str]], int], argv: Sequence[str], capsys: pytest.CaptureFixture[str]
) -> Outcome:
    capsys.readouterr()
    code = entry(list(argv))
    return Outcome(code, capsys.readouterr().err)


def assert_no_harm(
    outcome: Outcome, input_file: Path, input_digest: str, output_file: Path | None
) -> None:
    """Exit 0/1/2; failures end in an error (and the notes MLIR attaches to it), no traceback;
    input intact; no partial output."""
    assert outcome.code in (0, 1, 2), outcome
    assert "Traceback" not in outcome.stderr
    assert hashlib.sha256(input_file.read_bytes()).hexdigest() == input_digest
    if outcome.code != 0:
        lines = [line for line in diagnostic_lines(outcome.stderr) if line.strip()]
        errors = [n for n, line in enumerate(lines) if "error: " in line]
        assert errors, outcome.stderr
        notes = lines[errors[-1] + 1 :]
        assert all(": note: " in line or line.startswith("note: ") for line in notes), (
            outcome.stderr
        )
        if output_file is not None:
            assert not output_file.exists(), "a failed run left an output file"
    leftovers = [p for p in input_file.parent.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
