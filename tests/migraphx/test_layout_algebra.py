"""Reading a flat buffer through the layout algebra equals as_strided; writing inverts it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from convcanon.migraphx import layout


@st.composite
def layouts(draw: st.DrawFn) -> tuple[list[int], list[int], int]:
    """Random lens/strides built from a memory order, per-dim gaps, broadcasts and size-1 dims.

    Returns (lens, strides, flat size implied by the construction).
    """
    rank = draw(st.integers(0, 4))
    lens = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    broadcast = [n > 1 and draw(st.booleans()) and draw(st.booleans()) for n in lens]
    real = [d for d in range(rank) if lens[d] > 1 and not broadcast[d]]
    order = draw(st.permutations(real))  # outermost first
    strides = [0] * rank
    for d in range(rank):
        if lens[d] == 1:
            strides[d] = draw(st.integers(0, 50))  # size-1 dims: any stride, layout-neutral
    running = 1
    for position, d in enumerate(reversed(order)):
        strides[d] = running
        outermost = position == len(order) - 1
        gap = 0 if outermost else draw(st.integers(0, 2))
        running *= lens[d] + gap
    return lens, strides, running


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_read_equals_as_strided(case: tuple[list[int], list[int], int]) -> None:
    lens, strides, size = case
    assert layout.flat_size(lens, strides) == size
    buffer = np.arange(size, dtype=np.float32) + 1
    expected = as_strided(buffer, shape=lens, strides=[s * buffer.itemsize for s in strides])
    np.testing.assert_array_equal(layout.read_buffer(buffer, lens, strides), expected)


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_write_then_read_round_trips_and_zero_fills_gaps(
    case: tuple[list[int], list[int], int],
) -> None:
    lens, strides, size = case
    if layout.broadcast_dims(lens, strides):
        with pytest.raises(layout.LayoutError, match="broadcast"):
            layout.write_buffer(np.ones(lens, np.float32), lens, strides)
        return
    value = np.arange(1, math.prod(lens) + 1, dtype=np.float32).reshape(lens)
    buffer = layout.write_buffer(value, lens, strides)
    assert buffer.shape == (size,)
    np.testing.assert_array_equal(layout.read_buffer(buffer, lens, strides), value)
    assert np.count_nonzero(buffer) == value.size  # every other slot is a zero-filled gap


def test_standard_layout_is_a_plain_reshape() -> None:
    """Packed row-major strides (size-1 dims aside) are memory in logical order, no gaps."""
    for lens, strides in (([2, 3, 4], layout.standard_strides([2, 3, 4])), ([2, 1, 4], [4, 99, 1])):
        mem = layout.memory_layout(lens, strides)
        assert (mem.perm, mem.mem_shape) == (tuple(range(len(lens))), tuple(lens))
    assert layout.memory_layout([2, 3], [1, 2]).perm == (1, 0)  # column-major
    assert layout.broadcast_dims([2, 3], [1, 0]) == (1,)
    assert layout.memory_layout([2, 3], [4, 1]).mem_shape == (2, 4)  # a gap after each row


def test_nhwc_permutation_and_memory_shape() -> None:
    lens, strides = [1, 16, 4, 4], [256, 1, 64, 16]
    mem = layout.memory_layout(lens, strides)
    assert mem.perm == (0, 2, 3, 1)
    assert mem.mem_shape == (1, 4, 4, 16)
    assert layout.stride_permutation([2, 16, 3, 3], [144, 1, 48, 16]) == (0, 2, 3, 1)


def test_broadcast_dims_gaps_and_sizes() -> None:
    assert layout.broadcast_dims([4, 3, 1], [0, 1, 0]) == (0,)
    assert layout.memory_layout([4, 3], [0, 1]).mem_shape == (1, 3)
    assert layout.flat_size([4, 3], [0, 1]) == 3
    assert layout.memory_layout([4, 3], [5, 1]).mem_shape == (4, 5)
    assert layout.flat_size([], []) == 1


@pytest.mark.parametrize(
    ("lens", "strides", "reason"),
    [
        ([3, 2], [2, 6], "smallest non-zero stride is 2"),
        ([3, 2], [1, 2], "overlap"),
        ([3, 2], [1, 1], "overlap"),
        ([4, 3], [7, 2], "smallest non-zero stride"),
        ([2, 3, 2], [9, 2, 1], "not a multiple"),
        ([2, 3], [3], "2 dims but 1 strides"),
        ([2, 3], [3, -1], "strides must be >= 0"),
    ],
)
def test_unrepresentable_layouts_say_why(lens: list[int], strides: list[int], reason: str) -> None:
    message = layout.check_layout(lens, strides)
    assert message is not None and reason in message
