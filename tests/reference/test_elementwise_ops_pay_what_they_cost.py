"""Each elementwise op pays, per element, what the benchmark measured it to cost (the tables
`element_steps_<interpreter>.json`, written by bench/bench_element_steps.py): an f16 remainder,
a float-to-int convert, a sine of 1e300 or a complex exp take 10 to 200 ns an element, where a
step stands for half a nanosecond, and at 2 or 3 steps an element a loop of them ran up to 60
times longer than the work limit allows. The tables cover every elementwise op of the HLO and
migraphx interpreters, so an op added without measuring it fails here."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.hlo.context import parse_module
from convcanon.reference.hlo.elementwise import BINARY, HANDLERS
from convcanon.reference.hlo.values import _DTYPES, NARROW  # pyright: ignore[reportPrivateUsage]
from convcanon.reference.hlo_interp import Env, Interpreter, normalize, tensor_type
from convcanon.reference.kernels import budget, element_steps
from convcanon.reference.migraphx_interp import Interpreter as MigraphxInterpreter
from convcanon.reference.migraphx_kernels import OP_TABLE
from convcanon.xdsl_io import parse_file_text

TABLE = element_steps.table("hlo")
MIGRAPHX_TABLE = element_steps.table("migraphx")
ELEMENT_OF = {  # an MLIR element type of each storage type, as the benchmark wrote them
    np.dtype(dtype).name: element
    for element, dtype in reversed(_DTYPES.items())
    if element not in NARROW
}
N = 1000


def test_the_table_covers_every_elementwise_op_and_nothing_else() -> None:
    assert set(TABLE) == set(HANDLERS) - {"bitcast_convert"}  # a view touches no element
    for row in TABLE.values():
        for key in row:
            operand, _, result = key.partition("->")
            assert operand in ELEMENT_OF and result in ELEMENT_OF, key


UNARY_OR_BINARY = [
    (op, key, extra)
    for op, row in TABLE.items()
    if op in HANDLERS and op not in ("compare", "select", "clamp", "reduce_precision")
    for key, extra in row.items()
]


def _module(op: str, operand: str, result: str) -> str:
    t, r = f"tensor<{N}x{operand}>", f"tensor<{N}x{result}>"
    operands = f"(%a, %a) : ({t}, {t})" if op in BINARY else f"(%a) : ({t})"
    return (
        f"func.func @main(%a: {t}) -> {r} {{\n"
        f'  %0 = "stablehlo.{op}"{operands} -> {r}\n  return %0 : {r}\n}}\n'
    )


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(UNARY_OR_BINARY))
def test_an_op_pays_its_measured_steps_for_each_element(case: tuple[str, str, int]) -> None:
    """Exactly: its dispatch, its elements read and written, and the table's extra steps for
    each (integers near 0 as operands: no remainder takes a long division)."""
    op, key, extra = case
    operand, result = (ELEMENT_OF[name] for name in key.split("->"))
    module = parse_module(_module(op, operand, result), "m.mlir")
    with budget.work_limit(1 << 62):
        env = Env()
    interp = Interpreter(module, "m.mlir", env=env)
    t = tensor_type(module.body.operations[0].regions[0].blocks[0].arguments[0].type)
    rng = np.random.default_rng(0)
    interp.call("main", [normalize(rng.integers(1, 4, t.shape), t)])
    operands = 2 if op in BINARY else 1
    assert extra > 0
    assert env.meter.spent == budget.OP_STEPS + (operands + 1 + extra) * N


def test_the_migraphx_table_covers_every_elementwise_kernel() -> None:
    names = {op.name for op in OP_TABLE}
    elementwise = {op.name for op, k in OP_TABLE.items() if "_elementwise" in k.__qualname__}
    assert elementwise <= set(MIGRAPHX_TABLE) <= names
    assert {"migraphx.convert", "migraphx.pow", "migraphx.where"} <= set(MIGRAPHX_TABLE)


MIGRAPHX_ELEMENT = {
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ",
    "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
    "int8": "si8", "int32": "si32", "int64": "si64", "uint8": "ui8", "uint32": "ui32",
}  # fmt: skip
MIGRAPHX_OPS = {op.name: op for op in OP_TABLE}
MIGRAPHX_CASES = [
    (op, key, extra)
    for op, row in MIGRAPHX_TABLE.items()
    # where and clip take operands of other types; erf's kernel also counts its Python calls
    if op not in ("migraphx.where", "migraphx.clip", "migraphx.erf")
    for key, extra in row.items()
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MIGRAPHX_CASES))
def test_a_migraphx_op_pays_its_measured_steps_for_each_element(
    case: tuple[str, str, int],
) -> None:
    op, key, extra = case
    operand, result = key.split("->")
    t = f"!migraphx.shaped<{N}x{MIGRAPHX_ELEMENT[operand]}, 1>"
    r = f"!migraphx.shaped<{N}x{MIGRAPHX_ELEMENT[result]}, 1>"
    binary = len(MIGRAPHX_OPS[op].OPERAND_NAMES) == 2
    operands, types = ("%a, %a", f"{t}, {t}") if binary else ("%a", t)
    text = (
        f"func.func @main(%a: {t}) -> {r} {{\n"
        f'  %0 = "{op}"({operands}) : ({types}) -> {r}\n  return %0 : {r}\n}}\n'
    )
    interp = MigraphxInterpreter(parse_file_text(text, "m.mlir"), "m.mlir", {})
    with budget.work_limit(1 << 62):
        interp.call("main", [np.ones(N, dtype=interp_dtype(operand))])
    operand_count = 2 if binary else 1
    assert interp.meter.spent == budget.OP_STEPS + (operand_count + 1 + extra) * N


def interp_dtype(name: str) -> np.dtype:
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name) if hasattr(ml_dtypes, name) else name)
