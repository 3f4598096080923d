"""Run the FileCheck suite with lit, one pytest case per `.mlir` file (so xdist spreads them and
a failure names its rule)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TESTS = sorted(p for p in HERE.rglob("*.mlir") if "inputs" not in p.parts)
LIT = [sys.executable, "-c", "import sys, lit.main; sys.argv[0] = 'lit'; lit.main.main()"]


def test_the_suite_covers_every_rule() -> None:
    assert len(TESTS) >= 12, [p.name for p in TESTS]


@pytest.mark.parametrize("path", TESTS, ids=[p.stem for p in TESTS])
def test_filecheck(path: Path) -> None:
    result = subprocess.run(
        [*LIT, "-v", str(path)], capture_output=True, text=True, timeout=300, cwd=HERE
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Passed: 1" in result.stdout or "PASS:" in result.stdout, result.stdout
