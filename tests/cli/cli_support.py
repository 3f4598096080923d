"""What the CLI tests share: the example inputs and the result of an in-process CLI call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "examples" / "small_cnn.stablehlo.mlir"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEBUGINFO = FIXTURES / "debuginfo.stablehlo.mlir"  # JAX's as_text(debug_info=True), path relative


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Runner = Callable[..., Result]
