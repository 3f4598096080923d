"""The memory and work budgets kernels run under.

Every kernel states its planned peak (result and intermediates) to `plan` before it allocates
anything; under `memory_limit(n)` a plan over n bytes raises `OverBudget`, which the
interpreters turn into a located "out of memory" diagnostic. Hostile shapes (a pad that grows by
1e8 and crops it again, an lhs dilation of 1e6) are refused instead of eating the machine.

Work is bounded the same way: under `metered(meter)`, every op and every kernel whose work grows
faster than its buffers (a contraction's multiply-adds, a Python-level loop over window taps or
rounds) states its steps to `spend` before doing them, and a run whose steps would pass the
meter's limit raises `OverWork`. Buffers within the memory limit do not bound time: a conv of a
1e7-wide input with a 5e6-wide kernel holds 60 MB and asks for 2.5e13 multiply-adds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from convcanon.diagnostics import DEFAULT_WORK_LIMIT


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


# -- work ----------------------------------------------------------------------------------------

OP_STEPS = 20_000
"""Steps one op costs besides its elements: the interpreter's dispatch of an op, or one
whole-array numpy call of a kernel's loop, takes tens of microseconds however small."""


class OverWork(Exception):
    """A run's steps would pass its work limit (raised before the work is done)."""


@dataclass
class Meter:
    """The steps one run has taken, and how many it may take."""

    limit: int
    spent: int = 0


_METER: ContextVar[Meter | None] = ContextVar("convcanon_work_meter", default=None)
_RUN_LIMIT: ContextVar[int] = ContextVar("convcanon_run_work_limit", default=DEFAULT_WORK_LIMIT)


@contextmanager
def work_limit(steps: int) -> Iterator[None]:
    """Within it, each run's meter (`new_meter`) allows `steps`: a command's `--max-work`."""
    token = _RUN_LIMIT.set(steps)
    try:
        yield
    finally:
        _RUN_LIMIT.reset(token)


def new_meter() -> Meter:
    """The meter of a run about to start, at the limit in force (`work_limit`)."""
    return Meter(_RUN_LIMIT.get())


@contextmanager
def metered(meter: Meter) -> Iterator[None]:
    """Count the steps of what runs inside on `meter` (outside any, nothing is counted)."""
    token = _METER.set(meter)
    try:
        yield
    finally:
        _METER.reset(token)


def spend(what: str, steps: int) -> None:
    """Count `steps` about to be taken; refuse them if they pass the run's limit."""
    meter = _METER.get()
    if meter is None:
        return
    meter.spent += steps
    if meter.spent > meter.limit:
        raise OverWork(
            f"{steps} steps ({what}) would take the run past its limit of {meter.limit} steps"
        )


def spend_calls(what: str, calls: int, elements: int) -> None:
    """Count a loop of `calls` whole-array numpy calls on `elements` elements each."""
    spend(what, calls * (OP_STEPS + elements))


BLAS_MACS_PER_STEP = 16
"""numpy's matmul of f32/f64 (BLAS) does 30 to 150 multiply-adds a nanosecond on 2 cores."""

OTHER_STEPS_PER_MAC = 4
"""numpy's own loops (integers, f16) take 1 to 4 ns a multiply-add (bench/RESULTS_work.md)."""

_BLAS = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def spend_multiply_adds(count: int, dtype: np.dtype) -> None:
    """Count `count` multiply-adds of a matmul in `dtype`: BLAS's are cheap, numpy's are not."""
    if np.dtype(dtype) in _BLAS:
        spend("its multiply-adds", count // BLAS_MACS_PER_STEP)
    else:
        spend("its multiply-adds", count * OTHER_STEPS_PER_MAC)


def spend_matmul(a: np.ndarray, b: np.ndarray) -> None:
    """Count numpy's matmul of `a` (..., m, k) and `b` (..., k, n): its multiply-adds."""
    if a.ndim < 2 or b.ndim < 2:
        return  # a vector product: linear in its operands
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = math.prod(batch) * a.shape[-2] * a.shape[-1] * b.shape[-1]
    spend_multiply_adds(count, np.result_type(a, b))


def over_work(op_name: str, err: OverWork) -> str:
    """The diagnostic, at the op the run stopped before, of a run past its work limit."""
    return f"work limit reached: {op_name}: {err} (`--max-work N` sets it)"
