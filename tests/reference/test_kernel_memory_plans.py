"""Each kernel's planned peak (what it tells `budget.plan` before allocating) bounds what it really
allocates, measured with tracemalloc; and a limit below the plan refuses before any allocation."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from convcanon.reference.kernels import (
    budget,
    contraction,
    indexing,
    movement,
    pooling,
    precision,
    reduction,
    sort,
)

RNG = np.random.default_rng(0)
SLACK = 64 << 10  # Python objects around the arrays (index lists, views, small temporaries)


def _add(*arrays: np.ndarray) -> list[np.ndarray]:
    return [arrays[0] + arrays[1]]


def _less(a: np.ndarray, b: np.ndarray, *rest: np.ndarray) -> np.ndarray:
    return a < b


def _conv(lhs_dilation: int, groups: int) -> Callable[[], Any]:
    x = RNG.standard_normal((2, 8, 40, 40)).astype(np.float32)
    w = RNG.standard_normal((16, 8 // groups, 3, 3)).astype(np.float32)
    conv = contraction.ConvAttributes(
        window_strides=[2, 1],
        padding=[(3, 2), (-1, 4)],
        lhs_dilation=[lhs_dilation, 1],
        rhs_dilation=[1, 2],
        window_reversal=[False, True],
        lhs_spec=(0, 1, (2, 3)),
        rhs_spec=(1, 0, (2, 3)),
        out_spec=(0, 1, (2, 3)),
        feature_group_count=groups,
    )
    return lambda: contraction.conv_general(x, w, conv)


def _big_window_conv() -> Any:
    """A 9x9 window over 16 features: an 8.3 MB im2col for a 25 KB result."""
    x = RNG.standard_normal((1, 16, 48, 48)).astype(np.float32)
    w = RNG.standard_normal((4, 16, 9, 9)).astype(np.float32)
    spatial = (2, 3)
    conv = contraction.ConvAttributes(
        window_strides=[1, 1],
        padding=[(0, 0), (0, 0)],
        lhs_dilation=[1, 1],
        rhs_dilation=[1, 1],
        window_reversal=[False, False],
        lhs_spec=(0, 1, spatial),
        rhs_spec=(1, 0, spatial),
        out_spec=(0, 1, spatial),
    )
    return contraction.conv_general(x, w, conv)


BIG_WINDOW_IM2COL = 40 * 40 * 16 * 9 * 9 * 4


def _in_chunks_of(budget: int, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(contraction, "IM2COL_CHUNK_BYTES", budget)
            return fn()

    return run


X = RNG.standard_normal((64, 96, 8)).astype(np.float32)
XI = X.astype(np.int32)
ZERO = np.zeros((), np.float32)
IDX = RNG.integers(-3, 70, (500, 1)).astype(np.int32)

KERNELS: dict[str, Callable[[], Any]] = {
    "conv": _conv(1, 1),
    "conv lhs-dilated": _conv(3, 1),
    "conv grouped": _conv(1, 4),
    "conv in 64 KiB chunks": _in_chunks_of(64 << 10, _big_window_conv),
    "conv grouped in 4 KiB chunks": _in_chunks_of(4 << 10, _conv(1, 4)),
    "pad": lambda: movement.pad(X, 0.0, [3, -2, 1], [-5, 7, 0], [1, 0, 2]),
    "reduce_window": lambda: reduction.reduce_window(
        [X],
        [ZERO],
        window_dimensions=[3, 5, 2],
        window_strides=[1, 2, 1],
        base_dilations=[1, 1, 2],
        window_dilations=[2, 1, 1],
        padding=[(1, 1), (2, 0), (0, 0)],
        body=lambda acc, x: [np.add(acc, x)],
    ),
    "reduce": lambda: reduction.reduce(X, ZERO, [0, 2], np.add),
    "pooling": lambda: pooling.window_reduce(
        X,
        pooling.Windows((0, 1), (3, 2), (2, 1), (1, 2), (1, 0), (32, 93)),
        np.add,
        0.0,
        np.dtype(np.float64),
        lambda padded: np.abs(padded, out=padded),
    ),
    "dot_general": lambda: contraction.dot_general(
        X, X, lhs_batch=[2], rhs_batch=[2], lhs_contracting=[1], rhs_contracting=[1]
    ),
    "transpose": lambda: movement.transpose(X, [2, 0, 1]),
    "broadcast_in_dim": lambda: movement.broadcast_in_dim(X[:, 0], (4, 64, 8), [1, 2]),
    "gather": lambda: indexing.gather(
        X,
        IDX,
        offset_dims=[1, 2],
        collapsed_slice_dims=[0],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0],
        index_vector_dim=1,
        slice_sizes=[1, 96, 8],
    ),
    "scatter": lambda: indexing.scatter(
        [X],
        IDX % 64,
        [np.ones((500, 96, 8), np.float32)],
        update_window_dims=[1, 2],
        inserted_window_dims=[0],
        input_batching_dims=[],
        scatter_indices_batching_dims=[],
        scatter_dims_to_operand_dims=[0],
        index_vector_dim=1,
        combine=_add,
    ),
    "select_and_scatter": lambda: indexing.select_and_scatter(
        X,
        np.ones((32, 48, 8), np.float32),
        ZERO,
        window_dimensions=[3, 3, 1],
        window_strides=[2, 2, 1],
        padding=[(1, 1), (1, 1), (0, 0)],
        select=np.greater_equal,
        combine=_add,
    ),
    "sort": lambda: sort.sort([X, XI], 1, _less),
    "dynamic_update_slice": lambda: movement.dynamic_update_slice(X, X[:5], [70, 0, 0]),
    "reduce_precision": lambda: precision.reduce_precision(X, 5, 10),
}


def _measure(fn: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(largest plan the kernel made, tracemalloc peak of the call) in bytes."""
    plans: list[int] = []
    real = budget.plan

    def spy(what: str, *buffers: int) -> int:
        plans.append(real(what, *buffers))
        return plans[-1]

    fn()  # warm caches (ufunc loops, imports) outside the measurement
    monkeypatch.setattr(budget, "plan", spy)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    del result
    return max(plans, default=0), peak


@pytest.mark.parametrize("name", list(KERNELS))
def test_planned_peak_bounds_the_real_peak(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    planned, peak = _measure(KERNELS[name], monkeypatch)
    assert planned > 0, f"{name} made no plan"
    assert peak <= planned + SLACK, f"{name}: allocated {peak} bytes, planned {planned}"


def test_chunked_conv_plans_and_holds_far_less_than_its_im2col(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In 64 KiB chunks the conv's plan, and its real peak, are an eighth of its whole im2col."""
    planned, peak = _measure(KERNELS["conv in 64 KiB chunks"], monkeypatch)
    assert planned < BIG_WINDOW_IM2COL // 8, planned
    assert peak <= planned + SLACK, (peak, planned)


@pytest.mark.parametrize(
    "name", ["conv lhs-dilated", "pad", "reduce_window", "pooling", "gather", "sort"]
)
def test_limit_below_the_plan_refuses_before_allocating(name: str) -> None:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with budget.memory_limit(4096), pytest.raises(budget.OverBudget, match="over the memory"):
            KERNELS[name]()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < SLACK, peak


def test_interpreter_holds_only_live_values() -> None:
    """A chain of 40 ops on 1 MB tensors peaks at a few MB: each value is dropped after its last
    use (keeping every intermediate, as before, peaked at 40 MB)."""
    from convcanon.reference.run import run_hlo_text

    t = "tensor<512x512xf32>"
    lines = [f"func.func @main(%x: {t}) -> {t} {{", f"  %v0 = stablehlo.add %x, %x : {t}"]
    lines += [f"  %v{i} = stablehlo.multiply %v{i - 1}, %x : {t}" for i in range(1, 40)]
    lines += [f"  return %v39 : {t}", "}"]
    text = "\n".join(lines) + "\n"
    x = np.ones((512, 512), np.float32)
    run_hlo_text(text, "warm-up.mlir", inputs={"arg0": x})
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        (report,) = run_hlo_text(text, "chain.mlir", inputs={"arg0": x})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(report.results[0], 2 * x)
    assert peak < 8 * x.nbytes, peak
