"""Run a StableHLO module on XLA's CPU backend (the engine differential checks compare against).

JAX's client compiles MLIR text directly (`Client.compile_and_load`), so no tracing or `jax.jit` is
needed: the module is exactly what XLA sees. Importing this module imports JAX (~1.5 s), so only
engines and tests import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np

from convcanon.hlo.resources import inline_dense_resources


@cache
def _cpu_client() -> tuple[Any, Any]:
    """JAX's CPU client and its first device."""
    import jax.extend.backend

    backend = jax.extend.backend.get_backend("cpu")
    return backend, backend.devices()[0]


@lru_cache(maxsize=8)
def compile_stablehlo_text(text: str) -> Any:
    """Compile a module whose entry is `@main`; errors surface as XLA's exception. Cached:
    verify runs each module once per trial, and XLA takes seconds to compile a CNN."""
    backend, device = _cpu_client()
    return backend.compile_and_load(text, [device])


@lru_cache(maxsize=8)
def _inlined(text: str, filename: str) -> str:
    """Inlined once per module: verify runs each module once per trial."""
    return inline_dense_resources(text, filename)


def run_stablehlo_text(
    text: str, inputs: Sequence[np.ndarray], filename: str = "<stablehlo>"
) -> list[np.ndarray]:
    """Compile `text` and run `@main` on `inputs`; returns the results as numpy arrays.
    `dense_resource` weights are inlined first: XLA's import reads only `dense` literals."""
    import jax

    _, device = _cpu_client()
    executable = compile_stablehlo_text(_inlined(text, filename))
    # f64/i64 inputs must stay 64-bit; x64 is turned on for this thread and this call only, so
    # the caller's JAX configuration is never changed.
    with jax.enable_x64(True):
        buffers = [jax.device_put(np.asarray(x), device) for x in inputs]
        results = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
        return [np.asarray(r[0]) for r in results]
