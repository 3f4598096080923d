"""What the CLI tests share: the example inputs and the result of an in-process CLI call."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "examples" / "small_cnn.stablehlo.mlir"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEBUGINFO = FIXTURES / "debuginfo.stablehlo.mlir"  # JAX's as_text(debug_info=True), path relative

# The smallest migraphx module: exp of a 2-vector.
MIGRAPHX_EXP = (
    "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
    "  %0 = migraphx.exp %x : <2xf32, 1> -> <2xf32, 1>\n"
    "  func.return %0 : !migraphx.shaped<2xf32, 1>\n}\n"
)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Runner = Callable[..., Result]

IREE_OPT = Path(sys.executable).parent / "iree-opt"  # iree-base-compiler, a test extra


def iree_opt(*args: object, check: bool = True) -> subprocess.CompletedProcess[str]:
    """iree-opt (a real mlir-opt) on these arguments; with `check`, it must succeed."""
    result = subprocess.run(
        [IREE_OPT, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert not check or result.returncode == 0, result.stderr
    return result
