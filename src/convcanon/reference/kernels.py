"""numpy kernels with StableHLO semantics, shared by the HLO and the migraphx/TOSA interpreters.

Every kernel works on whole arrays (strided views, im2col + batched matmul): no per-element Python
loops, so a ResNet-sized forward pass runs in seconds. Kernels never mutate their inputs.

Memory: every kernel states its planned peak (result and intermediates) to `plan` before it
allocates anything; under `memory_limit(n)` a plan over n bytes raises `OverBudget`, which the
interpreters turn into a located "out of memory" diagnostic. Hostile shapes (a pad that grows by
1e8 and crops it again, an lhs dilation of 1e6) are refused instead of eating the machine.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from convcanon.records import NamedTuple

Spec = tuple[int, int, tuple[int, ...]]  # (batch-or-in-feature dim, feature dim, spatial dims)


# -- memory budget -------------------------------------------------------------------------------


class OverBudget(MemoryError):
    """A kernel's planned peak is over the memory limit (raised before the kernel allocates)."""


_LIMIT: ContextVar[int | None] = ContextVar("convcanon_memory_limit", default=None)


@contextmanager
def memory_limit(limit: int | None) -> Iterator[None]:
    """Run kernels under a byte limit on each kernel's planned peak (None: no limit)."""
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def current_limit() -> int | None:
    """The byte limit kernels run under (None outside `memory_limit`)."""
    return _LIMIT.get()


def nbytes(shape: Sequence[int], dtype: Any) -> int:
    """Bytes of a C-contiguous array of `shape` and `dtype` (no allocation)."""
    return math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize


def plan(what: str, *buffers: int) -> int:
    """Refuse a kernel whose buffers (result and intermediates, in bytes) exceed the limit.

    Kernels call this with everything they will hold at once, before allocating any of it;
    the sum is an upper bound of their peak (checked against tracemalloc in the tests).
    """
    total = sum(buffers)
    limit = _LIMIT.get()
    if limit is not None and total > limit:
        raise OverBudget(f"{what} needs {total} bytes, over the memory limit of {limit}")
    return total


# -- layout helpers ------------------------------------------------------------------------------


def transpose(x: np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """`stablehlo.transpose`: result dim i is operand dim permutation[i]."""
    plan("transpose", x.nbytes)
    return np.asarray(np.transpose(x, tuple(permutation)), order="C")


def broadcast_in_dim(
    x: np.ndarray, result_shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> np.ndarray:
    """`stablehlo.broadcast_in_dim`: operand dim i maps to result dim broadcast_dimensions[i]."""
    plan("broadcast_in_dim", nbytes(result_shape, x.dtype))
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
    plan("slice", view.nbytes)
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
    plan("pad", nbytes(shape, x.dtype))
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


# -- dtype policy --------------------------------------------------------------------------------


def accumulation_dtype(*dtypes: np.dtype) -> np.dtype:
    """Ints accumulate in int64, floats in at least float32 (f64 stays f64), complex likewise."""
    kinds = {d.kind for d in dtypes}
    if "c" in kinds:
        wide = any(d == np.complex128 or d.itemsize >= 8 and d.kind == "f" for d in dtypes)
        return np.dtype(np.complex128 if wide else np.complex64)
    if kinds & {"f", "V"} or any(d.kind not in "iub" for d in dtypes):
        wide = any(d.itemsize >= 8 for d in dtypes if d.kind == "f")
        return np.dtype(np.float64 if wide else np.float32)
    return np.dtype(np.int64)


def cast_result(x: np.ndarray, dtype: np.dtype | None, acc: np.dtype) -> np.ndarray:
    """Cast an accumulator to the result type (ints wrap modulo 2^bits, bools are `!= 0`)."""
    target = np.dtype(dtype) if dtype is not None else None
    if target is None:
        return x
    if target == np.bool_:
        return x != 0
    if acc.kind == "i" and target.kind in "iu":
        return x.astype(target)  # two's complement wrap-around, as StableHLO specifies
    return x.astype(target)


def _matmul(a: np.ndarray, b: np.ndarray, ordered: bool) -> np.ndarray:
    """Batched (g, m, k) @ (g, k, n); `ordered` accumulates k sequentially (no BLAS blocking)."""
    if not ordered or a.dtype.kind not in "fc":
        return np.matmul(a, b)
    acc = np.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
    for j in range(a.shape[2]):
        acc += a[:, :, j, None] * b[:, None, j, :]
    return acc


# -- dot_general -----------------------------------------------------------------------------------


def dot_general(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    lhs_batch: Sequence[int],
    rhs_batch: Sequence[int],
    lhs_contracting: Sequence[int],
    rhs_contracting: Sequence[int],
    preferred_dtype: np.dtype | None = None,
    ordered: bool = False,
) -> np.ndarray:
    """`stablehlo.dot_general`: result dims are batch, lhs free, rhs free (in operand order).

    `ordered` sums the contracting dims one product at a time in row-major order, rounding to
    the operand precision after every step, as the StableHLO reference interpreter does.
    """
    lhs_free = [d for d in range(lhs.ndim) if d not in lhs_batch and d not in lhs_contracting]
    rhs_free = [d for d in range(rhs.ndim) if d not in rhs_batch and d not in rhs_contracting]
    acc = accumulation_dtype(lhs.dtype, rhs.dtype)
    if ordered and lhs.dtype.kind in "fc":
        acc = np.result_type(lhs.dtype, rhs.dtype)
    batch_shape = [lhs.shape[d] for d in lhs_batch]
    lf_shape = [lhs.shape[d] for d in lhs_free]
    rf_shape = [rhs.shape[d] for d in rhs_free]
    k = math.prod(lhs.shape[d] for d in lhs_contracting)
    b = math.prod(batch_shape)
    out_size = b * math.prod(lf_shape) * math.prod(rf_shape)
    plan(
        "dot_general",
        (lhs.size + rhs.size + 2 * out_size) * acc.itemsize,
        out_size * np.dtype(preferred_dtype or acc).itemsize,
    )
    a = np.transpose(lhs, [*lhs_batch, *lhs_free, *lhs_contracting]).astype(acc, copy=False)
    c = np.transpose(rhs, [*rhs_batch, *rhs_contracting, *rhs_free]).astype(acc, copy=False)
    out = np.matmul(a.reshape(b, math.prod(lf_shape), k), c.reshape(b, k, math.prod(rf_shape)))
    out = out.reshape(*batch_shape, *lf_shape, *rf_shape)
    return cast_result(out, preferred_dtype, acc)


# -- convolution ---------------------------------------------------------------------------------

IM2COL_CHUNK_BYTES = 64 << 20
"""Scratch of one im2col chunk: a conv copies at most this much of its windows at a time (or one
output position's window, if larger), so its peak is bounded by operands and result."""


def _chunk_shape(rows: Sequence[int], row_bytes: int, budget: int) -> tuple[int, int]:
    """(axis, step): whole dims after `axis`, `step` indices of it per chunk, within `budget`
    (at least one row per chunk)."""
    for axis in range(len(rows)):
        inner = math.prod(rows[axis + 1 :]) * row_bytes
        if inner <= budget:
            return axis, max(1, min(rows[axis], budget // max(inner, 1)))
    return max(len(rows) - 1, 0), 1


def im2col_chunk_bytes(rows: Sequence[int], row_bytes: int, budget: int | None = None) -> int:
    """Bytes of the largest im2col chunk over `rows` (groups, batch, output positions...) of
    `row_bytes` each: what a conv holds as scratch beyond its operands and result."""
    if not rows or 0 in rows:
        return 0
    axis, step = _chunk_shape(rows, row_bytes, IM2COL_CHUNK_BYTES if budget is None else budget)
    return step * math.prod(rows[axis + 1 :]) * row_bytes


def im2col_chunks(
    rows: Sequence[int], row_bytes: int, budget: int | None = None
) -> Iterator[tuple[int | slice, ...]]:
    """Index tuples into (rows..., window) covering `rows` in chunks of at most `budget` bytes
    (IM2COL_CHUNK_BYTES by default): leading dims one index at a time, then a slice, then whole
    dims; the first index is always a slice (the group dim stays a batch dim)."""
    if not rows or 0 in rows:
        return
    axis, step = _chunk_shape(rows, row_bytes, IM2COL_CHUNK_BYTES if budget is None else budget)
    for outer in itertools.product(*(range(n) for n in rows[:axis])):
        for start in range(0, rows[axis], step):
            index: tuple[int | slice, ...] = (*outer, slice(start, start + step))
            if axis:  # keep the group dim as a length-1 batch dim
                index = (slice(outer[0], outer[0] + 1), *index[1:])
            yield index


def conv_output_extent(padded: int, kernel: int, stride: int, rhs_dilation: int) -> int:
    """Number of window positions along one spatial dim (0 if the dilated window does not fit)."""
    span = (kernel - 1) * rhs_dilation + 1
    if kernel == 0 or padded < span:
        return 0
    return (padded - span) // stride + 1


class ConvAttributes(NamedTuple):
    """What a convolution does besides its operands, as `stablehlo.convolution` spells it; the
    layouts are specs: lhs (batch, feature, spatial...), rhs (input feature, output feature,
    spatial...), result (batch, feature, spatial...)."""

    window_strides: Sequence[int]
    padding: Sequence[tuple[int, int]]
    lhs_dilation: Sequence[int]
    rhs_dilation: Sequence[int]
    window_reversal: Sequence[bool]
    lhs_spec: Spec
    rhs_spec: Spec
    out_spec: Spec
    feature_group_count: int = 1
    batch_group_count: int = 1


def conv_general(
    lhs: np.ndarray,
    rhs: np.ndarray,
    conv: ConvAttributes,
    preferred_dtype: np.dtype | None = None,
    ordered: bool = False,
) -> np.ndarray:
    """`stablehlo.convolution` in full generality, as im2col + batched matmuls, the im2col copy
    made in chunks of at most IM2COL_CHUNK_BYTES (whole groups, batch items or output rows).

    The result has the accumulated value cast to `preferred_dtype` (default: the lhs element
    type). `ordered`: see `dot_general`."""
    acc = accumulation_dtype(lhs.dtype, rhs.dtype)
    if ordered and lhs.dtype.kind in "fc":
        acc = np.result_type(lhs.dtype, rhs.dtype)
    result = np.dtype(preferred_dtype or lhs.dtype)
    _plan_conv(lhs, rhs, acc, result, conv)
    x, w = _canonical_operands(lhs, rhs, conv, acc)
    grouped, groups = _grouped_input(x, w, conv)
    windows = _windows(grouped, w.shape[2:], conv)
    out = _window_products(windows, w, groups, acc, ordered)
    return cast_result(_in_out_layout(out, conv.out_spec), result, acc)


class _Groups(NamedTuple):
    """How a conv's features and batch split into groups (feature or batch groups)."""

    number: int
    batch: int  # batch items of a group
    in_features: int  # input features of a group
    out_features: int  # output features of a group


def _canonical_operands(
    lhs: np.ndarray, rhs: np.ndarray, conv: ConvAttributes, acc: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """lhs as (N, C, S...), padded and lhs-dilated, rhs as (O, I, K...) with its reversed dims
    flipped, both in the accumulation type."""
    x = np.transpose(lhs, (conv.lhs_spec[0], conv.lhs_spec[1], *conv.lhs_spec[2]))
    w = np.transpose(rhs, (conv.rhs_spec[1], conv.rhs_spec[0], *conv.rhs_spec[2]))
    x, w = x.astype(acc, copy=False), w.astype(acc, copy=False)
    flips = tuple(2 + i for i, r in enumerate(conv.window_reversal) if r)
    if flips:
        w = np.flip(w, flips)
    x = pad(
        x,
        0,
        [0, 0, *(lo for lo, _ in conv.padding)],
        [0, 0, *(hi for _, hi in conv.padding)],
        [0, 0, *(d - 1 for d in conv.lhs_dilation)],
    )
    return x, w


def _grouped_input(
    x: np.ndarray, w: np.ndarray, conv: ConvAttributes
) -> tuple[np.ndarray, _Groups]:
    """The input as (groups, batch, features, S...): feature groups split its features, batch
    groups its batch."""
    n, c = x.shape[:2]
    o, ci = w.shape[:2]
    features, batches = conv.feature_group_count, conv.batch_group_count
    count = features * batches
    if features > 1:
        cg = c // features
        grouped = x.reshape(n, features, cg, *x.shape[2:]).swapaxes(0, 1)
        ng = n
    else:
        ng = n // batches
        cg = c
        grouped = x.reshape(batches, ng, c, *x.shape[2:])
    if ci != cg or o % count:
        raise ValueError(
            f"conv feature counts do not match (lhs {c}, rhs {ci}x{o}, groups {count})"
        )
    return np.asarray(grouped, order="C"), _Groups(count, ng, cg, o // count)


def _windows(grouped: np.ndarray, kernel: Sequence[int], conv: ConvAttributes) -> np.ndarray:
    """Every window of the grouped input, (groups, batch, out positions..., features,
    kernel...), as a strided view: nothing is copied."""
    spatial = len(kernel)
    strides, dilation = conv.window_strides, conv.rhs_dilation
    out = tuple(
        conv_output_extent(p, k, s, d)
        for p, k, s, d in zip(grouped.shape[3:], kernel, strides, dilation, strict=True)
    )
    st = grouped.strides
    # a dim of extent 1 takes no step: a stride or dilation near int64's limit there (valid, as
    # one window or one tap never steps) would overflow the byte stride
    return as_strided(
        grouped,
        shape=(*grouped.shape[:2], *out, grouped.shape[2], *kernel),
        strides=(
            st[0],
            st[1],
            *(st[3 + i] * strides[i] if out[i] > 1 else 0 for i in range(spatial)),
            st[2],
            *(st[3 + i] * dilation[i] if kernel[i] > 1 else 0 for i in range(spatial)),
        ),
        writeable=False,
    )


def _window_products(
    windows: np.ndarray, w: np.ndarray, groups: _Groups, acc: np.dtype, ordered: bool
) -> np.ndarray:
    """Each window times its group's kernel, (groups, batch, out positions..., out features):
    the windows copied (im2col) a chunk at a time, each chunk one batched matmul."""
    spatial = w.ndim - 2
    out = windows.shape[2 : 2 + spatial]
    taps = groups.in_features * math.prod(w.shape[2:])
    kernel = w.reshape(groups.number, groups.out_features, taps).transpose(0, 2, 1)
    products = np.empty((groups.number, groups.batch, *out, groups.out_features), dtype=acc)
    for rows in im2col_chunks((groups.number, groups.batch, *out), taps * acc.itemsize):
        block = windows[rows]  # (groups, window positions..., features, kernel...), a view
        positions = math.prod(block.shape[1 : block.ndim - 1 - spatial])
        cols = block.reshape(block.shape[0], positions, taps)  # the chunk's copy
        part = _matmul(cols, kernel[rows[0]], ordered)  # (groups, positions, out features)
        products[rows] = part.reshape(products[rows].shape)
        del cols, part
    return products


def _in_out_layout(products: np.ndarray, out_spec: Spec) -> np.ndarray:
    """(groups, batch, out positions..., out features) -> the result's layout, output features
    group-major."""
    count, batch, *out, features = products.shape
    merged = np.moveaxis(products, 0, -2).reshape(batch, *out, count * features)
    canonical = np.moveaxis(merged, -1, 1)  # (N, F, S...)
    inverse = np.argsort((out_spec[0], out_spec[1], *out_spec[2]))
    return np.asarray(np.transpose(canonical, inverse), order="C")


def _plan_conv(
    lhs: np.ndarray, rhs: np.ndarray, acc: np.dtype, result: np.dtype, conv: ConvAttributes
) -> None:
    """conv_general's peak: the widened operands, the padded (and lhs-dilated) input and its
    grouped copy, one im2col chunk, and three copies of the output on its way to the layout (the
    accumulator, a chunk's product, then the layout copies)."""
    lhs_spec, rhs_spec, padding = conv.lhs_spec, conv.rhs_spec, conv.padding
    spatial = [lhs.shape[d] for d in lhs_spec[2]]
    padded = pad_shape(
        spatial,
        [lo for lo, _ in padding],
        [hi for _, hi in padding],
        [d - 1 for d in conv.lhs_dilation],
    )
    kernel = [rhs.shape[d] for d in rhs_spec[2]]
    n, c = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    o = rhs.shape[rhs_spec[1]]
    osz = [
        conv_output_extent(p, k, s, d)
        for p, k, s, d in zip(padded, kernel, conv.window_strides, conv.rhs_dilation, strict=True)
    ]
    padded_size = n * c * math.prod(max(p, 0) for p in padded)
    features, batches = max(conv.feature_group_count, 1), max(conv.batch_group_count, 1)
    batch = n // batches
    row = c // features * math.prod(kernel) * acc.itemsize
    chunk = im2col_chunk_bytes((features * batches, batch, *osz), row)
    out = batch * math.prod(osz) * o
    plan(
        "convolution",
        (lhs.size + rhs.size + 2 * padded_size + 3 * out) * acc.itemsize + chunk,
        out * result.itemsize,
    )


# -- reductions ----------------------------------------------------------------------------------

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
    plan("reduce", 2 * x.size * x.dtype.itemsize, 3 * out_size * x.dtype.itemsize)
    moved = np.transpose(x, [*keep, *dims])
    flat = moved.reshape(*(x.shape[d] for d in keep), -1) if dims else moved[..., None]
    acc = np.broadcast_to(init, flat.shape[:-1]).astype(x.dtype)
    if ordered:
        for j in range(flat.shape[-1]):
            acc = body(acc, flat[..., j])
        return acc
    return body(acc, _tree_reduce(flat, body)) if flat.shape[-1] else acc.copy()


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
    plan(
        "reduce_window",
        sum(nbytes(padded_shape, x.dtype) + 3 * nbytes(osz, x.dtype) for x in xs),
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


# -- indexing ------------------------------------------------------------------------------------


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
    plan(
        "gather",
        nbytes(shape, operand.dtype),
        nbytes(batch_shape, np.int64) * (len(start_index_map) + 1) + vectors.nbytes,
        operand.ndim * _ITERATOR_BUFFER,
    )
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
    first = updates[0]
    rank = first.ndim
    operand = operands[0]
    vectors = _index_vectors(scatter_indices, index_vector_dim)
    scatter_dims = [d for d in range(rank) if d not in update_window_dims]
    windowed = [
        d
        for d in range(operand.ndim)
        if d not in inserted_window_dims and d not in input_batching_dims
    ]
    plan(
        "scatter",
        sum(o.nbytes for o in operands) + sum(u.nbytes for u in updates),
        first.size * 8 * (operand.ndim + 6),
    )
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
    if operand.ndim:
        flat = np.ravel_multi_index(tuple(i.ravel()[keep] for i in index), operand.shape)
    else:
        flat = np.zeros(int(keep.sum()), np.int64)
    results = [o.copy().reshape(-1) for o in operands]
    values = [u.reshape(-1)[keep] for u in updates]
    if add and len(results) == 1 and results[0].dtype != np.bool_:
        np.add.at(results[0], flat, values[0])
    else:
        combine_in_rounds(results, flat, values, combine)
    return [r.reshape(o.shape) for r, o in zip(results, operands, strict=True)]


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
    plan(
        "select_and_scatter",
        2 * operand.nbytes,
        source.size * (4 * operand.itemsize + 8 * (2 * rank + 6)),
    )
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
    if add and result.dtype != np.bool_:
        np.add.at(result, flat, values)
    else:
        combine_in_rounds([result], flat, [values], combine)
    return result.reshape(operand.shape)


def dynamic_slice(x: np.ndarray, starts: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """`stablehlo.dynamic_slice`: starts are clamped so the slice lies inside the operand."""
    plan("dynamic_slice", nbytes(sizes, x.dtype))
    begin = [min(max(int(b), 0), n - k) for b, n, k in zip(starts, x.shape, sizes, strict=True)]
    return x[tuple(slice(b, b + k) for b, k in zip(begin, sizes, strict=True))].copy()


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts: Sequence[int]) -> np.ndarray:
    """`stablehlo.dynamic_update_slice`: starts are clamped so the update fits."""
    plan("dynamic_update_slice", x.nbytes)
    begin = [
        min(max(int(b), 0), n - k) for b, n, k in zip(starts, x.shape, update.shape, strict=True)
    ]
    out = x.copy()
    out[tuple(slice(b, b + k) for b, k in zip(begin, update.shape, strict=True))] = update
    return out


# -- sort ----------------------------------------------------------------------------------------

Less = Callable[..., np.ndarray]


def sort(operands: Sequence[np.ndarray], dimension: int, less: Less) -> list[np.ndarray]:
    """`stablehlo.sort` with an arbitrary comparator, stable, by a whole-array merge sort.

    Runs of width w merge pairwise; an element's place in the merged run is its place in its
    own run plus how many elements of the other run go before it, found by a binary search of
    all elements at once. So the comparator is called O(log^2 n) times on whole arrays.
    `less(a0, b0, a1, b1, ...)` is the comparator on elementwise pairs of every operand.
    """
    plan("sort", 4 * sum(o.nbytes for o in operands), 24 * 8 * operands[0].size)
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


# -- element bits --------------------------------------------------------------------------------


def reduce_precision(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """`stablehlo.reduce_precision`: round to nearest even at `mantissa_bits`, then flush
    exponents the narrower format cannot hold to zero or infinity (XLA's bit algorithm)."""
    plan("reduce_precision", 8 * x.nbytes)
    info = np.finfo(x.dtype)
    src_mantissa, width = info.nmant, x.dtype.itemsize * 8
    src_exponent = width - 1 - src_mantissa
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    bits = np.asarray(x, order="C").view(unsigned).copy()
    one = unsigned.type(1)
    if mantissa_bits < src_mantissa:
        shift = unsigned.type(src_mantissa - mantissa_bits)
        last = one << shift
        bias = (last >> one) - one
        lsb = (bits & last) >> shift
        bits = ((bits + lsb + bias) & ~(last - one)).astype(unsigned)
    if exponent_bits < src_exponent:
        sign = one << unsigned.type(width - 1)
        exponent_mask = unsigned.type(((1 << src_exponent) - 1) << src_mantissa)
        bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        overflow = exponent > unsigned.type((bias + reduced_bias) << src_mantissa)
        underflow = exponent <= unsigned.type((bias - reduced_bias) << src_mantissa)
        signed_zero = bits & sign
        bits = np.where(
            overflow, signed_zero | exponent_mask, np.where(underflow, signed_zero, bits)
        )
    out = bits.astype(unsigned).view(x.dtype)
    return np.where(np.isnan(x), x, out)  # XLA keeps NaN, even with no mantissa bits left


_WRAP_CHUNK = 1 << 16  # elements widened to int64 at a time


def wrap_integer(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """Wrap values held in a wider container to a `bits`-wide integer (i2/i4/ui2/ui4), a chunk
    at a time: every narrow result passes here, outside any kernel's plan, so its int64
    temporaries are bounded, not 8 bytes an element."""
    modulus = 1 << bits
    flat = np.asarray(x, order="C").reshape(-1)
    out = np.empty(flat.size, x.dtype)
    for start in range(0, flat.size, _WRAP_CHUNK):
        wide = flat[start : start + _WRAP_CHUNK].astype(np.int64) % modulus
        if signed:
            wide = np.where(wide >= modulus // 2, wide - modulus, wide)
        out[start : start + wide.size] = wide.astype(x.dtype)
    return out.reshape(x.shape)


# -- BLAS threads --------------------------------------------------------------------------------


@cache
def _openblas_thread_functions() -> tuple[Any, Any] | None:
    """numpy's bundled OpenBLAS get/set-threads functions, or None if not found."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("*openblas*.so*")):
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    return getter, setter
    return None


@contextmanager
def blas_threads(count: int | None = None) -> Iterator[None]:
    """Run with `count` OpenBLAS threads (default 1, or $OPENBLAS_NUM_THREADS if set).

    OpenBLAS's spinning worker threads collapse under CPU oversubscription (measured here: a
    ResNet-50 forward's GEMMs at 3 GFLOP/s with 2 threads on a loaded 2-core box, 28 with 1), and
    our GEMMs are small, so one thread is the robust default. A no-op without numpy's OpenBLAS.
    """
    if count is None:
        count = int(os.environ.get("OPENBLAS_NUM_THREADS", "1") or 1)
    functions = _openblas_thread_functions()
    if functions is None:
        yield
        return
    getter, setter = functions
    before = getter()
    setter(count)
    try:
        yield
    finally:
        setter(before)
