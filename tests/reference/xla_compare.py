"""Run a module on our interpreter and on XLA with the same inputs: the shared assertion."""

from __future__ import annotations

import numpy as np

from convcanon.reference.run import run_hlo_text
from convcanon.verify.xla_engine import run_stablehlo_text

# relative to the largest |value| of XLA's output: rounding noise of the differing summation order
RTOL = {"bfloat16": 1e-2, "float16": 2e-2, "float32": 2e-5, "float64": 1e-12}


def interpret(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    feed = {f"arg{i}": x for i, x in enumerate(inputs)}
    (report,) = run_hlo_text(text, "case.mlir", entry="main", inputs=feed)
    return report.results


def assert_matches_xla(text: str, inputs: list[np.ndarray]) -> None:
    ours = interpret(text, inputs)
    theirs = run_stablehlo_text(text, inputs)
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.shape == ref.shape, (mine.shape, ref.shape)
        assert mine.dtype == ref.dtype, (mine.dtype, ref.dtype)
        if ref.dtype.kind in "iub":
            np.testing.assert_array_equal(mine, ref)
            continue
        wide = ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
        finite = np.abs(wide[np.isfinite(wide)])  # an inf in the output must not widen atol
        scale = max(1.0, float(finite.max(initial=0.0)))
        atol = RTOL[ref.dtype.name] * scale
        np.testing.assert_allclose(mine.astype(np.float64), ref.astype(np.float64), 0, atol)
