"""Make `tests/` importable as a source of shared test helpers (`_shared`), whatever the layout of
the test packages below it (some are packages, some are plain directories)."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
