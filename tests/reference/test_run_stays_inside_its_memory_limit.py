"""`run --memory-limit` bounds everything `run` allocates, its printed summary included: the
child's peak RSS over the CLI's own start-up stays under the limit. The summary reads a result a
chunk at a time (it used to make two float64 copies and a mask: 1.85 GB for a 100 MB int8
result); iota makes its row in the result's type (an int64 `arange` of 5e7 elements was 400 MB
outside the plan)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from fuzz.test_npz_checked_before_inflating import run_measured  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.reference import summary
from convcanon.reference.run import run_hlo_text

MIB = 1 << 20
CONSTANT = (
    "func.func @main() -> tensor<{n}xi8> {{\n"
    "  %0 = stablehlo.constant dense<3> : tensor<{n}xi8>\n  return %0 : tensor<{n}xi8>\n}}\n"
)
IOTA = (
    "func.func @main() -> tensor<{n}x{t}> {{\n"
    "  %0 = stablehlo.iota dim = 0 : tensor<{n}x{t}>\n  return %0 : tensor<{n}x{t}>\n}}\n"
)


def _run(text: str) -> np.ndarray:
    (report,) = run_hlo_text(text, "m.mlir")
    (result,) = report.results
    return np.asarray(result)


def _peak_over_start_up(tmp_path: Path, text: str, limit: str) -> tuple[int, str, int]:
    """(exit code, stdout, peak RSS in bytes above what `run` of a 2-element module peaks at)."""
    module, tiny = tmp_path / "m.mlir", tmp_path / "tiny.mlir"
    module.write_text(text)
    tiny.write_text(CONSTANT.format(n=2))
    _, _, _, start_up = run_measured(["run", str(tiny), "--memory-limit", limit])
    code, stdout, stderr, peak = run_measured(["run", str(module), "--memory-limit", limit])
    assert "Traceback" not in stderr, stderr
    return code, stdout, (peak - start_up) * 1024


def test_the_summary_of_a_100mb_result_stays_inside_200mib(tmp_path: Path):
    code, stdout, extra = _peak_over_start_up(tmp_path, CONSTANT.format(n=100_000_000), "200MiB")
    assert code == 0
    assert "int8[100000000] min 3 max 3 mean 3 first [3, 3, 3, 3, 3, 3, ...]" in stdout
    assert extra < 200 * MIB, f"{extra / MIB:.0f} MiB over start-up"


@pytest.mark.parametrize(
    ("element", "n", "shown"),
    [("i8", 50_000_000, "int8[50000000] min -128 max 127"),
     ("i4", 30_000_000, "int8[30000000] min -8 max 7")],  # i4 wraps a chunk at a time too
)  # fmt: skip
def test_an_iota_stays_inside_100mib(tmp_path: Path, element: str, n: int, shown: str):
    code, stdout, extra = _peak_over_start_up(tmp_path, IOTA.format(n=n, t=element), "100MiB")
    assert code == 0
    assert shown in stdout
    assert extra < 100 * MIB, f"{extra / MIB:.0f} MiB over start-up"


TYPES = [("i8", np.int8), ("ui8", np.uint8), ("i4", ml_dtypes.int4), ("f16", np.float16),
         ("bf16", ml_dtypes.bfloat16), ("i64", np.int64)]  # fmt: skip


@pytest.mark.parametrize(("element", "dtype"), TYPES)
def test_iota_across_chunks_is_the_indices_cast(element: str, dtype: type):
    n = 3 * (1 << 16) + 5
    result = _run(IOTA.format(n=n, t=element))
    with np.errstate(over="ignore"):
        want = np.arange(n).astype(dtype)
    if element == "i4":
        want = (((np.arange(n) + 8) % 16) - 8).astype(dtype)
    np.testing.assert_array_equal(np.asarray(result).astype(np.float64), want.astype(np.float64))


def test_iota_allocates_its_row_not_an_int64_arange():
    n = 4_000_000
    tracemalloc.start()
    try:
        result = _run(IOTA.format(n=n, t="i8"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result[-1] == np.int8(np.int64(n - 1).astype(np.int8))
    assert peak < n + 4 * MIB, peak  # the int8 row and a chunk, not 8 bytes an element


VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.just(0.0))


@given(
    values=st.lists(VALUES, min_size=1, max_size=40),
    repeat=st.sampled_from([1, summary.CHUNK_ELEMENTS // 7 + 1]),
    dtype=st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16, np.int16]),
)
@settings(max_examples=60, deadline=None)
def test_the_chunked_summary_says_what_numpy_says(values: list[float], repeat: int, dtype: type):
    with np.errstate(all="ignore"):
        raw = np.asarray(values * repeat, np.float64)
        array = (
            np.nan_to_num(raw, nan=0, posinf=7, neginf=-7).astype(dtype)
            if dtype is np.int16
            else raw.astype(dtype)
        )
    wide = array.astype(np.float64)
    finite = wide[np.isfinite(wide)]
    line = summary.summarize(array)
    if finite.size:
        words = line.split()
        low, high, mean = (float(words[words.index(key) + 1]) for key in ("min", "max", "mean"))
        assert (low, high) == (float(f"{finite.min():.6g}"), float(f"{finite.max():.6g}")), line
        assert mean == pytest.approx(finite.mean(), rel=1e-5, abs=1e-30), line
    else:
        assert " min " not in line
    if finite.size < wide.size:
        assert f"non-finite {wide.size - finite.size} ({int(np.isnan(wide).sum())} nan)" in line


def test_the_summary_allocates_a_bounded_chunk():
    array = np.arange(8_000_000, dtype=np.float32)
    tracemalloc.start()
    try:
        line = summary.summarize(array)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "min 0 max 8e+06 mean 4e+06" in line, line
    assert peak < 4 * MIB, peak  # two float64 copies would be 128 MB


@pytest.mark.parametrize("shape", [(3, 5), (700_000, 3), (2, 700_000), (4, 1, 400_000)])
def test_a_broadcast_result_is_summarized_without_a_copy_of_it(shape: tuple[int, ...]):
    row = np.arange(shape[-1], dtype=np.float32)
    array = np.broadcast_to(row, shape)  # as iota returns: one row, broadcast
    assert summary.summarize(array) == summary.summarize(np.ascontiguousarray(array))
    tracemalloc.start()
    try:
        summary.summarize(array)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB, peak  # a copy of the (700000, 3) array alone is 8 MB
