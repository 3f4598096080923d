"""Where the project's shared data lives (`../shared`: the StableHLO corpus and the seeds).

Tests read it in place (it is not copied into the repo). `CONVCANON_SHARED` overrides the default
`../shared` next to the checkout; a missing directory is an error, never a silently empty test set.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONVCANON_SHARED") or REPO.parent / "shared")

if not (SHARED / "corpus" / "stablehlo").is_dir():
    raise RuntimeError(
        f"shared data not found at {SHARED} (expected corpus/stablehlo and seeds/); "
        "set CONVCANON_SHARED to the directory that holds them"
    )
