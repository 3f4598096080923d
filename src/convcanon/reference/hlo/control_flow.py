"""Control flow: while, case, if, calls and composites (bounded: loop iterations, call depth)."""

from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import MAX_CALL_DEPTH, ConvcanonError
from convcanon.reference.hlo.machine import Handler, Machine
from convcanon.reference.hlo.values import TensorType


def _while(it: Machine, op: ir.Operation, args: list[Any], rt):
    cond, body = op.regions
    values = list(args)
    limit = it.env.max_loop_iterations
    for _ in range(limit):
        if not bool(np.asarray(it.run_region(cond, values)[0])):
            return values
        values = it.run_region(body, values)
    if not bool(np.asarray(it.run_region(cond, values)[0])):
        return values
    raise ConvcanonError(
        f"stablehlo.while ran {limit} iterations and its condition still holds "
        f"(the limit; `convcanon run --max-loop-iterations N` sets it)",
        it.loc(op),
    )


def _case(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    """An index out of range runs the last branch."""
    branches = list(op.regions)
    index = int(np.asarray(args[0]))
    if not 0 <= index < len(branches):
        index = len(branches) - 1
    return it.run_region(branches[index], [])


def _if(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    taken = op.regions[0] if bool(np.asarray(args[0])) else op.regions[1]
    return it.run_region(taken, [])


def _call(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    if callee not in it.functions:
        raise ConvcanonError(f"call to unknown function @{callee}", it.loc(op))
    if not it.functions[callee].regions[0].blocks:
        raise ConvcanonError(f"call to @{callee}, a declaration without a body", it.loc(op))
    if it.env.call_depth >= MAX_CALL_DEPTH:
        raise ConvcanonError(
            f"calls nest deeper than {MAX_CALL_DEPTH} at @{callee} (recursion?)", it.loc(op)
        )
    it.env.call_depth += 1
    try:
        return it.call(callee, args)
    finally:
        it.env.call_depth -= 1


def _composite(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    """`stablehlo.composite` means its decomposition function."""
    callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
    if callee not in it.functions:
        raise ConvcanonError(f"composite's decomposition @{callee} is not defined", it.loc(op))
    return it.call(callee, args)


HANDLERS: dict[str, Handler] = {
    "while": _while,
    "case": _case,
    "if": _if,
    "composite": _composite,
    "func.call": _call,
    "call": _call,
}
