"""The interpreter's loop: blocks read from the IR once, values dropped after their last use,
every result checked against the memory limit before its handler runs; and the same limits
checked on a whole module before any input is made."""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.hlo.context import source_loc
from convcanon.reference.hlo.attributes import single_op
from convcanon.reference.hlo.elementwise import BINARY, TYPE_PLANS, plan_elementwise
from convcanon.reference.hlo.machine import Env, Handler
from convcanon.reference.hlo.ops import handler_of
from convcanon.reference.hlo.values import DEFAULT_MEMORY_LIMIT, TensorType, normalize, tensor_type
from convcanon.reference.kernels import budget, element_steps


class Interpreter:
    """Runs functions of one parsed module."""

    def __init__(
        self, module: ir.Module, filename: str, line_offset: int = 0, env: Env | None = None
    ):
        self.module = module
        self.filename = filename
        self.line_offset = line_offset
        self.env = env or Env()
        self.functions: dict[str, ir.Operation] = {}
        if _has_chlo(module):
            from convcanon.hlo.legalize import chlo_to_stablehlo

            chlo_to_stablehlo(module)
        for op in module.body.operations:
            if op.operation.name == "func.func":
                name = ir.StringAttr(op.attributes["sym_name"]).value
                self.functions[name] = op.operation
        self._scope: ChainMap[Any, Any] = ChainMap()
        self._steps: dict[ir.Block, list[_Step]] = {}
        self.constants: dict[ir.Operation, np.ndarray] = {}

    def loc(self, op: ir.Operation) -> SourceLoc:
        return source_loc(op.location, self.filename, self.line_offset)

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        func = self.functions[name]
        block = func.regions[0].blocks[0]
        with budget.memory_limit(self.env.memory_limit), budget.metered(self.env.meter):
            return self.run_block(block, list(args))

    def run_block(
        self, block: ir.Block, args: Sequence[np.ndarray], batched: bool = False
    ) -> list[np.ndarray]:
        """Run one block on `args`; its ops may also read values of the enclosing blocks."""
        outer = self._scope
        self._scope = outer.new_child()
        try:
            return self._run_ops(block, args, batched)
        finally:
            self._scope = outer

    def _compile(self, block: ir.Block) -> list[_Step]:
        """What each op of a block needs at run time, read from the IR once (loops rerun it)."""
        steps = []
        for op in block.operations:
            op = op.operation
            name = op.name
            if name in _TERMINATORS:
                steps.append(_Step(op, name, None, list(op.operands), [], []))
                break
            handler = handler_of(name)
            types = [tensor_type(r.type, self.loc(op)) for r in op.results]
            steps.append(_Step(op, name, handler, list(op.operands), list(op.results), types))
        _mark_last_uses(block, steps)
        return steps

    def _run_ops(self, block: ir.Block, args: Sequence[np.ndarray], batched: bool) -> list[Any]:
        # IEEE results on inf and nan are the ones the ops define; numpy's warnings about them
        # (with a line of our source) are noise on stderr
        with np.errstate(all="ignore"):
            return self._run_steps(block, args, batched)

    def _run_steps(self, block: ir.Block, args: Sequence[np.ndarray], batched: bool) -> list[Any]:
        values = self._scope
        for arg, value in zip(block.arguments, args, strict=True):
            values[arg] = value
        steps = self._steps.get(block)
        if steps is None:
            steps = self._steps[block] = self._compile(block)
        limit = self.env.memory_limit
        for step in steps:
            op, name, handler, result_types = step.op, step.name, step.handler, step.types
            if not step.results and name in _TERMINATORS:
                return [values[v] for v in step.operands]
            operands = [values[v] for v in step.operands]
            for tt in result_types:
                if tt.nbytes > limit:
                    raise ConvcanonError(_result_over(name, tt, limit), self.loc(op))
            if handler is None:
                raise ConvcanonError(f"the interpreter does not support op '{name}'", self.loc(op))
            try:
                budget.spend(
                    "its elements", step.steps + sum(getattr(v, "size", 1) for v in operands)
                )
                results = handler(self, op, operands, result_types)
                for res, value, tt in zip(step.results, results, result_types, strict=True):
                    values[res] = normalize(value, tt, batched)
                for dead in step.dead:  # their last use: the memory goes back now
                    del values.maps[0][dead]
            except ConvcanonError:
                raise
            except MemoryError as err:  # a kernel's plan over the limit, or the machine's
                raise ConvcanonError(f"out of memory: {name}: {err}", self.loc(op)) from None
            except budget.OverWork as err:
                raise ConvcanonError(budget.over_work(name, err), self.loc(op)) from None
            except (ValueError, IndexError, KeyError, TypeError, ArithmeticError) as err:
                raise ConvcanonError(f"cannot interpret '{name}': {err}", self.loc(op)) from None
        return []

    def region_fn(self, region: ir.Region) -> Callable[..., np.ndarray]:
        """A reducer body as a numpy function on whole arrays (a single op is mapped directly)."""
        block = region.blocks[0]
        kind = single_op(region)
        if kind in BINARY:
            fn = BINARY[kind]
            return lambda a, b: fn(a, b)

        def body(*arrays: np.ndarray) -> np.ndarray:
            return self.run_block(block, list(arrays), batched=True)[0]

        return body

    def region_fn_multi(self, region: ir.Region) -> Callable[..., list[np.ndarray]]:
        block = region.blocks[0]
        return lambda *arrays: self.run_block(block, list(arrays), batched=True)

    def run_region(self, region: ir.Region, args: Sequence[Any]) -> list[Any]:
        """Run a control-flow region once (not batched: its values have their declared shapes)."""
        return self.run_block(region.blocks[0], list(args))


def _has_chlo(module: ir.Module) -> bool:
    found = False

    def visit(op: Any) -> Any:
        nonlocal found
        if op.name.startswith("chlo."):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


@dataclass(frozen=True)
class _Step:
    """One op of a compiled block: its handler, operand and result values, result types."""

    op: ir.Operation
    name: str
    handler: Handler | None
    operands: list[ir.Value]
    results: list[ir.Value]
    types: list[TensorType]
    dead: list[ir.Value] = field(default_factory=list)  # values of the block last used here
    # what running it costs besides its operands' elements: its dispatch and its results', and
    # what an elementwise op's elements cost past being read and written
    steps: int = field(init=False)

    def __post_init__(self) -> None:
        results = sum(math.prod(t.shape) for t in self.types)
        steps = budget.OP_STEPS + results
        op = self.name.rpartition(".")[2]
        # only a measured op's operand has a dtype to look up (a tuple's has none)
        if self.operands and len(self.types) == 1 and op in element_steps.table("hlo"):
            operand = tensor_type(self.operands[0].type).dtype
            steps += element_steps.extra_steps("hlo", op, operand, self.types[0].dtype) * results
        object.__setattr__(self, "steps", steps)


def _mark_last_uses(block: ir.Block, steps: list[_Step]) -> None:
    """Give each step the block's values (arguments, results) that no later op reads, so a long
    function holds only its live values (as XLA does), not every intermediate it ever made.

    A use inside a nested region counts at the op that holds the region; a value used outside
    this block, or by an op not found, is kept.
    """
    index = {step.op: k for k, step in enumerate(steps)}
    defined = [(v, -1) for v in block.arguments]
    defined += [(r, k) for k, step in enumerate(steps) for r in step.results]
    for value, born in defined:
        last = born
        for use in value.uses:
            owner: Any = use.owner.operation
            while owner is not None and owner not in index:
                owner = owner.parent
            if owner is None:
                last = len(steps)
                break
            last = max(last, index[owner])
        if 0 <= last < len(steps) and steps[last].name not in _TERMINATORS:
            steps[last].dead.append(value)


_TERMINATORS = {"func.return", "stablehlo.return", "mhlo.return", "return"}


def _result_over(name: str, tt: TensorType, limit: int) -> str:
    return (
        f"{name} result {tt.element} tensor of shape {list(tt.shape)} needs {tt.nbytes} bytes, "
        f"over the memory limit of {limit}"
    )


def check_planned_peaks(
    module: ir.Module, filename: str, limit: int = DEFAULT_MEMORY_LIMIT, elementwise: bool = True
) -> None:
    """Refuse, before any input is made, a module the interpreter would refuse at an op: a result
    over `limit`, or (`elementwise`) an elementwise op whose plan (read from its types) is. Both
    are lower bounds of what the run checks, so nothing it would run is refused; a caller about
    to allocate inputs (verify's random ones, their f64 copies) learns it without allocating
    them. Results alone bound what another engine is handed: XLA aborts the process on a shape
    whose size overflows int64, and allocates whatever a module asks."""
    found: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        types = [r.type for r in op.results] + [v.type for v in op.operands]
        if not all(
            isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape
            for t in types
        ):
            return ir.WalkResult.ADVANCE
        for result in op.results:
            tt = tensor_type(result.type)
            if tt.nbytes > limit:
                found.append((op, _result_over(op.name, tt, limit)))
                return ir.WalkResult.INTERRUPT
        params = TYPE_PLANS.get(handler_of(op.name))  # pyright: ignore[reportArgumentType]
        if elementwise and params is not None and op.operands:
            fakes = [
                np.broadcast_to(np.zeros((), tt.dtype), tt.shape)
                for tt in (tensor_type(v.type) for v in op.operands)
            ]
            try:
                with budget.memory_limit(limit):
                    plan_elementwise(op.name, fakes, *params)
            except budget.OverBudget as err:
                found.append((op, f"out of memory: {op.name}: {err}"))
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        op, message = found[0]
        raise ConvcanonError(message, source_loc(op.location, filename))
