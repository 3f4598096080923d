"""The memory budget kernels run under.

Every kernel states its planned peak (result and intermediates) to `plan` before it allocates
anything; under `memory_limit(n)` a plan over n bytes raises `OverBudget`, which the
interpreters turn into a located "out of memory" diagnostic. Hostile shapes (a pad that grows by
1e8 and crops it again, an lhs dilation of 1e6) are refused instead of eating the machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np


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
