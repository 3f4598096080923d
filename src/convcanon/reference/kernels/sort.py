"""`stablehlo.sort` with an interpreted comparator."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from convcanon.reference.kernels import budget

Less = Callable[..., np.ndarray]


def sort(operands: Sequence[np.ndarray], dimension: int, less: Less) -> list[np.ndarray]:
    """`stablehlo.sort` with an arbitrary comparator, stable, by a whole-array merge sort.

    Runs of width w merge pairwise; an element's place in the merged run is its place in its
    own run plus how many elements of the other run go before it, found by a binary search of
    all elements at once. So the comparator is called O(log^2 n) times on whole arrays.
    `less(a0, b0, a1, b1, ...)` is the comparator on elementwise pairs of every operand.
    """
    budget.plan("sort", 4 * sum(o.nbytes for o in operands), 24 * 8 * operands[0].size)
    length = operands[0].shape[dimension] if operands[0].ndim else 1
    levels = max(length - 1, 0).bit_length()  # merge widths 1, 2, 4, ... below the length
    # level j's binary search takes j + 2 rounds of two comparator calls and ~10 other
    # whole-array ops on every operand
    calls = levels * (levels + 3)
    budget.spend_calls("its comparator calls", calls, 10 * sum(o.size for o in operands))
    moved = [np.moveaxis(o, dimension, -1).copy() for o in operands]
    n = moved[0].shape[-1]
    rows = moved[0].shape[:-1]
    position = np.broadcast_to(np.arange(n), (*rows, n))
    width = 1
    while width < n:
        start = position // (2 * width) * (2 * width)
        in_left = position - start < width
        own = np.where(in_left, position - start, position - start - width)
        other_base = np.where(in_left, start + width, start)
        other_len = np.where(in_left, np.clip(n - start - width, 0, width), width)
        lo = np.zeros_like(position)
        hi = other_len.copy()
        for _ in range(width.bit_length() + 1):
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            probe = np.clip(other_base + mid, 0, n - 1)
            others = [np.take_along_axis(m, probe, axis=-1) for m in moved]
            # left element x: count right y with y < x; right element y: count left x with !(y < x)
            pairs_left = [v for m, o in zip(moved, others, strict=True) for v in (o, m)]
            pairs_right = [v for m, o in zip(moved, others, strict=True) for v in (m, o)]
            before_left = np.asarray(less(*pairs_left), dtype=bool)
            before_right = ~np.asarray(less(*pairs_right), dtype=bool)
            goes_before = np.where(in_left, before_left, before_right)
            step = active & goes_before
            lo = np.where(step, mid + 1, lo)
            hi = np.where(active & ~goes_before, mid, hi)
        target = start + own + lo
        for i, m in enumerate(moved):
            out = np.empty_like(m)
            np.put_along_axis(out, target, m, axis=-1)
            moved[i] = out
        width *= 2
    return [np.moveaxis(m, -1, dimension) for m in moved]
