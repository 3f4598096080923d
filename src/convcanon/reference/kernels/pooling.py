"""Pooling windows, MIGraphX's and TOSA's alike: a ufunc folded over every window at once (one
strided view of the padded input, no window copy), and the count of each window's taps inside
given bounds (an average's divisor)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from convcanon.reference.kernels import budget


@dataclass(frozen=True)
class Windows:
    """The windows over `axes` of an array: per axis its taps (length, dilation), the stride
    between windows, the begin padding and how many windows there are."""

    axes: tuple[int, ...]
    lengths: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begins: tuple[int, ...]
    out: tuple[int, ...]

    def out_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        out = list(shape)
        for axis, n in zip(self.axes, self.out, strict=True):
            out[axis] = n
        return tuple(out)


def window_reduce(
    x: np.ndarray,
    windows: Windows,
    ufunc: np.ufunc,
    fill: float | int,
    dtype: np.dtype,
    transform: Callable[[np.ndarray], object] | None = None,
) -> np.ndarray:
    """`ufunc` folded in `dtype` over each window's taps, a tap outside `x` (padding) reading
    `fill`; `transform` first rewrites the padded values in place (lpnorm's |x|^p)."""
    low, high = [0] * x.ndim, [0] * x.ndim
    spans = [d * (k - 1) + 1 for k, d in zip(windows.lengths, windows.dilations, strict=True)]
    for axis, span, s, b, o in zip(
        windows.axes, spans, windows.strides, windows.begins, windows.out, strict=True
    ):
        low[axis] = b
        high[axis] = max(0, (o - 1) * s + span - x.shape[axis] - b)
    padded_shape = [n + lo + hi for n, lo, hi in zip(x.shape, low, high, strict=True)]
    out_shape = windows.out_shape(x.shape)
    budget.plan(
        "pooling",
        budget.nbytes(x.shape, dtype),  # the input in `dtype`
        budget.nbytes(padded_shape, dtype),
        2 * budget.nbytes(out_shape, dtype),  # the result, and a temporary as large
    )
    budget.spend("its window taps", math.prod(out_shape) * math.prod(windows.lengths))
    padded = np.pad(x.astype(dtype), list(zip(low, high, strict=True)), constant_values=fill)
    if transform is not None:
        transform(padded)
    view = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=windows.axes)
    index: list[slice] = [slice(None)] * x.ndim
    index += [slice(None, None, d) for d in windows.dilations]
    for axis, s, o in zip(windows.axes, windows.strides, windows.out, strict=True):
        index[axis] = slice(0, (o - 1) * s + 1, s)
    taps = tuple(range(x.ndim, x.ndim + len(windows.axes)))
    return ufunc.reduce(view[tuple(index)], axis=taps)


def tap_counts(
    windows: Windows, ndim: int, limits: Sequence[int], from_zero: bool = True
) -> np.ndarray:
    """Per window, its taps at positions below `limits` (and, `from_zero`, at or past 0) per
    axis, multiplied over the axes: an array that broadcasts against the result."""
    counts = np.ones([1] * ndim, dtype=np.int64)
    for axis, k, s, d, b, o, limit in zip(
        windows.axes,
        windows.lengths,
        windows.strides,
        windows.dilations,
        windows.begins,
        windows.out,
        limits,
        strict=True,
    ):
        positions = np.arange(o)[:, None] * s - b + np.arange(k)[None, :] * d
        inside = positions < limit
        if from_zero:
            inside &= positions >= 0
        shape = [1] * ndim
        shape[axis] = o
        counts = counts * inside.sum(axis=1).reshape(shape)
    return counts
