"""What an element of each elementwise op costs the interpreters, past the steps they count.

Every elementwise op of the HLO interpreter (`reference/hlo/elementwise.HANDLERS`) and of the
migraphx one, in four suites: `hlo`; `migraphx` (`reference/migraphx_kernels.OP_TABLE`, those
that take operands of one type); `tosa` (the TOSA kernels the migraphx interpreter runs,
`tosa_interp.TOSA_KERNELS` and `migraphx_quant_interp.TOSA_QUANT_KERNELS`, in each operand
signature an elementwise TOSA op has, on every element type the verifiers let through);
`migraphx-mixed` (quantizelinear, dequantizelinear, batch_norm_inference: operands of several
types, or five). Each on every element type the interpreter stores differently (one MLIR type
per numpy dtype: `i8` for HLO's i2/i4/i8), at three input families of both signs: values near
1, values over the type's whole range (log-uniform), and values in the top eighth of its range
(a sine of 1e300 is numpy's slowest); a family the op refuses (TOSA's integer add past the
type, a REQUIRE) is skipped. Each is timed three times on 2^18 elements, the fastest kept (the
machine may be shared), and the slowest family kept (for a remainder, whose long divisions are
counted as it runs, values near 1 only). An element's extra steps are what the op's time is
worth at half a nanosecond a step, less the steps the run already counted (its operands and
result, erf's Python calls), rounded up, per result element.

The interpreters look a row up by the op's full name in the migraphx table (`tosa.add`), its
name without the dialect in the hlo one, and by "first operand dtype->result dtype": a cast's
pair is its two types, a comparison's ends in bool, and a select's starts with its bool
predicate, so its result type tells what it selects. They are written to
`src/convcanon/reference/kernels/element_steps_<interpreter>.json`, which the interpreters
read; the summary, with the date and load of each suite, goes to bench/RESULTS_element_steps.md.

Run from the repository root:  PYTHONPATH=src python bench/bench_element_steps.py [--no-write]
[--only SUITE ...] (`--only` merges the suites' ops into the tables and the summary, keeping
the rest as it was measured).
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
    """One op on one operand type, and the one-op module that runs it: on three arguments of
    that type (a predicate, for a select) unless `arguments` gives each one's type and size."""

    op: str
    operand: np.dtype
    result: np.dtype
    label: str
    text: str
    arguments: tuple[tuple[np.dtype, int], ...] = ()


FAMILIES = ("near 1", "whole range", "huge")


def _is_integer(dtype: np.dtype) -> bool:
    """Of any width: ml_dtypes' 4-bit integers are numpy kind V, as bf16 and fp8 are."""
    return dtype.kind in "iu" or dtype.name in ("int4", "uint4")


def _inputs(dtype: np.dtype, family: str, rng: np.random.Generator) -> np.ndarray:
    """2^18 values of `dtype`, both signs: near 1, over its whole range (log-uniform), or in the
    top eighth of its binary orders of magnitude (a sine's argument reduction is slowest)."""
    if dtype == np.bool_:
        return rng.integers(0, 2, N).astype(bool)
    if _is_integer(dtype):
        info = ml_dtypes.iinfo(dtype)
        near = (-3 if int(info.min) < 0 else 0, 4)
        low, high = near if family == "near 1" else (int(info.min), int(info.max))
        drawn = dtype if dtype.kind in "iu" else np.dtype(np.int8)
        return rng.integers(low, high, N, dtype=drawn, endpoint=True).astype(dtype)
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


MIGRAPHX_ELEMENTS = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ",
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
    "int8": "si8", "int32": "si32", "int64": "si64", "uint8": "ui8", "uint32": "ui32",
}  # fmt: skip


def _migraphx_cases() -> Iterator[Case]:
    from convcanon.reference.migraphx_kernels import OP_TABLE

    elements = MIGRAPHX_ELEMENTS
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


# Every element type the TOSA ops' verifiers let through that the interpreter stores (TOSA is
# signless; the fp8 FNUZ, e8m0, fp4 and int4 types run as they are when `types=conformant` is off).
TOSA_ELEMENTS = {
    "bool": "i1", "int4": "i4", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2", "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e8m0fnu": "f8E8M0FNU", "float4_e2m1fn": "f4E2M1FN",
}  # fmt: skip
ELEMENT_DTYPES = {e: name for name, e in [*MIGRAPHX_ELEMENTS.items(), *TOSA_ELEMENTS.items()]}
# The properties an op needs to parse: clamp's bounds are of its element type.
TOSA_PROPERTIES: dict[str, Callable[[str], str]] = {
    "tosa.clamp": lambda e: (
        f" <{{max_val = 1 : {e}, min_val = 0 : {e}}}>"
        if e.startswith("i")
        else f" <{{max_val = 1.0 : {e}, min_val = -1.0 : {e}}}>"
    ),
    "tosa.arithmetic_right_shift": lambda e: " <{round = false}>",
}


def _tosa_cases() -> Iterator[Case]:
    """Every TOSA kernel of the migraphx interpreter in every operand signature an elementwise
    op of TOSA has; what its verifier refuses (and every op that is not elementwise) is not
    run."""
    from convcanon.reference.migraphx_quant_interp import TOSA_QUANT_KERNELS
    from convcanon.reference.tosa_interp import TOSA_KERNELS

    for op in sorted(c.name for c in {**TOSA_KERNELS, **TOSA_QUANT_KERNELS}):
        for element in TOSA_ELEMENTS.values():
            t, one = f"tensor<{N}x{element}>", f"tensor<1x{element}>"
            signatures = [
                ([t], element),
                ([t, t], element),
                ([t, t], "i1"),  # a comparison's
                ([f"tensor<{N}xi1>", t, t], element),  # select's predicate first
                ([t, t, "tensor<1xi8>"], element),  # mul's shift
                ([t, one, one], element),  # negate's zero points
            ]
            if op == "tosa.cast":
                signatures = [([t], target) for target in TOSA_ELEMENTS.values()]
            properties = TOSA_PROPERTIES.get(op, lambda e: "")(element)
            for operands, result in signatures:
                yield _one_op_case(op, operands, f"tensor<{N}x{result}>", properties)


def _mixed_cases() -> Iterator[Case]:
    """The migraphx ops whose operands are of several types or more than three:
    quantizelinear (a float in, an integer or fp8 out, the zero point of either type),
    dequantizelinear (any input, the scale's float out) and batch_norm_inference (per-channel
    parameters, as many as its input's elements)."""
    elements = [f"!migraphx.shaped<{N}x{e}, 1>" for e in MIGRAPHX_ELEMENTS.values()]
    for x in elements:
        for other in elements:
            for zero in (x, other):
                yield _one_op_case("migraphx.quantizelinear", [x, x, zero], other)
            yield _one_op_case("migraphx.dequantizelinear", [x, other, x], other)
    for e in MIGRAPHX_ELEMENTS.values():
        x, p = f"!migraphx.shaped<1x{N}x{e}, {N}x1>", f"!migraphx.shaped<{N}x{e}, 1>"
        yield _one_op_case("migraphx.batch_norm_inference", [x, p, p, p, p], x)


def _one_op_case(op: str, operands: list[str], result: str, properties: str = "") -> Case:
    """`op` on the function's arguments, one per operand."""
    names = [f"%a{i}" for i in range(len(operands))]
    params = ", ".join(f"{name}: {t}" for name, t in zip(names, operands, strict=True))
    text = (
        f"func.func @main({params}) -> {result} {{\n"
        f'  %0 = "{op}"({", ".join(names)}){properties} : ({", ".join(operands)}) -> {result}\n'
        f"  return %0 : {result}\n}}\n"
    )
    arguments = tuple(_argument(t) for t in operands)
    label = f"{_shape_and_element(operands[0])[1]}->{_shape_and_element(result)[1]}"
    return Case(op, arguments[0][0], _argument(result)[0], label, text, arguments)


def _shape_and_element(ty: str) -> tuple[int, str]:
    """The element count and element type of `tensor<AxBxT>` or `!migraphx.shaped<AxBxT, S>`."""
    *dims, element = ty.partition("<")[2].partition(",")[0].rstrip(">").split("x")
    return math.prod(int(d) for d in dims), element


def _argument(ty: str) -> tuple[np.dtype, int]:
    """The dtype the interpreter holds a value of type `ty` in, and its element count."""
    size, element = _shape_and_element(ty)
    return _dtype(ELEMENT_DTYPES[element]), size


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
    from xdsl.dialects import func

    from convcanon.reference.migraphx_interp import Interpreter
    from convcanon.xdsl_io import parse_file_text

    try:
        module = parse_file_text(text, "bench.mlir")
    except Exception:  # noqa: BLE001  # an op that takes other operands or types
        return None

    (function,) = (op for op in module.ops if isinstance(op, func.FuncOp))
    arity = len(function.function_type.inputs)

    def run(args: list[np.ndarray]) -> int:
        interp = Interpreter(module, "bench.mlir", {})
        interp.call("main", args[:arity])
        return interp.meter.spent

    return run


class Suite(NamedTuple):
    """Cases measured together, the interpreter that runs them and whose table they go to."""

    interpreter: str
    cases: Callable[[], Iterator[Case]]
    runner: Callable[[str], Callable[[list[np.ndarray]], int] | None]
    title: str


SUITES = {
    "hlo": Suite("hlo", _hlo_cases, _run_hlo, "The hlo interpreter"),
    "migraphx": Suite("migraphx", _migraphx_cases, _run_migraphx, "The migraphx interpreter"),
    "tosa": Suite("migraphx", _tosa_cases, _run_migraphx, "TOSA ops (the migraphx interpreter)"),
    "migraphx-mixed": Suite(
        "migraphx",
        _mixed_cases,
        _run_migraphx,
        "migraphx ops of mixed operands: quantize, dequantize, batch norm (the migraphx "
        "interpreter)",
    ),
}


def _arguments(case: Case, family: str, rng: np.random.Generator) -> list[np.ndarray]:
    """The case's arguments from one input family; one of a single element (a shift, a zero
    point) is 0, a divisor TOSA refuses (0, and -1 of a minimum) is 1, and an integer power's
    exponent is not negative (numpy refuses it)."""
    kinds = case.arguments or ((case.operand, N),) * 3 + ((np.dtype(bool), N),)
    args = [
        _inputs(dtype, family, rng) if size == N else np.zeros(size, dtype) for dtype, size in kinds
    ]
    if case.op == "tosa.intdiv":
        divisor = args[1]
        args[1] = np.where((divisor == 0) | (divisor == -1), np.ones_like(divisor), divisor)
    if case.op == "tosa.pow" and _is_integer(case.operand):
        exponent = args[1]
        args[1] = np.where(exponent < 0, -(exponent + 1), exponent)
    return args


def _measure(
    case: Case, runner: Callable[[str], Callable[[list[np.ndarray]], int] | None]
) -> tuple[float, int] | None:
    """The fastest of REPEATS runs (seconds) and the steps the run counted, at the slowest of
    the input families the op takes (TOSA refuses an integer add that overflows, say: the
    family is skipped); None when the module does not parse or no family runs (an op the type
    does not take)."""
    from convcanon.diagnostics import ConvcanonError
    from convcanon.reference.kernels.budget import work_limit

    run = runner(case.text)
    if run is None:
        return None
    rng = np.random.default_rng(0)
    slowest: tuple[float, int] | None = None
    for family in FAMILIES[:1] if case.op in COUNTED_BY_VALUE else FAMILIES:
        args = _arguments(case, family, rng)
        times, spent = [], 0
        for _ in range(REPEATS):
            with work_limit(1 << 62):
                start = time.perf_counter()
                try:
                    spent = run(list(args))
                except (ConvcanonError, ArithmeticError, ValueError, TypeError):
                    break
                times.append(time.perf_counter() - start)
        if len(times) == REPEATS and (slowest is None or min(times) > slowest[0]):
            slowest = (min(times), spent)
    return slowest


Row = tuple[float, str, str, int]  # ns an element, op, types, extra steps an element


def _measure_suite(suite: Suite) -> tuple[dict[str, dict[str, int]], list[Row]]:
    """{op: {"operand->result": extra steps}} of every op that ran (an op of no extra steps
    is kept, empty: measured), and the rows of the summary."""
    table: dict[str, dict[str, int]] = {}
    rows: list[Row] = []
    for case in suite.cases():
        measured = _measure(case, suite.runner)
        if measured is None:
            continue
        seconds, spent = measured
        extra = max(0, math.ceil((seconds * 1e9 / NS_PER_STEP - spent) / N))
        key = f"{case.operand.name}->{case.result.name}"
        row = table.setdefault(case.op, {})
        row[key] = max(row.get(key, 0), extra)
        rows.append((seconds * 1e9 / N, case.op, case.label, extra))
        print(f"{case.op} {case.label}: {seconds * 1e9 / N:.1f} ns, +{extra}", flush=True)
    return {op: {k: v for k, v in sorted(r.items()) if v} for op, r in table.items()}, rows


def main() -> int:
    parser = argparse.ArgumentParser(description="the cost of each elementwise op's elements")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SUITES,
        help="measure these suites only, and merge their ops into the tables and the summary "
        "(the other rows are kept as they were measured)",
    )
    args = parser.parse_args()
    from convcanon.reference.kernels import element_steps

    element_steps.extra_steps = lambda *_: 0  # pyright: ignore  # measured without
    sections: dict[str, str] = {}
    tables: dict[str, dict[str, dict[str, int]]] = {}
    for name in args.only or SUITES:
        suite = SUITES[name]
        start, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
        measured, rows = _measure_suite(suite)
        tables.setdefault(suite.interpreter, {}).update(measured)
        when = f"Measured {start}, load average {load:.2f} then, {os.getloadavg()[0]:.2f} after"
        sections[suite.title] = _section(suite, rows, when)
    if not args.no_write:
        for interpreter, measured in tables.items():
            path = TABLES / f"element_steps_{interpreter}.json"
            kept = json.loads(path.read_text()) if args.only else {}
            table = dict(sorted({**kept, **measured}.items()))
            path.write_text(json.dumps(table, indent=1) + "\n")
        RESULTS.write_text(_results(sections, RESULTS.read_text() if args.only else ""))
    return 0


def _section(suite: Suite, rows: list[Row], when: str) -> str:
    rows.sort(reverse=True)
    charged = sum(1 for *_, extra in rows if extra)
    return "\n".join(
        [
            "",
            f"{when}. {len(rows)} op and type combinations measured; {charged} cost more than "
            "the steps the interpreter counted for them at half a nanosecond a step, and are "
            f"charged the difference (`element_steps_{suite.interpreter}.json`). The 25 "
            "slowest:",
            "",
            "| op | types | ns an element | extra steps an element |",
            "|---|---|---|---|",
            *(f"| {op} | {types} | {ns:.1f} | {extra} |" for ns, op, types, extra in rows[:25]),
            "",
        ]
    )


def _results(sections: dict[str, str], previous: str) -> str:
    """The summary: the sections measured now, in place of (or after) those of `previous`."""
    kept = dict(
        (part.partition("\n")[0], part.partition("\n")[2]) for part in previous.split("\n## ")[1:]
    )
    header = [
        "# What an element of each elementwise op costs (`bench/bench_element_steps.py`)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}."
        f" {N} elements, fastest of {REPEATS} runs, slowest of the input families"
        f" ({', '.join(FAMILIES)}). The machine may be shared with other work (each section says"
        " the load average, of 1 minute, as it was measured): the table then counts more than an"
        " idle machine takes, never less.",
    ]
    merged = {**kept, **sections}
    return "\n".join(
        [*header, *(f"\n## {title}\n{body.rstrip()}" for title, body in merged.items()), ""]
    )


if __name__ == "__main__":
    raise SystemExit(main())
