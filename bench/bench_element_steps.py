"""What an element of each elementwise op costs the HLO interpreter, past the steps it counts.

Every elementwise op of the interpreter (`reference/hlo/elementwise.HANDLERS`) on every element
type it stores differently (one MLIR type per numpy dtype: `i8` for i2/i4/i8), at three input
families of both signs: values near 1, values over the type's whole range (log-uniform), and
values in the top eighth of its range (a sine of 1e300 is numpy's slowest). Each is timed three
times on 2^18 elements, the fastest kept (the machine may be shared), and the slowest family
kept (for a remainder, whose long divisions are counted as it runs, values near 1 only). An
element's extra steps are what the op's time is worth at half a nanosecond a step, less the
steps the run already counted (its elements read and written), rounded up. They are written to
`src/convcanon/reference/hlo/element_steps.json`, which the interpreter reads; the summary goes
to bench/RESULTS_element_steps.md.

Run from the repository root:  PYTHONPATH=src python bench/bench_element_steps.py [--no-write]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Iterator
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "src" / "convcanon" / "reference" / "hlo" / "element_steps.json"
RESULTS = ROOT / "bench" / "RESULTS_element_steps.md"
N = 1 << 18
REPEATS = 3
NS_PER_STEP = 0.5


def _representatives() -> dict[str, str]:
    """One MLIR element type per numpy storage dtype (`i8` for i2, i4 and i8)."""
    from convcanon.reference.hlo.values import _DTYPES, NARROW  # pyright: ignore

    found: dict[str, str] = {}
    for element, dtype in _DTYPES.items():
        if element not in NARROW:
            found.setdefault(np.dtype(dtype).name, element)
    return found


def _t(element: str) -> str:
    return f"tensor<{N}x{element}>"


def _modules(op: str, element: str, elements: list[str]) -> Iterator[tuple[str, str]]:
    """(key, module) of `op` on `element`: its first operand's and result's types, and a
    one-op module in generic form (each result type the op may have)."""
    t = _t(element)
    head = f"func.func @main(%a: {t}, %b: {t}, %p: {_t('i1')}) -> "

    def module(result: str, body: str) -> tuple[str, str]:
        r = _t(result)
        return result, f"{head}{r} {{\n  %0 = {body} -> {r}\n  return %0 : {r}\n}}\n"

    if op == "convert":
        for target in elements:
            yield module(target, f'"stablehlo.convert"(%a) : ({t})')
    elif op == "compare":
        for kind in ("", ", TOTALORDER"):
            yield module("i1", f"stablehlo.compare LT, %a, %b{kind} : ({t}, {t})")
    elif op == "select":
        yield module(element, f'"stablehlo.select"(%p, %a, %b) : ({_t("i1")}, {t}, {t})')
    elif op == "clamp":
        yield module(element, f'"stablehlo.clamp"(%a, %b, %a) : ({t}, {t}, {t})')
    elif op == "reduce_precision":
        attrs = "{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}"
        yield module(element, f'"stablehlo.reduce_precision"(%a) {attrs} : ({t})')
    else:
        from convcanon.reference.hlo.elementwise import BINARY

        operands = f"(%a, %b) : ({t}, {t})" if op in BINARY else f"(%a) : ({t})"
        # is_finite's i1, real's and imag's float, complex's complex
        for result in dict.fromkeys([element, "i1", "f32", "f64", "complex<f32>", "complex<f64>"]):
            yield module(result, f'"stablehlo.{op}"{operands}')


FAMILIES = ("near 1", "whole range", "huge")


def _inputs(dtype: np.dtype, family: str, rng: np.random.Generator) -> np.ndarray:
    """2^18 values of `dtype`, both signs: near 1, over its whole range (log-uniform), or in the
    top eighth of its binary orders of magnitude (a sine's argument reduction is slowest)."""
    if dtype == np.bool_:
        return rng.integers(0, 2, N).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        near = (-3 if dtype.kind == "i" else 0, 4)
        low, high = near if family == "near 1" else (info.min, info.max)
        return rng.integers(low, high, N, dtype=dtype, endpoint=True)
    part = np.float32 if dtype == np.complex64 else np.float64 if dtype.kind == "c" else dtype
    info = ml_dtypes.finfo(part)
    if family == "near 1":
        values = rng.uniform(0.5, 1.5, N) * rng.choice([-1.0, 1.0], N)
    else:
        low, high = math.log2(float(info.tiny)), math.log2(float(info.max)) - 1
        low = high - (high - low) / 8 if family == "huge" else low
        values = np.exp2(rng.uniform(low, high, N)) * rng.choice([-1.0, 1.0], N)
    real = values.astype(part)
    if dtype.kind == "c":
        return (real + 1j * rng.permutation(real)).astype(dtype)
    return real


# Ops whose kernels count steps that depend on the values (a remainder's long divisions): the
# table holds only what values near 1 cost, the rest is counted as they run.
COUNTED_BY_VALUE = {"remainder"}


def _measure(text: str, dtype: np.dtype, families: tuple[str, ...]) -> tuple[float, int] | None:
    """The fastest of REPEATS runs (seconds) and the steps the run counted, at the slowest of
    the input `families`; None when the module does not parse (an op the type does not
    take)."""
    from convcanon.diagnostics import ConvcanonError
    from convcanon.hlo.context import parse_module
    from convcanon.reference.hlo_interp import Env, Interpreter
    from convcanon.reference.kernels.budget import work_limit

    try:
        module = parse_module(text, "bench.mlir")
    except ConvcanonError:
        return None
    rng = np.random.default_rng(0)
    slowest: tuple[float, int] | None = None
    for family in families:
        args = [_inputs(dtype, family, rng), _inputs(dtype, family, rng)]
        args.append(_inputs(np.dtype(bool), family, rng))
        times = []
        for _ in range(REPEATS):
            env = Env()
            interp = Interpreter(module, "bench.mlir", env=env)
            with work_limit(1 << 62):
                start = time.perf_counter()
                try:
                    interp.call("main", list(args))
                except ConvcanonError:
                    return None
                times.append(time.perf_counter() - start)
        found = (min(times), env.meter.spent)
        slowest = found if slowest is None or found[0] > slowest[0] else slowest
    return slowest


def main() -> int:
    parser = argparse.ArgumentParser(description="the cost of each elementwise op's elements")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from convcanon.reference.hlo import element_steps
    from convcanon.reference.hlo.elementwise import HANDLERS

    element_steps._table = lambda: {}  # pyright: ignore  # measured without the table
    representatives = _representatives()
    elements = list(representatives.values())
    table: dict[str, dict[str, int]] = {}
    rows: list[tuple[float, str, str, int]] = []
    for op in sorted(set(HANDLERS) - {"bitcast_convert"}):  # a view: no element is touched
        for dtype_name, element in representatives.items():
            for result, text in _modules(op, element, elements):
                families = FAMILIES[:1] if op in COUNTED_BY_VALUE else FAMILIES
                measured = _measure(text, np.dtype(dtype_name), families)
                if measured is None:
                    continue
                seconds, spent = measured
                extra = max(0, math.ceil((seconds * 1e9 / NS_PER_STEP - spent) / N))
                key = f"{dtype_name}->{np.dtype(representatives_dtype(result)).name}"
                row = table.setdefault(op, {})
                row[key] = max(row.get(key, 0), extra)
                rows.append((seconds * 1e9 / N, op, f"{element}->{result}", extra))
                print(f"{op} {element}->{result}: {seconds * 1e9 / N:.1f} ns, +{extra}", flush=True)
    table = {op: {k: v for k, v in sorted(row.items()) if v} for op, row in sorted(table.items())}
    if not args.no_write:
        TABLE.write_text(json.dumps(table, indent=1) + "\n")
        RESULTS.write_text(_results(rows))
    return 0


def representatives_dtype(element: str) -> np.dtype:
    from convcanon.reference.hlo.values import _DTYPES  # pyright: ignore

    return np.dtype(_DTYPES[element])


def _results(rows: list[tuple[float, str, str, int]]) -> str:
    rows.sort(reverse=True)
    charged = sum(1 for *_, extra in rows if extra)
    lines = [
        "# What an element of each elementwise op costs (`bench/bench_element_steps.py`)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}."
        f" {N} elements, fastest of {REPEATS} runs, slowest of the input families"
        f" ({', '.join(FAMILIES)}). The machine may be shared with other work: the table then"
        " counts more than an idle machine takes, never less.",
        "",
        f"{len(rows)} op and type combinations measured; {charged} cost more than the steps the "
        "interpreter counted for them at half a nanosecond a step, and are charged the "
        "difference (`element_steps.json`). The 25 slowest:",
        "",
        "| op | types | ns an element | extra steps an element |",
        "|---|---|---|---|",
        *(f"| {op} | {types} | {ns:.1f} | {extra} |" for ns, op, types, extra in rows[:25]),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
