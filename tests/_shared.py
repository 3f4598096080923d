"""Where the shared data lives (`../shared`: the StableHLO conformance corpus and the seeds).

Tests read it in place (it is not copied into the repo). `CONVCANON_SHARED` overrides the default
`../shared` next to the checkout. An outside user's clone has no such directory: tests that need it
are then skipped with one line saying what is missing (`MISSING`), never silently run on an empty
set. Under `CI=true` a missing directory fails the run instead (tests/conftest.py), so CI can never
pass without the corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONVCANON_SHARED") or REPO.parent / "shared")
CORPUS = SHARED / "corpus" / "stablehlo"
SEEDS = SHARED / "seeds"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

MISSING: str | None = (
    None
    if CORPUS.is_dir() and SEEDS.is_dir()
    else (
        f"shared data not found at {SHARED} (needs corpus/stablehlo/ and seeds/; "
        "set CONVCANON_SHARED to the directory that holds them)"
    )
)

#: Mark for a test that reads `SHARED`: skipped with `MISSING` as the reason when it is absent.
requires_shared = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def skip_module_without_shared() -> None:
    """Call at the top of a test module that reads `SHARED` while it is collected."""
    if MISSING is not None:
        pytest.skip(MISSING, allow_module_level=True)
