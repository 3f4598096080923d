"""A reader child has time in proportion to its input: jaxlib's bytecode reader loops forever on
some damaged bytecode, which waited out a flat 300 s before it was reported.

The fixture is the example CNN's MLIR bytecode with one byte flipped (byte 58, 0x93 -> 0x7f),
found by flipping bytes one at a time: jaxlib's reader spins on it without end."""

from __future__ import annotations

from pathlib import Path

from cli_support import FIXTURES, Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st

from convcanon.fileio.module_input import (
    READER_FLOOR_SECONDS,
    READER_SECONDS_PER_MB,
    reader_budget,
)

HANGS = FIXTURES / "cnn_bytecode_that_hangs_the_reader.mlirbc"


def test_a_small_input_gets_the_floor_and_a_large_one_its_share() -> None:
    assert READER_FLOOR_SECONDS == 10.0 and READER_SECONDS_PER_MB == 10.0
    assert reader_budget(0) == 10.0
    assert reader_budget(HANGS.stat().st_size) == 10.0
    assert reader_budget(1_000_000) == 10.0
    assert reader_budget(1_863_503) == 19.0  # bench's resnet-mix-100k as bytecode
    assert reader_budget(1 << 30) == 10_738.0  # the default input size limit


@given(st.integers(0, 1 << 40), st.integers(0, 1 << 40))
def test_the_budget_grows_with_the_input_and_covers_its_share(a: int, b: int) -> None:
    small, large = sorted((a, b))
    assert reader_budget(small) <= reader_budget(large)
    assert reader_budget(large) >= max(READER_FLOOR_SECONDS, large * READER_SECONDS_PER_MB / 1e6)
    assert reader_budget(large) == int(reader_budget(large))


def test_a_reader_that_hangs_is_stopped_at_the_budget_with_a_diagnostic(
    opt: Runner, tmp_path: Path
) -> None:
    out = tmp_path / "out.mlir"
    size = HANGS.stat().st_size
    done = opt(HANGS, "-o", out)
    assert done.code == 1
    assert done.err == (
        f"{HANGS}: error: MLIR's bytecode reader did not finish in 10 s, the time allowed for"
        f" {size} bytes (10 s a MB, at least 10 s); the file may be damaged\n"
    )
    assert not out.exists() and list(tmp_path.iterdir()) == []
