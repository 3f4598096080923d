"""Each elementwise op pays, per element, what the benchmark measured it to cost (the tables
`element_steps_<interpreter>.json`, written by bench/bench_element_steps.py): an f16 remainder,
a float-to-int convert, a sine of 1e300 or a complex exp take 10 to 200 ns an element, where a
step stands for half a nanosecond, and at 2 or 3 steps an element a loop of them ran up to 60
times longer than the work limit allows. The tables cover every elementwise op of the HLO and
migraphx interpreters (the TOSA and quantization kernels the latter runs too), so an op added
without measuring it fails here."""

from __future__ import annotations

from typing import cast

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.hlo.context import parse_module
from convcanon.reference.hlo.elementwise import BINARY, HANDLERS
from convcanon.reference.hlo.values import _DTYPES, NARROW  # pyright: ignore[reportPrivateUsage]
from convcanon.reference.hlo_interp import Env, Interpreter, normalize, tensor_type
from convcanon.reference.kernels import budget, element_steps
from convcanon.reference.migraphx_interp import Interpreter as MigraphxInterpreter
from convcanon.reference.migraphx_interp import flat_input_shape
from convcanon.reference.migraphx_kernels import OP_TABLE, type_dtype
from convcanon.reference.migraphx_quant_interp import QUANT_KERNELS, TOSA_QUANT_KERNELS
from convcanon.reference.tosa_interp import TOSA_KERNELS
from convcanon.tosa.op_base import TosaOp
from convcanon.xdsl_io import parse_file_text

TABLE = element_steps.table("hlo")
MIGRAPHX_TABLE = element_steps.table("migraphx")
# the TOSA and quantization kernels the migraphx interpreter runs beside OP_TABLE's
KERNELS = {op.name: op for op in {**TOSA_KERNELS, **QUANT_KERNELS, **TOSA_QUANT_KERNELS}}
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
    assert elementwise <= set(MIGRAPHX_TABLE) <= names | set(KERNELS)
    assert {"migraphx.convert", "migraphx.pow", "migraphx.where"} <= set(MIGRAPHX_TABLE)


# migraphx's integers are signed or unsigned, TOSA's signless (the HLO names) and of any width
MIGRAPHX_ELEMENT = {name: f"s{e}" if e[0] == "i" else e for name, e in ELEMENT_OF.items()}
TOSA_ELEMENT = {
    **ELEMENT_OF,
    "int4": "i4",
    "float8_e8m0fnu": "f8E8M0FNU",
    "float4_e2m1fn": "f4E2M1FN",
}
MIGRAPHX_OPS = {op.name: op for op in OP_TABLE}
# where and clip take operands of other types, batch norm five (run with the TOSA ops below);
# erf's kernel also counts its Python calls
NOT_OF_ONE_TYPE = ("migraphx.where", "migraphx.clip", "migraphx.batch_norm_inference")
MIGRAPHX_CASES = [
    (op, key, extra)
    for op, row in MIGRAPHX_TABLE.items()
    if op in MIGRAPHX_OPS and op not in (*NOT_OF_ONE_TYPE, "migraphx.erf")
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


# -- TOSA ops and the migraphx ops of mixed operands, in the same migraphx interpreter ------------

NOT_ELEMENTWISE = {
    "tosa.const", "tosa.const_shape", "tosa.conv2d", "tosa.depthwise_conv2d", "tosa.conv3d",
    "tosa.transpose_conv2d", "tosa.max_pool2d", "tosa.avg_pool2d", "tosa.matmul",
    "tosa.reduce_sum", "tosa.reduce_max", "tosa.reduce_min", "tosa.transpose", "tosa.reshape",
    "tosa.slice", "tosa.tile", "tosa.pad", "tosa.concat", "tosa.reverse", "tosa.gather",
    "tosa.scatter", "migraphx.quant_dot", "migraphx.quant_convolution",
    "migraphx.backwards_data_convolution", "migraphx.unpack",
}  # fmt: skip


def test_the_migraphx_table_covers_every_elementwise_tosa_and_quantization_kernel() -> None:
    """A kernel that is not listed as moving or contracting elements is elementwise, and is
    measured: a new TOSA op fails here until the benchmark has run it."""
    assert NOT_ELEMENTWISE <= set(KERNELS)
    elementwise = set(KERNELS) - NOT_ELEMENTWISE
    assert elementwise | {"migraphx.batch_norm_inference"} <= set(MIGRAPHX_TABLE)
    for op in elementwise:
        for key in MIGRAPHX_TABLE[op]:
            assert all(interp_dtype(name) for name in key.split("->")), key


TOSA_CASES = [
    (op, key, extra)
    for op, row in MIGRAPHX_TABLE.items()
    if op in KERNELS or op == "migraphx.batch_norm_inference"
    if op != "tosa.erf"  # erf's kernel also counts its Python calls
    for key, extra in row.items()
]


def _tosa_module(op: str, operand: str, result: str) -> str:
    """A one-op module of `op` on its arguments: a select's predicate first, a mul's shift, a
    negate's zero points, a quantize's zero point of its integer result type (else of its
    input's), a dequantize's of its input's."""
    if op == "migraphx.batch_norm_inference":  # per-channel parameters of N channels
        e = MIGRAPHX_ELEMENT[operand]
        x, p = f"!migraphx.shaped<1x{N}x{e}, {N}x1>", f"!migraphx.shaped<{N}x{e}, 1>"
        return _one_op_module(op, [x, p, p, p, p], x)
    if op.startswith("migraphx."):
        x, r = (f"!migraphx.shaped<{N}x{MIGRAPHX_ELEMENT[e]}, 1>" for e in (operand, result))
        zero = r if interp_dtype(result).kind in "iu" else x
        return _one_op_module(op, [x, x, zero] if op == "migraphx.quantizelinear" else [x, r, x], r)
    element = TOSA_ELEMENT[result if op == "tosa.select" else operand]
    t, one, r = (
        f"tensor<{N}x{element}>",
        f"tensor<1x{element}>",
        f"tensor<{N}x{TOSA_ELEMENT[result]}>",
    )
    arity = cast(type[TosaOp], KERNELS[op]).ARITY or 0
    operands = {
        "tosa.select": [f"tensor<{N}xi1>", t, t],
        "tosa.mul": [t, t, "tensor<1xi8>"],
        "tosa.negate": [t, one, one],
    }.get(op, [t] * arity)
    bound = "" if element.startswith("i") else ".0"
    properties = {
        "tosa.clamp": f" <{{max_val = 1{bound} : {element}, min_val = 0{bound} : {element}}}>",
        "tosa.arithmetic_right_shift": " <{round = false}>",
    }.get(op, "")
    return _one_op_module(op, operands, r, properties)


def _one_op_module(op: str, operands: list[str], result: str, properties: str = "") -> str:
    names = [f"%a{i}" for i in range(len(operands))]
    params = ", ".join(f"{name}: {t}" for name, t in zip(names, operands, strict=True))
    return (
        f"func.func @main({params}) -> {result} {{\n"
        f'  %0 = "{op}"({", ".join(names)}){properties} : ({", ".join(operands)}) -> {result}\n'
        f"  return %0 : {result}\n}}\n"
    )


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TOSA_CASES))
def test_a_tosa_or_quantization_op_pays_its_measured_steps_for_each_element(
    case: tuple[str, str, int],
) -> None:
    """Exactly: its dispatch, its operands' and result's elements, and the table's extra steps
    for each result element (ones as operands, zeros of a single element: no REQUIRE of TOSA
    fails)."""
    op, key, extra = case
    operand, result = key.split("->")
    text = _tosa_module(op, operand, result)
    interp = MigraphxInterpreter(parse_file_text(text, "m.mlir"), "m.mlir", {})
    args = [
        np.full(size, 1 if size == N else 0, dtype=type_dtype(ty))
        for ty in interp.functions["main"].function_type.inputs.data
        for size in flat_input_shape(ty)
    ]
    with budget.work_limit(1 << 62):
        interp.call("main", args)
    assert extra > 0
    read = sum(a.size for a in args)
    assert interp.meter.spent == budget.OP_STEPS + read + (1 + extra) * N
