"""Reductions with an interpreted body: `reduce` and `reduce_window`."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from convcanon.reference.kernels import budget
from convcanon.reference.kernels.movement import conv_output_extent, pad, pad_shape

ReduceFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def reduce(
    x: np.ndarray,
    init: np.ndarray,
    dimensions: Sequence[int],
    body: ReduceFn,
    ordered: bool = False,
) -> np.ndarray:
    """`stablehlo.reduce` with an arbitrary binary body applied by pairwise tree halving.

    The body is called O(log n) times on whole arrays, so an interpreted region costs little.
    `ordered` folds the elements one at a time in row-major order (the reference's order).
    """
    dims = sorted(dimensions)
    keep = [d for d in range(x.ndim) if d not in dims]
    out_size = math.prod(x.shape[d] for d in keep)
    budget.plan("reduce", 2 * x.size * x.dtype.itemsize, 3 * out_size * x.dtype.itemsize)
    flat = reduced_last(x, dims)
    acc = np.broadcast_to(init, flat.shape[:-1]).astype(x.dtype)
    if ordered:
        return fold_in_order([flat], [acc], lambda a, b: [body(a, b)])[0]
    return body(acc, _tree_reduce(flat, body)) if flat.shape[-1] else acc.copy()


def fold_in_order(
    flats: Sequence[np.ndarray],
    accs: Sequence[np.ndarray],
    body: Callable[..., Sequence[np.ndarray]],
) -> list[np.ndarray]:
    """Fold the last axis of each of `flats` into `accs` one element at a time, in order:
    `body(*accs, *elements)` returns the new accumulators. One whole-array call per element,
    each paid for before the loop starts (a body that computes nothing still costs its call)."""
    length = flats[0].shape[-1]
    budget.spend_calls("a call per reduced element", length, sum(a.size for a in accs))
    folded = list(accs)
    for k in range(length):
        folded = list(body(*folded, *(f[..., k] for f in flats)))
    return folded


def reduced_last(x: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """`x` with the dimensions not in `dims` first, in order, and those in `dims` flattened, in
    the order given, into one last axis. Its length is named, not -1: numpy cannot infer it
    when a kept dimension is 0."""
    keep = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, [*keep, *dims])
    return moved.reshape((*(x.shape[d] for d in keep), math.prod(x.shape[d] for d in dims)))


def _tree_reduce(flat: np.ndarray, body: ReduceFn) -> np.ndarray:
    while flat.shape[-1] > 1:
        half = flat.shape[-1] // 2
        paired = body(flat[..., :half], flat[..., half : 2 * half])
        if flat.shape[-1] % 2:
            paired = np.concatenate([paired, flat[..., 2 * half :]], axis=-1)
        flat = paired
    return flat[..., 0]


def reduce_window(
    xs: Sequence[np.ndarray],
    inits: Sequence[np.ndarray],
    *,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    base_dilations: Sequence[int],
    window_dilations: Sequence[int],
    padding: Sequence[tuple[int, int]],
    body: Callable[..., Sequence[np.ndarray]],
) -> list[np.ndarray]:
    """`stablehlo.reduce_window`: pad with init (after base dilation), then fold the window.

    One body call per window offset, each on the strided view of every window's element at
    that offset: memory is the padded operands plus the results (no window copy), and the
    fold runs in the window's row-major order, as the StableHLO reference does.
    `body(acc_0, ..., acc_n, x_0, ..., x_n)` returns the n new accumulators.
    """
    low, high = [lo for lo, _ in padding], [hi for _, hi in padding]
    interior = [d - 1 for d in base_dilations]
    padded_shape = pad_shape(xs[0].shape, low, high, interior)
    if any(n < 0 for n in padded_shape):
        raise ValueError("negative padding crops more than the dimension holds")
    osz = tuple(
        conv_output_extent(p, k, s, d)
        for p, k, s, d in zip(
            padded_shape, window_dimensions, window_strides, window_dilations, strict=True
        )
    )
    budget.plan(
        "reduce_window",
        sum(budget.nbytes(padded_shape, x.dtype) + 3 * budget.nbytes(osz, x.dtype) for x in xs),
    )
    budget.spend_calls(
        "a call per window tap", math.prod(window_dimensions), len(xs) * math.prod(osz)
    )
    padded = [pad(x, v, low, high, interior) for x, v in zip(xs, inits, strict=True)]
    accs = [
        np.broadcast_to(np.asarray(v, dtype=x.dtype), osz).copy()
        for x, v in zip(xs, inits, strict=True)
    ]
    if not all(osz):
        return accs
    for offset in itertools.product(*(range(k) for k in window_dimensions)):
        index = tuple(
            slice(k * d, k * d + (n - 1) * s + 1, s)
            for k, d, n, s in zip(offset, window_dilations, osz, window_strides, strict=True)
        )
        accs = list(body(*accs, *(x[index] for x in padded)))
    return accs
