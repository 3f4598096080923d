"""Elementwise arithmetic on OCP fp8 (f8E4M3FN, f8E5M2) runs on f32 and rounds once.

TOSA 1.0's fp8 extensions give these types casts, contractions and data movement only: the
lowering emitted tosa.add, tosa.maximum, tosa.clamp, tosa.exp... on them, which IREE refused to
compile ("did not align with any profile"; relu on f8E4M3FN was even an invalid clamp). MIGraphX
counts both among its float types for rocMLIR's pointwise fusions (AMDMIGraphX
src/targets/gpu/fuse_mlir.cpp). Found by lowering each elementwise op at each element type and
compiling the result with IREE.
"""

from __future__ import annotations

import pytest

from .harness import check_with_iree

FP8 = ["f8E4M3FN", "f8E5M2"]
UNARY = "relu abs neg exp log tanh sigmoid floor ceil sqrt rsqrt recip erf".split()
BINARY = "add sub mul div max min pow".split()
COMPARE = "greater greater_or_equal less less_or_equal equal".split()


def _program(line: str, element: str, args: int = 1) -> str:
    t = f"<2x3x{element}, 1x2>"  # column-major, as the other layout tests
    params = ", ".join(f"%a{i}: !migraphx.shaped{t}" for i in range(args))
    return (
        f"func.func @main({params}) -> !migraphx.shaped{t} {{\n"
        f"  {line.format(t=t)}\n"
        f"  return %r : !migraphx.shaped{t}\n"
        "}\n"
    )


@pytest.mark.parametrize("element", FP8)
@pytest.mark.parametrize("name", UNARY)
def test_unary_op_on_fp8_matches_the_reference_on_iree(name: str, element: str) -> None:
    check_with_iree(_program(f"%r = migraphx.{name} %a0 : {{t}} -> {{t}}", element))


@pytest.mark.parametrize("element", FP8)
@pytest.mark.parametrize("name", BINARY + COMPARE)
def test_binary_op_on_fp8_matches_the_reference_on_iree(name: str, element: str) -> None:
    line = f"%r = migraphx.{name} %a0, %a1 : {{t}}, {{t}} -> {{t}}"
    check_with_iree(_program(line, element, 2), seed=3)


@pytest.mark.parametrize("element", FP8)
def test_clip_and_softmax_on_fp8_match_the_reference_on_iree(element: str) -> None:
    clip = "%r = migraphx.clip %a0, %a1, %a2 : {t}, {t}, {t} -> {t}"
    check_with_iree(_program(clip, element, 3))
    softmax = "%r = migraphx.softmax %a0 {{axis = 1 : i64}} : {t} -> {t}"
    check_with_iree(_program(softmax, element))
