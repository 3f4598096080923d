"""`tosa.cast` from float to integer rounds half to even and saturates at the integer's bounds,
as IREE computes it (an f32 bound of int32 is 2^31, outside the type: the clamp runs in f64)."""

from __future__ import annotations

import numpy as np
import pytest

from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text

VALUES = [3e9, -3e9, 2147483520.0, -2147483648.0, 2.5, 3.5, -2.5, 200.0, -200.0, 1e30]


def _cast_module(element: str) -> str:
    n = len(VALUES)
    return (
        f"func.func @main(%arg0: tensor<{n}xf32>) -> tensor<{n}x{element}> {{\n"
        f'  %0 = "tosa.cast"(%arg0) : (tensor<{n}xf32>) -> tensor<{n}x{element}>\n'
        f"  func.return %0 : tensor<{n}x{element}>\n}}\n"
    )


@pytest.mark.parametrize("element, dtype", [("i32", np.int32), ("i8", np.int8), ("i16", np.int16)])
def test_float_to_int_cast_saturates_like_iree(element: str, dtype: type) -> None:
    from convcanon.verify.iree_tosa import run_tosa_text

    text = _cast_module(element)
    x = np.array(VALUES, np.float32)
    (ours,) = Interpreter(parse_file_text(text, "cast.mlir"), "cast.mlir", {}).run("main", [x])
    info = np.iinfo(dtype)
    expected = np.clip(np.rint(x.astype(np.float64)), info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(ours, expected)
    (iree,) = run_tosa_text(text, [x])
    np.testing.assert_array_equal(np.asarray(iree), expected)
