"""Integer reduce_sum wraps modulo 2^width as MIGraphX computes it, with no TOSA REDUCE_SUM
partial sum outside its type.

MIGraphX's GPU kernels add in the element type (each step converts back: a wrap), its
reference target adds in int64/uint64 and converts the sum back: both give the sum modulo
2^width. TOSA's REDUCE_SUM REQUIREs every partial sum to fit (past it the result is
unpredictable; IREE wraps): the lowering sums 32-bit values on i64, 64-bit ones as their two
32-bit halves, and narrower ones on i32 only where they cannot overflow it. Judged on IREE and
on our TOSA interpreter (which refuses an overflowing partial sum) against the reference.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import as_signless, assert_close, reference
from .test_integer_overflow_wraps import WIDE, _lowered, _wrapped

pytest.importorskip("iree.runtime")

ROWS, COLUMNS = 3, 6


def _reduce(name: str, element: str, rows: int, columns: int) -> str:
    """`migraphx.NAME` of a rows x columns argument along its columns."""
    t, r = f"<{rows}x{columns}x{element}, {columns}x1>", f"<{rows}x1x{element}, 1x1>"
    return (
        f"func.func @main(%a: !migraphx.shaped{t}) -> !migraphx.shaped{r} {{\n"
        f"  %r = migraphx.{name} %a {{axes = [1]}} : {t} -> {r}\n"
        f"  return %r : !migraphx.shaped{r}\n"
        "}\n"
    )


@cache
def _compiled(name: str, element: str, rows: int, columns: int) -> tuple[str, bytes]:
    from convcanon.verify.iree_tosa import compile_tosa_text

    tosa_text = _lowered(_reduce(name, element, rows, columns))
    return tosa_text, compile_tosa_text(tosa_text)


@st.composite
def _rows(draw: st.DrawFn, element: str) -> np.ndarray:
    """Rows of the extremes (each row's sum overflows the type at its first steps) and drawn
    values, the extremes always in."""
    info = np.iinfo(WIDE[element])
    low, high = int(info.min), int(info.max)
    middle = low + (high - low + 1) // 2  # the signed minimum's bits in an unsigned type
    edge = st.sampled_from([low, high, low + 1, high - 1, middle, middle - 1, 0, 1])
    drawn = draw(
        st.lists(edge | st.integers(low, high), min_size=COLUMNS, max_size=COLUMNS * (ROWS - 2))
    )
    drawn += [0] * (COLUMNS * (ROWS - 2) - len(drawn))
    return np.array([high] * COLUMNS + [low] * COLUMNS + drawn, dtype=WIDE[element]).reshape(
        ROWS, COLUMNS
    )


def _check(name: str, element: str, values: np.ndarray, truth: list[int]) -> None:
    from convcanon.verify.iree_tosa import run_vmfb

    rows, columns = values.shape
    flat = [as_signless(values.reshape(-1))]
    expected = reference(_reduce(name, element, rows, columns), [values.reshape(-1)])
    assert expected[0].reshape(-1).tolist() == truth
    tosa_text, vmfb = _compiled(name, element, rows, columns)
    assert_close(run_vmfb(vmfb, "main", flat), expected)
    assert_close(reference(tosa_text, flat), expected)


@pytest.mark.parametrize("element", list(WIDE))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_reduce_sum_wraps_as_in_migraphx(element: str, data: st.DataObject):
    values = data.draw(_rows(element))
    dtype = WIDE[element]
    exact = values.astype(object).sum(axis=1)
    _check(
        "reduce_sum", element, values, _wrapped(exact, dtype.itemsize * 8, np.iinfo(dtype).min < 0)
    )


@pytest.mark.parametrize("element", ["si16", "ui16"])
def test_a_long_narrow_sum_wraps_without_overflowing_i32(element: str):
    """More values than i32 holds the sum of (70000 16-bit extremes): summed on i64 and
    narrowed back."""
    info = np.iinfo(WIDE[element])
    columns = 70000
    rng = np.random.default_rng(columns)
    values = np.stack(
        [
            np.full(columns, info.min),
            np.full(columns, info.max),
            rng.integers(int(info.min), int(info.max), columns, endpoint=True),
        ]
    ).astype(WIDE[element])
    exact = values.astype(np.int64).sum(axis=1)
    _check("reduce_sum", element, values, _wrapped(exact, info.bits, info.min < 0))


def _truncated(a: int, b: int) -> int:
    """a / b rounded toward zero, as C++ divides."""
    quotient = abs(a) // b
    return quotient if a >= 0 else -quotient


def _gpu_means(values: np.ndarray, element: str) -> list[int]:
    """MIGraphX's GPU target: rewrite_reduce converts bytes, and 16-bit values when the count
    is at least a quarter of the type's maximum, to int32; the sum wraps in that type (else the
    element type), `div` by the count truncates, and `convert` wraps back."""
    info = np.iinfo(WIDE[element])
    count = values.shape[1]
    bits, signed = info.bits, info.min < 0
    if bits <= 8 or (bits == 16 and 4 * count >= info.max):
        bits, signed = 32, True
    sums = _wrapped(values.astype(object).sum(axis=1), bits, signed)
    means = [_truncated(int(s), count) for s in sums]
    return _wrapped(np.array(means, dtype=object), info.bits, info.min < 0)


MEAN_TYPES = [element for element in WIDE if not element.endswith("64")]


@pytest.mark.parametrize("element", MEAN_TYPES)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_reduce_mean_divides_the_sum_the_gpu_target_wraps(element: str, data: st.DataObject):
    """Integer reduce_mean is undefined where the sum leaves the type: MIGraphX's reference
    target sums in 64 bits (the exact mean), its GPU target (taken here) wraps the sum in the
    type (16-bit with few values, 32-bit) or in int32 (bytes) before it divides. The lowering
    summed on i32 and divided: si16 30000 and 30000 gave 30000 where the GPU gives -2768."""
    values = data.draw(_rows(element))
    _check("reduce_mean", element, values, _gpu_means(values, element))


@pytest.mark.parametrize("element", ["si16", "ui16"])
def test_a_16_bit_mean_of_many_values_sums_on_int32(element: str):
    """From a quarter of the type's maximum values on, MIGraphX's GPU sums 16-bit values in
    int32 (the exact mean); below it in the type (wrapping)."""
    info = np.iinfo(WIDE[element])
    for columns in ((int(info.max) + 3) // 4 - 1, (int(info.max) + 3) // 4):
        rng = np.random.default_rng(columns)
        values = np.stack(
            [
                np.full(columns, info.max),
                rng.integers(int(info.min), int(info.max), columns, endpoint=True),
            ]
        ).astype(WIDE[element])
        _check("reduce_mean", element, values, _gpu_means(values, element))
