"""Contractions as batched matmuls: `dot_general`, and `conv_general` by im2col in chunks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from convcanon.records import NamedTuple
from convcanon.reference.kernels import budget
from convcanon.reference.kernels.movement import conv_output_extent, pad, pad_shape
from convcanon.reference.kernels.precision import accumulation_dtype, cast_result

Spec = tuple[int, int, tuple[int, ...]]  # (batch-or-in-feature dim, feature dim, spatial dims)


def _matmul(a: np.ndarray, b: np.ndarray, ordered: bool) -> np.ndarray:
    """Batched (g, m, k) @ (g, k, n); `ordered` accumulates k sequentially (no BLAS blocking)."""
    if not ordered or a.dtype.kind not in "fc":
        return np.matmul(a, b)
    budget.spend_calls(
        "a call per contracted element", a.shape[2], a.shape[0] * a.shape[1] * b.shape[2]
    )
    acc = np.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
    for j in range(a.shape[2]):
        acc += a[:, :, j, None] * b[:, None, j, :]
    return acc


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
    budget.plan(
        "dot_general",
        (lhs.size + rhs.size + 2 * out_size) * acc.itemsize,
        out_size * np.dtype(preferred_dtype or acc).itemsize,
    )
    budget.spend_multiply_adds(out_size * k, acc)
    a = np.transpose(lhs, [*lhs_batch, *lhs_free, *lhs_contracting]).astype(acc, copy=False)
    c = np.transpose(rhs, [*rhs_batch, *rhs_contracting, *rhs_free]).astype(acc, copy=False)
    out = np.matmul(a.reshape(b, math.prod(lf_shape), k), c.reshape(b, k, math.prod(rf_shape)))
    out = out.reshape((*batch_shape, *lf_shape, *rf_shape))  # () when both are scalars
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
    budget.plan(
        "convolution",
        (lhs.size + rhs.size + 2 * padded_size + 3 * out) * acc.itemsize + chunk,
        out * result.itemsize,
    )
    taps = row // acc.itemsize
    budget.spend("its im2col copy", features * batches * batch * math.prod(osz) * taps)
    budget.spend_multiply_adds(out * taps, acc)
