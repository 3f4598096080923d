"""numpy kernels with StableHLO semantics, shared by the HLO and the migraphx/TOSA interpreters.

Every kernel works on whole arrays (strided views, im2col + batched matmul): no per-element Python
loops, so a ResNet-sized forward pass runs in seconds. Kernels never mutate their inputs.
"""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

Spec = tuple[int, int, tuple[int, ...]]  # (batch-or-in-feature dim, feature dim, spatial dims)


# -- layout helpers ------------------------------------------------------------------------------


def transpose(x: np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """`stablehlo.transpose`: result dim i is operand dim permutation[i]."""
    return np.ascontiguousarray(np.transpose(x, tuple(permutation)))


def broadcast_in_dim(
    x: np.ndarray, result_shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> np.ndarray:
    """`stablehlo.broadcast_in_dim`: operand dim i maps to result dim broadcast_dimensions[i]."""
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
    return x[index].copy()


def pad(
    x: np.ndarray,
    value: np.ndarray | float | int | bool | complex,
    low: Sequence[int],
    high: Sequence[int],
    interior: Sequence[int],
) -> np.ndarray:
    """`stablehlo.pad`: interior padding first, then edge padding; negative edges crop."""
    if not any(low) and not any(high) and not any(interior):
        return x
    dilated_shape = tuple(n + max(n - 1, 0) * i for n, i in zip(x.shape, interior, strict=True))
    grown = tuple(
        max(lo, 0) + n + max(hi, 0) for n, lo, hi in zip(dilated_shape, low, high, strict=True)
    )
    out = np.full(grown, np.asarray(value, dtype=x.dtype), dtype=x.dtype)
    place = tuple(
        slice(max(lo, 0), max(lo, 0) + n, i + 1)
        for n, lo, i in zip(dilated_shape, low, interior, strict=True)
    )
    out[place] = x
    crop = tuple(
        slice(max(-lo, 0), g - max(-hi, 0)) for g, lo, hi in zip(grown, low, high, strict=True)
    )
    if any(g - max(-lo, 0) - max(-hi, 0) < 0 for g, lo, hi in zip(grown, low, high, strict=True)):
        raise ValueError("negative padding crops more than the dimension holds")
    return np.ascontiguousarray(out[crop])


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
    a = np.transpose(lhs, [*lhs_batch, *lhs_free, *lhs_contracting]).astype(acc, copy=False)
    c = np.transpose(rhs, [*rhs_batch, *rhs_contracting, *rhs_free]).astype(acc, copy=False)
    out = np.matmul(a.reshape(b, math.prod(lf_shape), k), c.reshape(b, k, math.prod(rf_shape)))
    out = out.reshape(*batch_shape, *lf_shape, *rf_shape)
    return cast_result(out, preferred_dtype, acc)


# -- convolution ---------------------------------------------------------------------------------


def conv_output_extent(padded: int, kernel: int, stride: int, rhs_dilation: int) -> int:
    """Number of window positions along one spatial dim (0 if the dilated window does not fit)."""
    span = (kernel - 1) * rhs_dilation + 1
    if kernel == 0 or padded < span:
        return 0
    return (padded - span) // stride + 1


def conv_general(
    lhs: np.ndarray,
    rhs: np.ndarray,
    *,
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
    window_reversal: Sequence[bool],
    lhs_spec: Spec,
    rhs_spec: Spec,
    out_spec: Spec,
    feature_group_count: int,
    batch_group_count: int,
    preferred_dtype: np.dtype | None = None,
    ordered: bool = False,
) -> np.ndarray:
    """`stablehlo.convolution` in full generality, as im2col + one batched matmul per call.

    lhs_spec = (batch, feature, spatial...), rhs_spec = (input feature, output feature,
    spatial...), out_spec = (batch, feature, spatial...). The result has the accumulated value cast
    to `preferred_dtype` (default: the lhs element type). `ordered`: see `dot_general`.
    """
    nsp = len(lhs_spec[2])
    acc = accumulation_dtype(lhs.dtype, rhs.dtype)
    if ordered and lhs.dtype.kind in "fc":
        acc = np.result_type(lhs.dtype, rhs.dtype)
    # canonical layouts: lhs (N, C, S...), rhs (O, I, K...)
    x = np.transpose(lhs, (lhs_spec[0], lhs_spec[1], *lhs_spec[2])).astype(acc, copy=False)
    w = np.transpose(rhs, (rhs_spec[1], rhs_spec[0], *rhs_spec[2])).astype(acc, copy=False)
    flips = tuple(2 + i for i, r in enumerate(window_reversal) if r)
    if flips:
        w = np.flip(w, flips)
    x = pad(
        x,
        0,
        [0, 0, *(lo for lo, _ in padding)],
        [0, 0, *(hi for _, hi in padding)],
        [0, 0, *(d - 1 for d in lhs_dilation)],
    )
    n, c = x.shape[:2]
    o, ci = w.shape[:2]
    g = feature_group_count * batch_group_count
    if feature_group_count > 1:
        cg = c // feature_group_count
        xg = x.reshape(n, feature_group_count, cg, *x.shape[2:]).swapaxes(0, 1)
        ng = n
    else:
        ng = n // batch_group_count
        cg = c
        xg = x.reshape(batch_group_count, ng, c, *x.shape[2:])
    if ci != cg or o % g:
        raise ValueError(f"conv feature counts do not match (lhs {c}, rhs {ci}x{o}, groups {g})")
    og = o // g
    ksz = w.shape[2:]
    osz = tuple(
        conv_output_extent(p, k, s, d)
        for p, k, s, d in zip(xg.shape[3:], ksz, window_strides, rhs_dilation, strict=True)
    )
    xg = np.ascontiguousarray(xg)
    st = xg.strides
    windows = as_strided(
        xg,
        shape=(g, ng, *osz, cg, *ksz),
        strides=(
            st[0],
            st[1],
            *(st[3 + i] * window_strides[i] for i in range(nsp)),
            st[2],
            *(st[3 + i] * rhs_dilation[i] for i in range(nsp)),
        ),
        writeable=False,
    )
    cols = windows.reshape(g, ng * math.prod(osz), cg * math.prod(ksz))
    wg = w.reshape(g, og, cg * math.prod(ksz)).transpose(0, 2, 1)
    out = _matmul(cols, wg, ordered)  # (g, ng * prod(osz), og)
    out = out.reshape(g, ng, *osz, og)
    # to (N', G*Og, O...) with group-major output features
    out = np.moveaxis(out, 0, -2).reshape(ng, *osz, g * og)
    out = np.moveaxis(out, -1, 1)
    # canonical (N, F, S...) -> out_spec layout
    order = (out_spec[0], out_spec[1], *out_spec[2])
    inverse = np.argsort(order)
    result = np.ascontiguousarray(np.transpose(out, inverse))
    return cast_result(result, preferred_dtype if preferred_dtype else lhs.dtype, acc)


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
    x: np.ndarray,
    init: np.ndarray,
    *,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    base_dilations: Sequence[int],
    window_dilations: Sequence[int],
    padding: Sequence[tuple[int, int]],
    body: ReduceFn,
    ordered: bool = False,
) -> np.ndarray:
    """`stablehlo.reduce_window`: pad with init (after base dilation), strided windows, reduce."""
    padded = pad(
        x,
        init,
        [lo for lo, _ in padding],
        [hi for _, hi in padding],
        [d - 1 for d in base_dilations],
    )
    osz = tuple(
        conv_output_extent(p, k, s, d)
        for p, k, s, d in zip(
            padded.shape, window_dimensions, window_strides, window_dilations, strict=True
        )
    )
    st = padded.strides
    windows = as_strided(
        padded,
        shape=(*osz, *window_dimensions),
        strides=(
            *(s * ws for s, ws in zip(st, window_strides, strict=True)),
            *(s * wd for s, wd in zip(st, window_dilations, strict=True)),
        ),
        writeable=False,
    )
    rank = x.ndim
    return reduce(windows, init, range(rank, 2 * rank), body, ordered)


def wrap_integer(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """Wrap values held in a wider container to a `bits`-wide integer (i2/i4/ui2/ui4)."""
    modulus = 1 << bits
    wide = x.astype(np.int64) % modulus
    if signed:
        wide = np.where(wide >= modulus // 2, wide - modulus, wide)
    return wide.astype(x.dtype)


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
