"""An 8- or 16-bit integer dot is the product sum modulo 2^width, with no TOSA MATMUL partial
sum outside its type.

MIGraphX's reference target sums the products in double and converts the sum to the type (a
C++ conversion, undefined outside its range); the wrap is taken there, as numpy's int8 matmul
(our reference) and IREE compute it. TOSA's MATMUL adds in its output type with apply_add_s
(REQUIRE: every partial sum fits), and i8 x i8 -> i8 is no TOSA signature: the lowering
multiplies i8 x i8 -> i32 (si8 and ui8 alike: the low 8 bits of the sum do not depend on the
sign) and narrows back; 16-bit values as three such matmuls of their bytes (TOSA has no
i16 x i16 -> i16 signature). Judged on IREE and our TOSA interpreter against the
reference.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import as_signless, assert_close, reference
from .test_integer_overflow_wraps import WIDE, _lowered, _wrapped

pytest.importorskip("iree.runtime")

M, K, N = 2, 5, 3


def _dot(element: str) -> str:
    a, b, r = (
        f"<{M}x{K}x{element}, {K}x1>",
        f"<{K}x{N}x{element}, {N}x1>",
        f"<{M}x{N}x{element}, {N}x1>",
    )
    return (
        f"func.func @main(%a: !migraphx.shaped{a}, %b: !migraphx.shaped{b}) -> "
        f"!migraphx.shaped{r} {{\n"
        f"  %r = migraphx.dot %a, %b : {a}, {b} -> {r}\n"
        f"  return %r : !migraphx.shaped{r}\n}}\n"
    )


@cache
def _compiled(element: str) -> tuple[str, bytes]:
    from convcanon.verify.iree_tosa import compile_tosa_text

    tosa_text = _lowered(_dot(element))
    return tosa_text, compile_tosa_text(tosa_text)


@pytest.mark.parametrize("element", ["si8", "ui8", "si16", "ui16"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_an_8_or_16_bit_dot_wraps_its_product_sum(element: str, data: st.DataObject):
    from convcanon.verify.iree_tosa import run_vmfb

    info = np.iinfo(WIDE[element])
    low, high = int(info.min), int(info.max)
    value = st.sampled_from([low, high, low + 1, high - 1, 0, 1]) | st.integers(low, high)
    a = np.array(data.draw(st.lists(value, min_size=M * K, max_size=M * K)), WIDE[element])
    b = np.array(data.draw(st.lists(value, min_size=K * N, max_size=K * N)), WIDE[element])
    a[:K] = high  # a row of the maximum against a column of the maximum: the sum overflows
    b[::N] = high
    expected = reference(_dot(element), [a, b])
    exact = a.reshape(M, K).astype(object).dot(b.reshape(K, N).astype(object)).reshape(-1)
    assert expected[0].reshape(-1).tolist() == _wrapped(exact, info.bits, low < 0)
    tosa_text, vmfb = _compiled(element)
    flat = [as_signless(a), as_signless(b)]
    assert_close(run_vmfb(vmfb, "main", flat), expected)
    assert_close(reference(tosa_text, flat), expected)
