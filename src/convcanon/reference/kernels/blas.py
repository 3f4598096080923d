"""The number of threads numpy's OpenBLAS runs the kernels' matmuls with."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np


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
