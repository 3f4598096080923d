"""Kernels that read or write at computed indices: gather, scatter, select_and_scatter."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from convcanon.reference.kernels import budget


def _on_dims(values: np.ndarray, dims: Sequence[int], rank: int) -> np.ndarray:
    """Reshape `values` so that its axes sit on result dims `dims` of a rank-`rank` result."""
    shape = [1] * rank
    for axis, dim in enumerate(dims):
        shape[dim] = values.shape[axis]
    return values.reshape(shape)


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices with the index vector as the last axis (an implicit trailing vector of size 1)."""
    if index_vector_dim == indices.ndim:
        return indices[..., None].astype(np.int64)
    return np.moveaxis(indices, index_vector_dim, -1).astype(np.int64)


INDEX_STEPS = 24
"""Steps an element costs per operand dim it is indexed in: numpy's advanced indexing with
broadcast index arrays takes about 9 ns an element a dim (a rank-6 gather 55 ns an element),
where a step stands for half a nanosecond; counted as an element read and written, a gather
ran 30 to 100 times longer than the work limit allows."""


def _spend_indexing(elements: int, rank: int) -> None:
    """Count the index arithmetic of `elements` elements of a rank-`rank` operand."""
    budget.spend("its index arithmetic", elements * rank * INDEX_STEPS)


def _batch_axis(dim: int, index_vector_dim: int) -> int:
    """The position of indices dim `dim` among the indices' batch dims (index vector removed)."""
    return dim if dim < index_vector_dim else dim - 1


def gather(
    operand: np.ndarray,
    start_indices: np.ndarray,
    *,
    offset_dims: Sequence[int],
    collapsed_slice_dims: Sequence[int],
    operand_batching_dims: Sequence[int],
    start_indices_batching_dims: Sequence[int],
    start_index_map: Sequence[int],
    index_vector_dim: int,
    slice_sizes: Sequence[int],
) -> np.ndarray:
    """`stablehlo.gather`: one advanced-indexing read with start indices clamped into bounds.

    Each operand dim's index is a broadcast sum of its clamped start (on the batch dims), its
    batching position, and its offset within the slice (on its offset dim).
    """
    vectors = _index_vectors(start_indices, index_vector_dim)
    batch_shape = vectors.shape[:-1]
    rank = len(batch_shape) + len(offset_dims)
    batch_dims = [d for d in range(rank) if d not in offset_dims]
    windowed = [
        d
        for d in range(operand.ndim)
        if d not in collapsed_slice_dims and d not in operand_batching_dims
    ]
    shape = [0] * rank
    for axis, dim in enumerate(batch_dims):
        shape[dim] = batch_shape[axis]
    for dim, operand_dim in zip(offset_dims, windowed, strict=True):
        shape[dim] = slice_sizes[operand_dim]
    budget.plan(
        "gather",
        budget.nbytes(shape, operand.dtype),
        budget.nbytes(batch_shape, np.int64) * (len(start_index_map) + 1) + vectors.nbytes,
        operand.ndim * _ITERATOR_BUFFER,
    )
    _spend_indexing(math.prod(shape), operand.ndim)
    index: list[np.ndarray] = []
    for d in range(operand.ndim):
        term: np.ndarray = np.zeros((1,) * rank, np.int64)
        if d in start_index_map:
            start = vectors[..., list(start_index_map).index(d)]
            start = np.clip(start, 0, operand.shape[d] - slice_sizes[d])
            term = term + _on_dims(start, batch_dims, rank)
        if d in operand_batching_dims:
            dim = start_indices_batching_dims[list(operand_batching_dims).index(d)]
            axis = _batch_axis(dim, index_vector_dim)
            term = term + _on_dims(np.arange(batch_shape[axis]), [batch_dims[axis]], rank)
        if d in windowed:
            dim = offset_dims[windowed.index(d)]
            term = term + _on_dims(np.arange(slice_sizes[d]), [dim], rank)
        index.append(np.broadcast_to(term, shape))
    return operand[tuple(index)] if operand.ndim else np.broadcast_to(operand, shape).copy()


Combiner = Callable[..., Sequence[np.ndarray]]
_ITERATOR_BUFFER = 8192 * 8  # numpy's fancy indexing buffers 8192 indices per index array


def scatter(
    operands: Sequence[np.ndarray],
    scatter_indices: np.ndarray,
    updates: Sequence[np.ndarray],
    *,
    update_window_dims: Sequence[int],
    inserted_window_dims: Sequence[int],
    input_batching_dims: Sequence[int],
    scatter_indices_batching_dims: Sequence[int],
    scatter_dims_to_operand_dims: Sequence[int],
    index_vector_dim: int,
    combine: Combiner,
    add: bool = False,
) -> list[np.ndarray]:
    """`stablehlo.scatter`: combine each update element into its operand element.

    As XLA does, an update window that does not fit entirely inside the operand is skipped.
    Updates hitting the same element are combined in update order (`add`: the body is a plain
    addition and `np.add.at` does the same fold).
    """
    first, operand = updates[0], operands[0]
    rank = first.ndim
    vectors = _index_vectors(scatter_indices, index_vector_dim)
    scatter_dims = [d for d in range(rank) if d not in update_window_dims]
    windowed = [
        d
        for d in range(operand.ndim)
        if d not in inserted_window_dims and d not in input_batching_dims
    ]
    budget.plan(
        "scatter",
        sum(o.nbytes for o in operands) + sum(u.nbytes for u in updates),
        first.size * 8 * (operand.ndim + 6),
    )
    _spend_indexing(first.size, operand.ndim)
    valid = np.ones(vectors.shape[:-1], dtype=bool)
    index: list[np.ndarray] = []
    for d in range(operand.ndim):
        term: np.ndarray = np.zeros((1,) * rank, np.int64)
        if d in scatter_dims_to_operand_dims:
            start = vectors[..., list(scatter_dims_to_operand_dims).index(d)]
            extent = first.shape[update_window_dims[windowed.index(d)]] if d in windowed else 1
            valid &= (start >= 0) & (start <= operand.shape[d] - extent)
            term = term + _on_dims(start, scatter_dims, rank)
        if d in input_batching_dims:
            dim = scatter_indices_batching_dims[list(input_batching_dims).index(d)]
            axis = _batch_axis(dim, index_vector_dim)
            term = term + _on_dims(np.arange(vectors.shape[axis]), [scatter_dims[axis]], rank)
        if d in windowed:
            dim = update_window_dims[windowed.index(d)]
            term = term + _on_dims(np.arange(first.shape[dim]), [dim], rank)
        index.append(np.broadcast_to(term, first.shape))
    keep = np.broadcast_to(_on_dims(valid, scatter_dims, rank), first.shape).ravel()
    return _update_at(operands, updates, index, keep, combine, add)


def _update_at(
    operands: Sequence[np.ndarray],
    updates: Sequence[np.ndarray],
    index: Sequence[np.ndarray],
    keep: np.ndarray,
    combine: Combiner,
    add: bool,
) -> list[np.ndarray]:
    """Copies of the operands with each kept update element (`keep`, over the flat updates)
    combined into the operand element `index` (one index array per operand dim) names."""
    if operands[0].ndim:
        flat = np.ravel_multi_index(tuple(i.ravel()[keep] for i in index), operands[0].shape)
    else:
        flat = np.zeros(int(keep.sum()), np.int64)
    results = [o.copy().reshape(-1) for o in operands]
    _combine_at(results, flat, [u.reshape(-1)[keep] for u in updates], combine, add)
    return [r.reshape(o.shape) for r, o in zip(results, operands, strict=True)]


def _combine_at(
    targets: Sequence[np.ndarray],
    flat: np.ndarray,
    values: Sequence[np.ndarray],
    combine: Combiner,
    add: bool,
) -> None:
    """Combine `values` into the flat `targets` at `flat`, in order (`add`: a body that is a
    plain addition of one non-bool target, folded at once by `np.add.at`)."""
    if add and len(targets) == 1 and targets[0].dtype != np.bool_:
        np.add.at(targets[0], flat, values[0])
    else:
        combine_in_rounds(targets, flat, values, combine)


def combine_in_rounds(
    targets: Sequence[np.ndarray],
    flat: np.ndarray,
    values: Sequence[np.ndarray],
    combine: Combiner,
) -> None:
    """`targets[i][flat] = combine(*targets[flat], *values)`, duplicates folded in order.

    Round r combines every value that is the r-th to hit its element, so each body call is
    one whole-array call and duplicate targets still fold one after the other.
    """
    if not flat.size:
        return
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    new_group = np.r_[True, ordered[1:] != ordered[:-1]]
    position = np.arange(flat.size)
    rank = np.empty(flat.size, np.int64)
    rank[order] = position - np.maximum.accumulate(np.where(new_group, position, 0))
    by_round = np.argsort(rank, kind="stable")
    bounds = np.cumsum(np.bincount(rank))
    budget.spend("a call per round of duplicates", len(bounds) * budget.OP_STEPS + flat.size)
    for lo, hi in zip(np.r_[0, bounds[:-1]], bounds, strict=True):
        chosen = by_round[lo:hi]
        where = flat[chosen]
        combined = combine(*(t[where] for t in targets), *(v[chosen] for v in values))
        for target, value in zip(targets, combined, strict=True):
            target[where] = value


def select_and_scatter(
    operand: np.ndarray,
    source: np.ndarray,
    init: np.ndarray,
    *,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    select: Callable[[np.ndarray, np.ndarray], np.ndarray],
    combine: Combiner,
    add: bool = False,
) -> np.ndarray:
    """`stablehlo.select_and_scatter` (max-pool gradients): per window, the element `select`
    prefers (window order, padding never chosen) receives the window's source value."""
    rank = operand.ndim
    osz = source.shape
    budget.plan(
        "select_and_scatter",
        2 * operand.nbytes,
        source.size * (4 * operand.itemsize + 8 * (2 * rank + 6)),
    )
    budget.spend_calls("a call per window tap", math.prod(window_dimensions), source.size)
    best = np.zeros(osz, operand.dtype)
    best_index = np.zeros(osz, np.int64)
    seen = np.zeros(osz, bool)
    for offset in itertools.product(*(range(k) for k in window_dimensions)):
        positions = [
            np.arange(n) * s + k - lo
            for n, s, k, (lo, _) in zip(osz, window_strides, offset, padding, strict=True)
        ]
        inside = [(p >= 0) & (p < d) for p, d in zip(positions, operand.shape, strict=True)]
        clipped = [np.clip(p, 0, d - 1) for p, d in zip(positions, operand.shape, strict=True)]
        valid = np.ones(osz, bool)
        for axis, mask in enumerate(inside):
            valid &= _on_dims(mask, [axis], rank)
        grid = np.ix_(*clipped)
        candidate = operand[grid]
        keep = np.asarray(select(best, candidate), dtype=bool)
        take = valid & (~seen | ~keep)
        best = np.where(take, candidate, best)
        linear = np.ravel_multi_index(tuple(np.broadcast_to(g, osz) for g in grid), operand.shape)
        best_index = np.where(take, linear, best_index)
        seen |= valid
    result = np.full(operand.size, np.asarray(init, dtype=operand.dtype), operand.dtype)
    flat = best_index[seen]
    values = source[seen].astype(operand.dtype)
    _combine_at([result], flat, [values], combine, add)
    return result.reshape(operand.shape)
