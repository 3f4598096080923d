"""Our TOSA interpreter's shifts equal IREE's on every integer width, shift amounts of 0 to the
width less one (the specification's range): an i64 logical shift raised OverflowError (its
mask, 2^64 - 1, was built in int64) and `arithmetic_right_shift {round = true}` was an
assertion, both tracebacks from `convcanon run`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
SHIFTS = [
    ("logical_left_shift", ""),
    ("logical_right_shift", ""),
    ("arithmetic_right_shift", " <{round = false}>"),
    ("arithmetic_right_shift", " <{round = true}>"),
]


def _shift(name: str, properties: str, element: str, n: int) -> str:
    t = f"tensor<{n}x{element}>"
    return (
        f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
        f'  %r = "tosa.{name}"(%a, %b){properties} : ({t}, {t}) -> {t}\n'
        f"  return %r : {t}\n}}\n"
    )


def _ours(text: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return Interpreter(parse_file_text(text, "s.mlir"), "s.mlir", {}).run("main", [a, b])[0]


@pytest.mark.parametrize("element", list(TYPES))
@pytest.mark.parametrize(("name", "properties"), SHIFTS, ids=[f"{n}{p}" for n, p in SHIFTS])
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_shifts_equal_iree(name: str, properties: str, element: str, data: st.DataObject) -> None:
    pytest.importorskip("iree.runtime")
    from convcanon.verify.iree_tosa import run_tosa_text

    dtype = np.dtype(TYPES[element])
    info, bits = np.iinfo(dtype), dtype.itemsize * 8
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=8))
    a = np.array([info.min, info.max, -1, *values], dtype)
    b = np.array(data.draw(st.lists(st.integers(0, bits - 1), min_size=a.size, max_size=a.size)))
    b = b.astype(dtype)
    text = _shift(name, properties, element, a.size)
    ours = _ours(text, a, b)
    assert ours.dtype == dtype
    assert ours.tolist() == run_tosa_text(text, [a, b])[0].tolist()
