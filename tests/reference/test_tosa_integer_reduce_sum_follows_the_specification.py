"""Our TOSA interpreter's integer REDUCE_SUM is the specification's: it adds along the axis in
index order (apply_add_s) and REQUIREs every partial sum to fit the type, so a sum that leaves
the range on the way (even if it comes back) is refused as unpredictable; it summed in int64
and wrapped, as IREE happens to."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

TYPES = {"i32": np.int32, "i64": np.int64}
N = 5


def _reduce_sum(element: str) -> str:
    t, r = f"tensor<2x{N}x{element}>", f"tensor<2x1x{element}>"
    return (
        f"func.func @main(%a: {t}) -> {r} {{\n"
        f'  %r = "tosa.reduce_sum"(%a) <{{axis = 1 : i32}}> : ({t}) -> {r}\n'
        f"  return %r : {r}\n}}\n"
    )


@pytest.mark.parametrize("element", list(TYPES))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_integer_reduce_sum_is_exact_or_refused(element: str, data: st.DataObject):
    info = np.iinfo(TYPES[element])
    low, high = int(info.min), int(info.max)
    edge = st.sampled_from([low, low + 1, -1, 0, 1, high - 1, high]) | st.integers(low, high)
    rows = [data.draw(st.lists(edge, min_size=N, max_size=N)) for _ in range(2)]
    partial = [sum(row[: k + 1]) for row in rows for k in range(N)]
    module = parse_file_text(_reduce_sum(element), "t.mlir")
    args = [np.array(rows, dtype=TYPES[element])]
    if all(low <= p <= high for p in partial):
        got = Interpreter(module, "t.mlir", {}).run("main", args)[0]
        assert got.reshape(-1).tolist() == [sum(row) for row in rows]
    else:
        with pytest.raises(ConvcanonError, match="unpredictable in TOSA"):
            Interpreter(module, "t.mlir", {}).run("main", args)


def test_a_sum_that_returns_into_range_is_still_refused():
    """2^31 - 1, then + 1 (outside), then - 1: the total fits, a partial sum does not."""
    module = parse_file_text(_reduce_sum("i32"), "t.mlir")
    row = [(1 << 31) - 1, 1, -1, 0, 0]
    with pytest.raises(ConvcanonError, match="unpredictable in TOSA"):
        Interpreter(module, "t.mlir", {}).run("main", [np.array([row, row], dtype=np.int32)])
