"""The reference's migraphx `div` on integers is the exact truncated quotient, wrapped back as
C++ converts it (-128 / -1 is -128 in int8), at every width, judged against XLA's divide.

It divided through f64: a 64-bit quotient past 2^53 was rounded ((2^62 + 1) / 1 gave 2^62) and
an unsigned one past 2^63 was garbage ((2^64 - 1) / 1 gave 0). Division by zero is undefined in
MIGraphX (XLA gives -1, the reference 0): divisors are drawn nonzero.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

pytest.importorskip("jax")

TYPES = {"si8": "i8", "si16": "i16", "si32": "i32", "si64": "i64", "ui32": "ui32", "ui64": "ui64"}
N = 6


def _dtype(element: str) -> np.dtype:
    return np.dtype(element.replace("si", "int").replace("ui", "uint"))


@st.composite
def _operands(draw: st.DrawFn, element: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(_dtype(element))
    low, high = int(info.min), int(info.max)
    edge = st.sampled_from([low, low + 1, high, high - 1, 1, 2, 3]) | st.integers(low, high)
    a = draw(st.lists(edge, min_size=N, max_size=N))
    nonzero = edge.filter(lambda v: v != 0) | st.sampled_from([1, 2, 7] + ([-1] if low else []))
    b = draw(st.lists(nonzero, min_size=N, max_size=N))
    return np.array(a, _dtype(element)), np.array(b, _dtype(element))


@pytest.mark.parametrize("element", list(TYPES))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_integer_div_matches_xla(element: str, data: st.DataObject):
    from convcanon.verify.engines import ENGINES

    a, b = data.draw(_operands(element))
    t, ht = f"<{N}x{element}, 1>", f"tensor<{N}x{TYPES[element]}>"
    mx_text = (
        f"func.func @main(%a: !migraphx.shaped{t}, %b: !migraphx.shaped{t})"
        f" -> !migraphx.shaped{t} {{\n  %r = migraphx.div %a, %b : {t}, {t} -> {t}\n"
        f"  return %r : !migraphx.shaped{t}\n}}\n"
    )
    hlo_text = (
        f"func.func @main(%a: {ht}, %b: {ht}) -> {ht} {{\n"
        f"  %0 = stablehlo.divide %a, %b : {ht}\n  return %0 : {ht}\n}}\n"
    )
    module = parse_file_text(mx_text, "m.mlir")
    ours = Interpreter(module, "m.mlir", {}).run("main", [a, b])[0]
    xla = ENGINES["xla"](hlo_text, "h.mlir", "main", [a, b])[0]
    assert ours.tolist() == np.asarray(xla).astype(ours.dtype).tolist()
