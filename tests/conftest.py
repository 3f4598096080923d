"""Make `tests/` importable as a source of shared test helpers (`_shared`), whatever the layout of
the test packages below it (some are packages, some are plain directories); say once what is
skipped when the shared corpus is absent, and refuse to run without it under `CI=true`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from _shared import IN_CI, MISSING  # noqa: E402  # pyright: ignore[reportMissingImports]

# Under CI the property tests draw the same examples every run, so a CI failure reproduces with
# `CI=true` locally; elsewhere each run explores new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


def pytest_sessionstart(session: pytest.Session) -> None:
    """CI must test against the corpus: a CI run without it fails before collecting anything."""
    if MISSING is not None and IN_CI:
        raise pytest.UsageError(f"CI=true and {MISSING}")


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001  # pytest's TerminalReporter
    if MISSING is not None:
        terminalreporter.write_line(f"corpus tests skipped: {MISSING}")
