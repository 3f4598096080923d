"""Steps an element of an elementwise op costs besides being read and written.

A step stands for half a nanosecond, and an element read or written is one; numpy takes far
more on some ops and types (an f16 remainder 25 ns an element, a float-to-int convert 10, a
sine of 1e300 60, a complex exp 180): at 2 or 3 steps an element a loop of them ran up to 50
times longer than the work limit allows. `bench/bench_element_steps.py` runs every
elementwise op on every element type at its slowest inputs and writes what each element costs
past that into `element_steps.json`, beside this module; a combination it lacks costs nothing
more.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from jaxlib.mlir import ir

from convcanon.reference.hlo.values import TensorType, tensor_type

TABLE = "element_steps.json"


@functools.cache
def _table() -> dict[str, dict[str, int]]:
    """{op: {"operand dtype->result dtype": extra steps an element}} (numpy's dtype names)."""
    return json.loads(resources.files("convcanon.reference.hlo").joinpath(TABLE).read_text())


def extra_steps(op: str, operand: ir.Type, result: TensorType) -> int:
    """What each result element of `op` (`stablehlo.sine`) costs past being read and written,
    for its first operand's type and its result's."""
    row = _table().get(op.rpartition(".")[2])
    if row is None:
        return 0
    return row.get(f"{tensor_type(operand).dtype.name}->{result.dtype.name}", 0)
