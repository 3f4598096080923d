"""Steps an element of an elementwise op costs besides being read and written.

A step stands for half a nanosecond, and an element read or written is one; numpy takes far
more on some ops and types (an f16 remainder 25 ns an element, a float-to-int convert 10, a
sine of 1e300 70, a complex exp 200; an fp8 op that computes in f32 converts each way): at 2 or
3 steps an element a loop of them ran up to 60 times longer than the work limit allows.
`bench/bench_element_steps.py` runs every elementwise op of each interpreter on every element
type at its slowest inputs and writes what each element costs past that into
`element_steps_<interpreter>.json`, beside this module; a combination it lacks costs nothing
more.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources

import numpy as np

INTERPRETERS = ("hlo", "migraphx")


@functools.cache
def table(interpreter: str) -> dict[str, dict[str, int]]:
    """{op: {"operand dtype->result dtype": extra steps an element}} (numpy's dtype names) of
    the `hlo` interpreter (ops by their name without the dialect) or the `migraphx` one."""
    name = f"element_steps_{interpreter}.json"
    return json.loads(resources.files("convcanon.reference.kernels").joinpath(name).read_text())


@functools.cache
def extra_steps(interpreter: str, op: str, operand: np.dtype, result: np.dtype) -> int:
    measured: Mapping[str, int] = table(interpreter).get(op, {})
    return measured.get(f"{operand.name}->{result.name}", 0)
