"""Non-conv ops agree with XLA: integer division/remainder/shifts, compare/select/convert, reduce,
reduce_window, dot_general, layout ops, float transcendental ops, bf16, and MHLO spellings."""

from __future__ import annotations

import numpy as np
import pytest
from hlo.cases import parse

from convcanon.hlo.dialects import MHLO
from convcanon.reference.hlo_interp import TensorType, normalize

from .xla_compare import assert_matches_xla

F = "tensor<4x6xf32>"
N = "tensor<4x6xi32>"
F10 = ", ".join([F] * 10)

CASES: dict[str, tuple[list[TensorType], str, str]] = {
    "int-div-rem": (
        [TensorType((4, 6), "i32")] * 2,
        "tensor<4x6xi32>, tensor<4x6xi32>",
        f"""%0 = stablehlo.divide %arg0, %arg1 : {N}
  %1 = stablehlo.remainder %arg0, %arg1 : {N}
  return %0, %1 : {N}, {N}""",
    ),
    "shifts": (
        [TensorType((4, 6), "i32")] * 2,
        "tensor<4x6xi32>, tensor<4x6xi32>",
        f"""%c = stablehlo.constant dense<9> : {N}
  %s = stablehlo.multiply %arg1, %c : {N}
  %0 = stablehlo.shift_left %arg0, %s : {N}
  %1 = stablehlo.shift_right_logical %arg0, %s : {N}
  %2 = stablehlo.shift_right_arithmetic %arg0, %s : {N}
  return %0, %1, %2 : {N}, {N}, {N}""",
    ),
    "compare-select-convert": (
        [TensorType((4, 6), "f32")] * 2,
        "tensor<4x6xf32>, tensor<4x6xf32>",
        f"""%p = stablehlo.compare GT, %arg0, %arg1 : ({F}, {F}) -> tensor<4x6xi1>
  %0 = stablehlo.select %p, %arg0, %arg1 : tensor<4x6xi1>, {F}
  %c = stablehlo.constant dense<3.0> : {F}
  %m = stablehlo.multiply %arg0, %c : {F}
  %1 = stablehlo.convert %m : ({F}) -> {N}
  %2 = stablehlo.convert %p : (tensor<4x6xi1>) -> {F}
  return %0, %1, %2 : {F}, {N}, {F}""",
    ),
    "reduce": (
        [TensorType((4, 6), "f32")],
        "tensor<4x6xf32>",
        f"""%z = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %z) applies stablehlo.add across dimensions = [1]
    : ({F}, tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.reduce(%arg0 init: %n) applies stablehlo.maximum across dimensions = [0, 1]
    : ({F}, tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<4xf32>, tensor<f32>""",
    ),
    "reduce-region-bodies": (
        [TensorType((4, 6), "f32")],
        "tensor<4x6xf32>",
        f"""%n = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %n) across dimensions = [1]
    : ({F}, tensor<f32>) -> tensor<4xf32>
    reducer(%a: tensor<f32>, %b: tensor<f32>) {{
      %p = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %m = stablehlo.select %p, %a, %b : tensor<i1>, tensor<f32>
      stablehlo.return %m : tensor<f32>
    }}
  %i = stablehlo.iota dim = 0 : tensor<6xi32>
  %ii = stablehlo.broadcast_in_dim %i, dims = [1] : (tensor<6xi32>) -> {N}
  %z = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.reduce(%arg0 init: %n), (%ii init: %z) across dimensions = [1]
    : ({F}, {N}, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {{
      %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take = stablehlo.or %gt, %tie : tensor<i1>
      %v = stablehlo.select %take, %a, %c : tensor<i1>, tensor<f32>
      %k = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v, %k : tensor<f32>, tensor<i32>
    }}
  return %0, %1#0, %1#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>""",
    ),
    "reduce-window": (
        [TensorType((1, 7, 6, 2), "f32")],
        "tensor<1x7x6x2xf32>",
        """%n = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%arg0, %n) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>,
      padding = dense<[[0, 0], [1, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>}
    : (tensor<1x7x6x2xf32>, tensor<f32>) -> tensor<1x4x3x2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = "stablehlo.reduce_window"(%arg0, %z) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 2, 2, 1>, window_dilations = array<i64: 1, 2, 1, 1>,
      base_dilations = array<i64: 1, 1, 2, 1>}
    : (tensor<1x7x6x2xf32>, tensor<f32>) -> tensor<1x5x10x2xf32>
  return %0, %1 : tensor<1x4x3x2xf32>, tensor<1x5x10x2xf32>""",
    ),
    "dot-general": (
        [TensorType((2, 3, 4), "f32"), TensorType((2, 5, 4), "f32")],
        "tensor<2x3x4xf32>, tensor<2x5x4xf32>",
        """%0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0],
    contracting_dims = [2] x [2] : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>""",
    ),
    "layout-ops": (
        [TensorType((2, 3, 4), "i32")],
        "tensor<2x3x4xi32>",
        """%0 = stablehlo.transpose %arg0, dims = [2, 0, 1]
    : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
  %1 = stablehlo.reshape %0 : (tensor<4x2x3xi32>) -> tensor<8x3xi32>
  %2 = stablehlo.slice %1 [1:8:3, 0:3:2] : (tensor<8x3xi32>) -> tensor<3x2xi32>
  %3 = stablehlo.broadcast_in_dim %2, dims = [2, 0] : (tensor<3x2xi32>) -> tensor<2x5x3xi32>
  %c = stablehlo.constant dense<-7> : tensor<i32>
  %4 = stablehlo.pad %arg0, %c, low = [1, -1, 0], high = [0, 2, -1], interior = [1, 0, 2]
    : (tensor<2x3x4xi32>, tensor<i32>) -> tensor<4x4x9xi32>
  %5 = stablehlo.concatenate %arg0, %arg0, dim = 1 : (tensor<2x3x4xi32>, tensor<2x3x4xi32>)
    -> tensor<2x6x4xi32>
  %6 = stablehlo.reverse %5, dims = [1, 2] : tensor<2x6x4xi32>
  %7 = stablehlo.iota dim = 1 : tensor<2x6x4xi32>
  %8 = stablehlo.add %6, %7 : tensor<2x6x4xi32>
  return %3, %4, %8 : tensor<2x5x3xi32>, tensor<4x4x9xi32>, tensor<2x6x4xi32>""",
    ),
    "float-math": (
        [TensorType((4, 6), "f32")],
        "tensor<4x6xf32>",
        f"""%a = stablehlo.abs %arg0 : {F}
  %0 = stablehlo.rsqrt %a : {F}
  %1 = stablehlo.exponential %arg0 : {F}
  %2 = stablehlo.log %a : {F}
  %3 = stablehlo.tanh %arg0 : {F}
  %4 = stablehlo.logistic %arg0 : {F}
  %c = stablehlo.constant dense<2.5> : {F}
  %s = stablehlo.multiply %arg0, %c : {F}
  %5 = stablehlo.round_nearest_even %s : {F}
  %6 = stablehlo.round_nearest_afz %s : {F}
  %7 = stablehlo.floor %s : {F}
  %8 = stablehlo.negate %s : {F}
  %9 = stablehlo.sign %arg0 : {F}
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : {F10}""",
    ),
    "bf16": (
        [TensorType((4, 6), "bf16")] * 2,
        "tensor<4x6xbf16>, tensor<4x6xbf16>",
        """%0 = stablehlo.multiply %arg0, %arg1 : tensor<4x6xbf16>
  %1 = stablehlo.add %0, %arg1 : tensor<4x6xbf16>
  %2 = stablehlo.divide %1, %arg0 : tensor<4x6xbf16>
  return %1, %2 : tensor<4x6xbf16>, tensor<4x6xbf16>""",
    ),
}


def _module(args: str, body: str) -> str:
    params = ", ".join(f"%arg{i}: {t.strip()}" for i, t in enumerate(_split_types(args)))
    results = body.rsplit(" : ", 1)[1]
    return f"func.func public @main({params}) -> ({results}) {{\n  {body}\n}}\n"


def _split_types(types: str) -> list[str]:
    return [t + (">" if not t.endswith(">") else "") for t in types.split(">, ")]


def _inputs(types: list[TensorType], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for tt in types:
        if tt.element == "i32":
            value = rng.integers(-9, 10, tt.shape)  # zeros included: division by zero is defined
        else:
            value = rng.standard_normal(tt.shape) * 3
        out.append(normalize(value, tt))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_xla(name: str) -> None:
    types, args, body = CASES[name]
    assert_matches_xla(_module(args, body), _inputs(types, seed=len(name)))


@pytest.mark.parametrize("name", ["int-div-rem", "reduce", "layout-ops"])
def test_mhlo_spelling_matches_xla(name: str) -> None:
    """The same modules legalized to MHLO (generic attribute forms) give XLA's results."""
    types, args, body = CASES[name]
    text = _module(args, body)
    mhlo_text = str(parse(text, MHLO).module)
    assert "mhlo." in mhlo_text and "stablehlo." not in mhlo_text
    from convcanon.reference.run import run_hlo_text
    from convcanon.verify.xla_engine import run_stablehlo_text

    inputs = _inputs(types, seed=1)
    (report,) = run_hlo_text(
        mhlo_text, "m.mlir", inputs={f"arg{i}": x for i, x in enumerate(inputs)}
    )
    for ours, theirs in zip(report.results, run_stablehlo_text(text, inputs), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
