"""Dense literals in migraphx/TOSA files are read as MLIR reads them, or refused."""

from __future__ import annotations

import numpy as np
import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_interp import run_module_text

MODULE = """func.func @main() -> tensor<2x{t}> {{
  %0 = "tosa.const"() <{{values = {value} : tensor<2x{t}>}}> : () -> tensor<2x{t}>
  func.return %0 : tensor<2x{t}>
}}
"""


def _run(value: str, element: str) -> np.ndarray:
    (result,) = run_module_text(MODULE.format(value=value, t=element), "c.mlir", None, {})
    return result


def test_per_element_hex_floats_are_refused_not_misread():
    # MLIR reads 0xFC00 as the f16 bit pattern (-inf); xDSL 0.75 would give 64500.0.
    with pytest.raises(ConvcanonError, match="hexadecimal float elements") as info:
        _run("dense<[0xFC00, 1.0]>", "f16")
    assert info.value.loc is not None and (info.value.loc.line, info.value.loc.col) == (2, 34)


def test_hex_string_form_is_read_as_little_endian_bits():
    assert _run('dense<"0x0000803F00000040">', "f32").tolist() == [1.0, 2.0]


def test_hex_integers_are_integers():
    assert _run("dense<[0x10, 7]>", "i32").tolist() == [16, 7]
