"""What a handler is given: the interpreter running it (as a protocol, so the handler families
do not import the loop that dispatches to them) and the run's state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import SourceLoc
from convcanon.reference.hlo.values import DEFAULT_MEMORY_LIMIT, TensorType
from convcanon.reference.kernels import budget

DEFAULT_MAX_LOOP_ITERATIONS = 100_000


@dataclass
class CheckResult:
    loc: SourceLoc
    op: str
    ok: bool
    detail: str = ""


@dataclass
class Env:
    """Per-run state: memory limit and the checks executed so far."""

    memory_limit: int = DEFAULT_MEMORY_LIMIT
    # A loop whose condition never turns false, or a call that recurses, must end in a
    # diagnostic, not run until killed.
    max_loop_iterations: int = DEFAULT_MAX_LOOP_ITERATIONS
    # Buffers within the memory limit still ask for any time: a huge window, a long loop.
    meter: budget.Meter = field(default_factory=budget.new_meter)
    call_depth: int = 0
    checks: list[CheckResult] = field(default_factory=list)
    # Sum float reductions one element at a time, rounding each step, in the StableHLO reference
    # interpreter's order: the `check` expectations of conformance tests were produced that way.
    ordered: bool = False


class Machine(Protocol):
    """The interpreter as its handlers use it (`loop.Interpreter`)."""

    env: Env
    functions: dict[str, ir.Operation]
    constants: dict[ir.Operation, np.ndarray]

    def loc(self, op: ir.Operation) -> SourceLoc: ...

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]: ...

    def region_fn(self, region: ir.Region) -> Callable[..., np.ndarray]: ...

    def region_fn_multi(self, region: ir.Region) -> Callable[..., list[np.ndarray]]: ...

    def run_region(self, region: ir.Region, args: Sequence[Any]) -> list[Any]: ...


Handler = Callable[[Machine, ir.Operation, list[np.ndarray], list[TensorType]], list[Any]]
