"""Lower a JAX function to StableHLO text and check our interpreter against XLA on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .xla_compare import assert_matches_xla


def lower(fn: Callable[..., Any], *args: np.ndarray) -> str:
    """`jax.jit(fn).lower(*args).as_text()`, every argument kept (the inputs stay positional)."""
    import jax

    return jax.jit(fn, keep_unused=True).lower(*args).as_text()


def check_jax(fn: Callable[..., Any], *args: np.ndarray) -> str:
    """Lower `fn` on `args`, run it on both engines, compare; returns the module text."""
    text = lower(fn, *args)
    assert_matches_xla(text, [np.asarray(a) for a in args])
    return text
