"""Kernels that move elements without arithmetic (transpose, broadcast, slice, pad), and the
shape arithmetic of padding and windows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from convcanon.reference.kernels import budget


def transpose(x: np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """`stablehlo.transpose`: result dim i is operand dim permutation[i]."""
    budget.plan("transpose", x.nbytes)
    return np.asarray(np.transpose(x, tuple(permutation)), order="C")


def broadcast_in_dim(
    x: np.ndarray, result_shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> np.ndarray:
    """`stablehlo.broadcast_in_dim`: operand dim i maps to result dim broadcast_dimensions[i]."""
    budget.plan("broadcast_in_dim", budget.nbytes(result_shape, x.dtype))
    shape = [1] * len(result_shape)
    order = sorted(range(len(broadcast_dimensions)), key=lambda i: broadcast_dimensions[i])
    operand = np.transpose(x, order) if order != list(range(x.ndim)) else x
    for i, dim in zip(order, sorted(broadcast_dimensions), strict=True):
        shape[dim] = x.shape[i]
    return np.broadcast_to(operand.reshape(shape), tuple(result_shape)).copy()


def slice_(
    x: np.ndarray, start: Sequence[int], limit: Sequence[int], strides: Sequence[int]
) -> np.ndarray:
    """`stablehlo.slice` (trailing underscore: `slice` is a builtin)."""
    index = tuple(slice(b, e, s) for b, e, s in zip(start, limit, strides, strict=True))
    view = x[index]
    budget.plan("slice", view.nbytes)
    return view.copy()


def pad(
    x: np.ndarray,
    value: np.ndarray | float | int | bool | complex,
    low: Sequence[int],
    high: Sequence[int],
    interior: Sequence[int],
) -> np.ndarray:
    """`stablehlo.pad`: interior padding first, then edge padding; negative edges crop.

    Builds only the result: each operand element lands at `lo + j * (interior + 1)`, and the
    elements a negative edge crops are never placed (no grown intermediate).
    """
    if not any(low) and not any(high) and not any(interior):
        return x
    shape = pad_shape(x.shape, low, high, interior)
    if any(n < 0 for n in shape):
        raise ValueError("negative padding crops more than the dimension holds")
    budget.plan("pad", budget.nbytes(shape, x.dtype))
    out = np.full(shape, np.asarray(value, dtype=x.dtype), dtype=x.dtype)
    source, target = [], []
    for n, lo, step, size in zip(x.shape, low, (i + 1 for i in interior), shape, strict=True):
        first = max(0, -(lo // step)) if lo < 0 else 0  # first element at or after 0
        last = min(n - 1, (size - 1 - lo) // step) if size > lo else -1  # last one before size
        if last < first:
            return out
        source.append(slice(first, last + 1))
        target.append(slice(lo + first * step, lo + last * step + 1, step))
    out[tuple(target)] = x[tuple(source)]
    return out


def pad_shape(
    shape: Sequence[int], low: Sequence[int], high: Sequence[int], interior: Sequence[int]
) -> tuple[int, ...]:
    """The result shape of `pad` (negative entries mean it crops more than there is)."""
    return tuple(
        lo + n + max(n - 1, 0) * i + hi
        for n, lo, hi, i in zip(shape, low, high, interior, strict=True)
    )


def conv_output_extent(padded: int, kernel: int, stride: int, rhs_dilation: int) -> int:
    """Number of window positions along one spatial dim (0 if the dilated window does not fit)."""
    span = (kernel - 1) * rhs_dilation + 1
    if kernel == 0 or padded < span:
        return 0
    return (padded - span) // stride + 1


def dynamic_slice(x: np.ndarray, starts: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """`stablehlo.dynamic_slice`: starts are clamped so the slice lies inside the operand."""
    budget.plan("dynamic_slice", budget.nbytes(sizes, x.dtype))
    begin = [min(max(int(b), 0), n - k) for b, n, k in zip(starts, x.shape, sizes, strict=True)]
    return x[tuple(slice(b, b + k) for b, k in zip(begin, sizes, strict=True))].copy()


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts: Sequence[int]) -> np.ndarray:
    """`stablehlo.dynamic_update_slice`: starts are clamped so the update fits."""
    budget.plan("dynamic_update_slice", x.nbytes)
    begin = [
        min(max(int(b), 0), n - k) for b, n, k in zip(starts, x.shape, update.shape, strict=True)
    ]
    out = x.copy()
    out[tuple(slice(b, b + k) for b, k in zip(begin, update.shape, strict=True))] = update
    return out


def source_indices(n: int, begin: int, size: int, mode: str) -> np.ndarray:
    """For each of `size` output positions along a dim of `n` padded by `begin`, the input
    position it reads: MIGraphX's pad function of `position - begin`, reflect (mirrored about
    the first and last element, period 2(n - 1); a dim of one always reads it) or edge
    (clamped)."""
    shifted = np.arange(size, dtype=np.int64) - begin
    if mode == "edge":
        return np.clip(shifted, 0, n - 1)
    if n <= 1:
        return np.zeros(size, dtype=np.int64)
    period = n - 1
    folded = np.mod(shifted, 2 * period)  # reflect is even and 2(n - 1)-periodic
    return np.where(folded <= period, folded, 2 * period - folded)


OUTER_INDEX_STEPS = 3
"""Steps an element of numpy's outer indexing (`x[np.ix_(...)]`) costs per dim: 1.15 ns (a
4-d pad of 1e6 elements, 4.6 ns an element), where a step stands for half a nanosecond."""


def mirror_pad(x: np.ndarray, begins: Sequence[int], ends: Sequence[int], mode: str) -> np.ndarray:
    """MIGraphX's pad in reflect or edge mode: every output element reads one input element."""
    shape = tuple(n + b + e for n, b, e in zip(x.shape, begins, ends, strict=True))
    budget.plan("pad", budget.nbytes(shape, x.dtype), 8 * sum(shape))
    budget.spend("its index arithmetic", math.prod(shape) * x.ndim * OUTER_INDEX_STEPS)
    picks = [
        source_indices(n, b, size, mode) for n, b, size in zip(x.shape, begins, shape, strict=True)
    ]
    return x[np.ix_(*picks)] if picks else x.copy()
