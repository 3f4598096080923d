"""The hint a parse error gets (`first_line`) and `--verify-diagnostics`' comments read the text a
line at a time: both made a list of every line (`splitlines()`, `split("\\n")`), 4x a file of
short lines (412 MB for a 100 MB file, to name its first line)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from convcanon.diagnostic_verifier import expectations
from convcanon.ir_kind import first_line

SHORT_LINES = "xx\n" + "a\n" * 2_000_000  # 4 MB; its list of lines was ~110 MB


def _peak(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_first_line_allocates_the_line_only() -> None:
    assert _peak(lambda: first_line(SHORT_LINES)) < 100_000


def test_expectations_hold_a_line_at_a_time() -> None:
    assert _peak(lambda: expectations(SHORT_LINES, "m.mlir")) < 1_000_000


@given(st.text(alphabet="ab \t\n\r\x0b\x1c\x85\u2028", max_size=30))
def test_first_line_is_the_first_line_that_is_not_blank(text: str) -> None:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    assert first_line(text) == (line if len(line) <= 40 else line[:37] + "...")


def test_below_on_the_last_line_expects_it() -> None:
    found, _ = expectations("%0 = x\n// expected-error @below {{y}}", "m.mlir", first_line=7)
    assert [(e.line, e.text) for e in found] == [(8, "y")]
