"""Our TOSA interpreter's integer MATMUL is the specification's: each product is apply_mul_s in
the output type (its low bits), and the products are added over K in order with apply_add_s,
which REQUIREs every partial sum to fit the output type; past it the result is unpredictable
and refused. It computed in int64 and wrapped the result, as IREE happens to."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32}
K = 4


def _matmul(element: str, out: str) -> str:
    a, b = f"tensor<1x1x{K}x{element}>", f"tensor<1x{K}x1x{element}>"
    r, z = f"tensor<1x1x1x{out}>", f"tensor<1x{element}>"
    return (
        f"func.func @main(%a: {a}, %b: {b}) -> {r} {{\n"
        f'  %z = "tosa.const"() <{{values = dense<0> : {z}}}> : () -> {z}\n'
        f'  %r = "tosa.matmul"(%a, %b, %z, %z) : ({a}, {b}, {z}, {z}) -> {r}\n'
        f"  return %r : {r}\n}}\n"
    )


def _wrap(value: int, bits: int) -> int:
    low = value % (1 << bits)
    return low - (1 << bits) if low >= 1 << (bits - 1) else low


@pytest.mark.parametrize(("element", "out"), [("i8", "i8"), ("i16", "i16"), ("i32", "i32")])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_integer_matmul_is_exact_or_refused(element: str, out: str, data: st.DataObject):
    info = np.iinfo(TYPES[element])
    low, high = int(info.min), int(info.max)
    edge = st.sampled_from([low, low + 1, -1, 0, 1, high - 1, high]) | st.integers(low, high)
    a = data.draw(st.lists(edge, min_size=K, max_size=K))
    b = data.draw(st.lists(edge, min_size=K, max_size=K))
    bits = np.iinfo(TYPES[out]).bits
    products = [_wrap(x * y, bits) for x, y in zip(a, b, strict=True)]
    partial = [sum(products[: k + 1]) for k in range(K)]
    module = parse_file_text(_matmul(element, out), "t.mlir")
    args = [
        np.array(a, TYPES[element]).reshape(1, 1, K),
        np.array(b, TYPES[element]).reshape(1, K, 1),
    ]
    top = (1 << (bits - 1)) - 1
    if all(-top - 1 <= p <= top for p in partial):
        got = Interpreter(module, "t.mlir", {}).run("main", args)[0]
        assert got.reshape(-1).tolist() == [partial[-1]]
    else:
        with pytest.raises(ConvcanonError, match="unpredictable in TOSA"):
            Interpreter(module, "t.mlir", {}).run("main", args)


def test_an_i8_matmul_accumulates_exactly_in_i32():
    """TOSA's own signature for bytes: no partial sum of 4 products of -128 leaves i32."""
    module = parse_file_text(_matmul("i8", "i32"), "t.mlir")
    args = [np.full((1, 1, K), -128, np.int8), np.full((1, K, 1), -128, np.int8)]
    assert Interpreter(module, "t.mlir", {}).run("main", args)[0].reshape(-1).tolist() == [
        K * 128 * 128
    ]
