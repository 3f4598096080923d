"""A migraphx.convert between element types that TOSA casts only through f32 or i32 lowers to
casts IREE compiles, and computes what the reference does.

TOSA casts only some pairs directly: the lowering emitted tosa.cast for f16 <-> bf16, i1 <->
f16/bf16, f16/bf16/fp8 -> i1, an integer -> OCP fp8, fp8 <-> fp8 and i64 -> i8/i16, which IREE
refused to compile ("did not align with any profile"). MIGraphX programs convert between all of
these (bool masks to half, int64 shape values). Found by lowering a convert for every pair of
element types and compiling with IREE (f16 <-> OCP fp8 is valid TOSA as two casts, which IREE
folds into one its CPU backend cannot lower: left to IREE).
"""

from __future__ import annotations

import numpy as np
import pytest

from .harness import check_with_iree

CONVERT = """\
func.func @main(%a: !migraphx.shaped<2x3x{src}, 1x2>) -> !migraphx.shaped<2x3x{dst}, 1x2> {{
  %r = migraphx.convert %a : <2x3x{src}, 1x2> to <2x3x{dst}, 1x2>
  return %r : !migraphx.shaped<2x3x{dst}, 1x2>
}}
"""


def _program(src: str, dst: str) -> str:
    return CONVERT.format(src=src, dst=dst)


PAIRS = [
    ("f16", "bf16"),
    ("bf16", "f16"),
    ("i1", "f16"),
    ("i1", "bf16"),
    ("i1", "f8E4M3FN"),
    ("f16", "i1"),
    ("bf16", "i1"),
    ("f8E5M2", "i1"),
    ("si8", "f8E4M3FN"),
    ("si32", "f8E5M2"),
    ("ui8", "f8E4M3FN"),
    ("f8E4M3FN", "f8E5M2"),
    ("f8E5M2", "f8E4M3FN"),
    ("si64", "si8"),
    ("si64", "ui16"),
]


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_convert_runs_on_iree_as_the_reference_computes(src: str, dst: str) -> None:
    check_with_iree(_program(src, dst))


def test_int64_narrowing_keeps_the_low_bits_on_iree() -> None:
    values = np.array([300, -129, 2**40 + 5, -1, 127, 2**33 - 128], dtype=np.int64)
    check_with_iree(_program("si64", "si8"), inputs=[values])
