"""What an element of each elementwise op costs the interpreters, past the steps they count.

Every elementwise op of the HLO interpreter (`reference/hlo/elementwise.HANDLERS`) and of the
migraphx one (`reference/migraphx_kernels.OP_TABLE`, those that take operands of one type) on
every element type they store differently (one MLIR type per numpy dtype: `i8` for i2/i4/i8), at
three input families of both signs: values near 1, values over the type's whole range
(log-uniform), and values in the top eighth of its range (a sine of 1e300 is numpy's slowest).
Each is timed three times on 2^18 elements, the fastest kept (the machine may be shared), and
the slowest family kept (for a remainder, whose long divisions are counted as it runs, values
near 1 only). An element's extra steps are what the op's time is worth at half a nanosecond a
step, less the steps the run already counted (its elements read and written), rounded up. They
are written to `src/convcanon/reference/kernels/element_steps_<interpreter>.json`, which the
interpreters read; the summary goes to bench/RESULTS_element_steps.md.

Run from the repository root:  PYTHONPATH=src python bench/bench_element_steps.py [--no-write]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "src" / "convcanon" / "reference" / "kernels"
RESULTS = ROOT / "bench" / "RESULTS_element_steps.md"
N = 1 << 18
REPEATS = 3
NS_PER_STEP = 0.5
# Ops whose kernels count steps that depend on the values (a remainder's long divisions): the
# table holds only what values near 1 cost, the rest is counted as they run.
COUNTED_BY_VALUE = {"remainder"}


class Case(NamedTuple):
    """One op on one operand type, and the one-op module that runs it on three arguments of
    that type (a predicate, for a select)."""

    op: str
    operand: np.dtype
    result: np.dtype
    label: str
    text: str


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


def _hlo_cases() -> Iterator[Case]:
    from convcanon.reference.hlo.elementwise import BINARY, HANDLERS
    from convcanon.reference.hlo.values import _DTYPES, NARROW  # pyright: ignore

    elements = {np.dtype(d).name: e for e, d in reversed(_DTYPES.items()) if e not in NARROW}
    for op in sorted(set(HANDLERS) - {"bitcast_convert"}):  # a view: no element is touched
        for operand, element in sorted(elements.items()):
            t = f"tensor<{N}x{element}>"
            for result, body in _hlo_bodies(op, element, t, list(elements.values()), BINARY):
                r = f"tensor<{N}x{result}>"
                text = (
                    f"func.func @main(%a: {t}, %b: {t}, %p: tensor<{N}xi1>) -> {r} {{\n"
                    f"  %0 = {body} -> {r}\n  return %0 : {r}\n}}\n"
                )
                label = f"{element}->{result}"
                yield Case(op, np.dtype(operand), np.dtype(_DTYPES[result]), label, text)


def _hlo_bodies(
    op: str, element: str, t: str, elements: list[str], binary: object
) -> Iterator[tuple[str, str]]:
    """(result type, the op's text up to its result type) for each result type it may have."""
    if op == "convert":
        for target in elements:
            yield target, f'"stablehlo.convert"(%a) : ({t})'
    elif op == "compare":
        for kind in ("", ", TOTALORDER"):
            yield "i1", f"stablehlo.compare LT, %a, %b{kind} : ({t}, {t})"
    elif op == "select":
        yield element, f'"stablehlo.select"(%p, %a, %b) : (tensor<{N}xi1>, {t}, {t})'
    elif op == "clamp":
        yield element, f'"stablehlo.clamp"(%a, %b, %a) : ({t}, {t}, {t})'
    elif op == "reduce_precision":
        attrs = "{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}"
        yield element, f'"stablehlo.reduce_precision"(%a) {attrs} : ({t})'
    else:
        operands = f"(%a, %b) : ({t}, {t})" if op in binary else f"(%a) : ({t})"  # type: ignore
        # is_finite's i1, real's and imag's float, complex's complex
        for result in dict.fromkeys([element, "i1", "f32", "f64", "complex<f32>", "complex<f64>"]):
            yield result, f'"stablehlo.{op}"{operands}'


def _migraphx_cases() -> Iterator[Case]:
    from convcanon.reference.migraphx_kernels import OP_TABLE

    elements = {
        "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
        "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ",
        "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
        "int8": "si8", "int32": "si32", "int64": "si64", "uint8": "ui8", "uint32": "ui32",
    }  # fmt: skip
    names = sorted(c.name for c in OP_TABLE if c.name.startswith("migraphx."))
    for op in names:
        for operand, element in elements.items():
            t = f"!migraphx.shaped<{N}x{element}, 1>"
            targets = elements.items() if op == "migraphx.convert" else [(operand, element)]
            for result, target in targets:
                r = f"!migraphx.shaped<{N}x{target}, 1>"
                for count in (1, 2, 3):
                    operands = ", ".join(["%a", "%b", "%c"][:count])
                    types = ", ".join([t] * count)
                    text = (
                        f"func.func @main(%a: {t}, %b: {t}, %c: {t}) -> {r} {{\n"
                        f'  %0 = "{op}"({operands}) : ({types}) -> {r}\n'
                        f"  return %0 : {r}\n}}\n"
                    )
                    yield Case(op, np.dtype(_dtype(operand)), np.dtype(_dtype(result)),
                               f"{element}->{target}", text)  # fmt: skip


def _dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name) if hasattr(ml_dtypes, name) else name)


def _run_hlo(text: str) -> Callable[[list[np.ndarray]], int] | None:
    """A runner of `text` on the HLO interpreter (the steps it counted), None if it does not
    parse."""
    from convcanon.diagnostics import ConvcanonError
    from convcanon.hlo.context import parse_module
    from convcanon.reference.hlo_interp import Env, Interpreter

    try:
        module = parse_module(text, "bench.mlir")
    except ConvcanonError:
        return None

    def run(args: list[np.ndarray]) -> int:
        env = Env()
        Interpreter(module, "bench.mlir", env=env).call("main", [args[0], args[1], args[3]])
        return env.meter.spent

    return run


def _run_migraphx(text: str) -> Callable[[list[np.ndarray]], int] | None:
    from convcanon.reference.migraphx_interp import Interpreter
    from convcanon.xdsl_io import parse_file_text

    try:
        module = parse_file_text(text, "bench.mlir")
    except Exception:  # noqa: BLE001  # an op that takes other operands or types
        return None

    def run(args: list[np.ndarray]) -> int:
        interp = Interpreter(module, "bench.mlir", {})
        interp.call("main", args[:3])
        return interp.meter.spent

    return run


RUNNERS = {"hlo": (_hlo_cases, _run_hlo), "migraphx": (_migraphx_cases, _run_migraphx)}


def _measure(
    case: Case, runner: Callable[[str], Callable[[list[np.ndarray]], int] | None]
) -> tuple[float, int] | None:
    """The fastest of REPEATS runs (seconds) and the steps the run counted, at the slowest of
    the input families; None when the module does not parse or run (an op the type does not
    take)."""
    from convcanon.diagnostics import ConvcanonError
    from convcanon.reference.kernels.budget import work_limit

    run = runner(case.text)
    if run is None:
        return None
    rng = np.random.default_rng(0)
    slowest: tuple[float, int] | None = None
    for family in FAMILIES[:1] if case.op in COUNTED_BY_VALUE else FAMILIES:
        args = [_inputs(case.operand, family, rng) for _ in range(3)]
        args.append(_inputs(np.dtype(bool), family, rng))
        times, spent = [], 0
        for _ in range(REPEATS):
            with work_limit(1 << 62):
                start = time.perf_counter()
                try:
                    spent = run(list(args))
                except (ConvcanonError, ValueError, TypeError):
                    return None
                times.append(time.perf_counter() - start)
        found = (min(times), spent)
        slowest = found if slowest is None or found[0] > slowest[0] else slowest
    return slowest


def main() -> int:
    parser = argparse.ArgumentParser(description="the cost of each elementwise op's elements")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from convcanon.reference.kernels import element_steps

    element_steps.extra_steps = lambda *_: 0  # pyright: ignore  # measured without
    results: dict[str, list[tuple[float, str, str, int]]] = {}
    for interpreter, (cases, runner) in RUNNERS.items():
        table: dict[str, dict[str, int]] = {}
        rows = results[interpreter] = []
        for case in cases():
            measured = _measure(case, runner)
            if measured is None:
                continue
            seconds, spent = measured
            extra = max(0, math.ceil((seconds * 1e9 / NS_PER_STEP - spent) / N))
            key = f"{case.operand.name}->{case.result.name}"
            row = table.setdefault(case.op, {})
            row[key] = max(row.get(key, 0), extra)
            rows.append((seconds * 1e9 / N, case.op, case.label, extra))
            print(f"{case.op} {case.label}: {seconds * 1e9 / N:.1f} ns, +{extra}", flush=True)
        table = {op: {k: v for k, v in sorted(r.items()) if v} for op, r in sorted(table.items())}
        if not args.no_write:
            (TABLES / f"element_steps_{interpreter}.json").write_text(
                json.dumps(table, indent=1) + "\n"
            )
    if not args.no_write:
        RESULTS.write_text(_results(results))
    return 0


def _results(results: dict[str, list[tuple[float, str, str, int]]]) -> str:
    lines = [
        "# What an element of each elementwise op costs (`bench/bench_element_steps.py`)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}."
        f" {N} elements, fastest of {REPEATS} runs, slowest of the input families"
        f" ({', '.join(FAMILIES)}). The machine may be shared with other work: the table then"
        " counts more than an idle machine takes, never less.",
    ]
    for interpreter, rows in results.items():
        rows.sort(reverse=True)
        charged = sum(1 for *_, extra in rows if extra)
        lines += [
            "",
            f"## The {interpreter} interpreter",
            "",
            f"{len(rows)} op and type combinations measured; {charged} cost more than the steps "
            "the interpreter counted for them at half a nanosecond a step, and are charged the "
            f"difference (`element_steps_{interpreter}.json`). The 25 slowest:",
            "",
            "| op | types | ns an element | extra steps an element |",
            "|---|---|---|---|",
            *(f"| {op} | {types} | {ns:.1f} | {extra} |" for ns, op, types, extra in rows[:25]),
        ]
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    raise SystemExit(main())
