"""Byte sizes and counts on the command line are read exactly and refused past int64 as a usage
error: `--max-input-size` or `--memory-limit` of 400 digits was a float overflow traceback (and
any count over 2^53 lost its last digits), `--mlir-elide-elementsattrs-if-larger 2^63` a
TypeError traceback from MLIR's printer."""

from __future__ import annotations

from fractions import Fraction

import pytest
from cli_support import CNN, Runner  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st

from convcanon.diagnostics import UsageError
from convcanon.fileio.limits import INT64_MAX, parse_byte_size

HUGE = "9" * 400


@pytest.mark.parametrize(
    ("command", "argv", "message"),
    [
        ("opt", [CNN, "--max-input-size", HUGE], "bad input size limit"),
        ("opt", [CNN, "--max-input-size", "9" * 5000 + ".5GiB"], "bad input size limit"),
        ("opt", [CNN, "--max-input-size", str(INT64_MAX + 1)], "at most 9223372036854775807"),
        ("cc", ["run", CNN, "--memory-limit", HUGE], "bad memory limit"),
        ("cc", ["graph", CNN, "--format", "dot", "-o", "-", "--memory-limit", HUGE], "memory"),
        ("cc", ["explain", CNN, "--max-input-size", f"{HUGE}TiB"], "bad input size limit"),
        (
            "opt",
            [CNN, "--mlir-elide-elementsattrs-if-larger", str(INT64_MAX + 1)],
            "must be an integer >= 0 and <= 9223372036854775807",
        ),
    ],
)
def test_a_value_past_int64_is_a_usage_error(
    opt: Runner, cc: Runner, command: str, argv: list[object], message: str
) -> None:
    result = (opt if command == "opt" else cc)(*argv)
    assert result.code == 2
    assert result.err.startswith("error: ") and result.err.count("\n") == 1
    assert message in result.err


def test_the_largest_elide_limit_prints(opt: Runner) -> None:
    assert opt(CNN, "--mlir-elide-elementsattrs-if-larger", str(INT64_MAX)).code == 0


UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kb": 1000, "TiB": 1 << 40}


@given(
    whole=st.integers(0, INT64_MAX),
    fraction=st.text(alphabet="0123456789", max_size=12),
    unit=st.sampled_from(sorted(UNITS)),
)
def test_a_size_is_read_exactly(whole: int, fraction: str, unit: str) -> None:
    text = f"{whole}.{fraction}{unit}" if fraction else f"{whole}{unit}"
    exact = int(Fraction(f"{whole}.{fraction or 0}") * UNITS[unit])
    if 1 <= exact <= INT64_MAX:
        assert parse_byte_size(text, "size") == exact
    else:
        with pytest.raises(UsageError, match="must be at (least one byte|most)"):
            parse_byte_size(text, "size")
