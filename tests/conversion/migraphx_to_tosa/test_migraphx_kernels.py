"""Kernels shaped like what MIGraphX hands to MLIR (bench/migraphx/, written by hand): each one
lowers, verifies in iree-opt and equals the migraphx reference over flat strided buffers on IREE,
or, where IREE's CPU backend cannot build it, on our TOSA interpreter (and says why)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from convcanon.xdsl_io import parse_file_text

from .harness import (
    check_with_interpreter,
    check_with_iree,
    iree_opt_verify,
    random_inputs,
    reference,
)

KERNELS = Path(__file__).resolve().parents[3] / "bench" / "migraphx"


def _kernel(name: str) -> str:
    return (KERNELS / f"{name}.mlir").read_text()


def test_leaky_relu_fused_nhwc_conv_matches_iree_without_a_transpose() -> None:
    tosa = check_with_iree(_kernel("leaky_relu_nhwc_conv"), rtol=1e-4)
    assert "tosa.transpose" not in tosa
    assert "tosa.greater" in tosa and "tosa.select" in tosa


def test_gather_embedding_with_negative_token_ids_matches_iree() -> None:
    text = _kernel("gather_embedding")
    inputs = random_inputs(parse_file_text(text, "<k>"))
    inputs[1] = np.array([0, 15, -1, -16, 7, 3, 2, -5, 9, 1], dtype=np.int64)
    tosa = check_with_iree(text, inputs=inputs)
    assert "tosa.gather" in tosa and "tosa.transpose" not in tosa


def test_f16_attention_with_inf_mask_matches_iree() -> None:
    # the softmax computes in f32 and rounds once; in f16 its tosa.reduce_max would not build on
    # IREE 3.13's llvm-cpu (`fmaxf` fails to link)
    text = _kernel("f16_attention_mask")
    tosa = check_with_iree(text, rtol=2e-2)
    assert tosa.count("tosa.transpose") == 1
    # the -inf mask is read as -inf: query 0 sees only key 0, so its output is v's row 0
    inputs = random_inputs(parse_file_text(text, "<k>"))
    (out,) = reference(text, inputs)
    v = inputs[2].astype(np.float32).reshape(1, 2, 4, 8)
    np.testing.assert_allclose(out.reshape(1, 2, 4, 8)[0, :, 0, :], v[0, :, 0, :], rtol=1e-3)


NARROWING_I64 = """\
func.func @main(%a: !migraphx.shaped<2x3xsi64, 3x1>) -> !migraphx.shaped<2x3xsi8, 1x2> {
  %0 = migraphx.convert %a : <2x3xsi64, 3x1> to <2x3xsi8, 1x2>
  return %0 : !migraphx.shaped<2x3xsi8, 1x2>
}
"""


def test_si64_narrowing_verifies_and_matches_on_the_interpreter() -> None:
    # IREE's TOSA validation has no profile for a cast from i64 to a narrower integer, so IREE
    # cannot build this; iree-opt verifies it and our TOSA interpreter is the judge
    iree_opt_verify(check_with_interpreter(NARROWING_I64))


CALL = """\
func.func private @scale(%a: !migraphx.shaped<2x3xf32, 1x2>) -> !migraphx.shaped<2x3xf32, 1x2> {
  %0 = migraphx.mul %a, %a : <2x3xf32, 1x2>, <2x3xf32, 1x2> -> <2x3xf32, 1x2>
  return %0 : !migraphx.shaped<2x3xf32, 1x2>
}
func.func @main(%x: !migraphx.shaped<2x3xf32, 1x2>) -> !migraphx.shaped<2x3xf32, 1x2> {
  %0 = func.call @scale(%x) : (!migraphx.shaped<2x3xf32, 1x2>) -> !migraphx.shaped<2x3xf32, 1x2>
  %1 = func.call @scale(%0) : (!migraphx.shaped<2x3xf32, 1x2>) -> !migraphx.shaped<2x3xf32, 1x2>
  return %1 : !migraphx.shaped<2x3xf32, 1x2>
}
"""


def test_call_of_a_module_function_is_inlined_and_both_functions_are_flat() -> None:
    tosa = check_with_iree(CALL)
    assert "func.call" not in tosa and "tosa.transpose" not in tosa
    assert "func.func private @scale(%0: tensor<6xf32>) -> tensor<6xf32>" in tosa
