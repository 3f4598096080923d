"""`run` on a shape-polymorphic module (`jax.export` with a symbolic batch): the batch comes from
`--inputs`, whose shapes the module is refined to; the results are what JAX computes."""
# ruff: noqa: E501  (the MLIR fixture is one op per line)

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_support import Runner  # pyright: ignore[reportMissingImports]

from convcanon.driver import transform_text

pytest.importorskip("jax")

from _polymorphic import PROGRAMS, assert_close, export_program, inputs_at  # noqa: E402  # pyright: ignore[reportMissingImports]

CANON = "stablehlo-canonicalize-conv{gate=general}"


@pytest.fixture(scope="module")
def exported() -> dict[str, Any]:
    return {name: export_program(name) for name in PROGRAMS}


def _write(tmp_path: Path, text: str, args: list[np.ndarray]) -> tuple[Path, Path]:
    module, inputs = tmp_path / "m.mlir", tmp_path / "in.npz"
    module.write_text(text)
    np.savez(inputs, **{f"arg{i}": a for i, a in enumerate(args)})  # pyright: ignore[reportArgumentType]
    return module, inputs


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("canonical", [False, True], ids=["exported", "canonicalized"])
def test_run_takes_the_batch_from_its_inputs(
    exported: dict[str, Any], name: str, batch: int, canonical: bool, cc: Runner, tmp_path: Path
):
    text = exported[name].mlir_module()
    if canonical:
        text = transform_text(text, f"{name}.mlir", CANON)
    args = inputs_at(name, batch, seed=batch)
    module, inputs = _write(tmp_path, text, args)
    out = tmp_path / "out.npz"

    result = cc("run", module, "--inputs", inputs, "--output", out)

    assert result.code == 0, result.err
    with np.load(out) as got:
        want = np.asarray(exported[name].call(*args))
        assert got["result0"].shape == want.shape and want.shape[0] == batch
        assert_close(got["result0"], want)


def test_a_dynamic_module_without_inputs_says_it_needs_them(
    exported: dict[str, Any], cc: Runner, tmp_path: Path
):
    module = tmp_path / "m.mlir"
    module.write_text(exported["transposed"].mlir_module())
    result = cc("run", module)
    assert result.code == 1
    assert result.err.strip() == (
        f"{module}: error: @main takes (tensor<?x5x5x4xf32>, tensor<4x4x4x3xf32>), dynamic "
        "shapes: give --inputs, whose shapes the module is refined to"
    ), result.err


def test_inputs_that_do_not_fit_the_static_dims_are_refused(
    exported: dict[str, Any], cc: Runner, tmp_path: Path
):
    args = inputs_at("transposed", 2)
    args[0] = args[0][:, :, :4]  # 5x5 -> 5x4 spatially: no batch makes that fit
    module, inputs = _write(tmp_path, exported["transposed"].mlir_module(), args)
    result = cc("run", module, "--inputs", inputs)
    assert result.code == 1
    assert "refined to the shapes of --inputs (arg0 [2, 5, 4, 4], arg1 [4, 4, 4, 3])" in result.err
    assert "argument 0 is tensor<?x5x5x4xf32>: shape [2, 5, 4, 4] does not fit it" in result.err


def test_a_batch_of_zero_fails_jax_exports_own_shape_assertion(
    exported: dict[str, Any], cc: Runner, tmp_path: Path
):
    args = inputs_at("strided", 0)
    module, inputs = _write(tmp_path, exported["strided"].mlir_module(), args)
    result = cc("run", module, "--inputs", inputs)
    assert result.code == 1
    assert "Expected value >= 1 for dimension variable 'b'" in result.err, result.err


def test_missing_inputs_are_named_before_refining(
    exported: dict[str, Any], cc: Runner, tmp_path: Path
):
    args = inputs_at("sliced", 2)[:1]
    module, inputs = _write(tmp_path, exported["sliced"].mlir_module(), args)
    result = cc("run", module, "--inputs", inputs)
    assert result.code == 1
    assert "missing input(s) arg1" in result.err, result.err


# A plain polymorphic module, as torch-mlir writes one (no jax.export wrapper, no shape
# assertions): a strided slice over the dynamic batch from get_dimension_size, and a bias
# broadcast to the dynamic shape.
PLAIN_DYNAMIC = """\
func.func @main(%x: tensor<?x4xf32>, %bias: tensor<2xf32>) -> tensor<?x2xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %c0 = stablehlo.constant dense<0> : tensor<1xi32>
  %c1 = stablehlo.constant dense<1> : tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %c4 = stablehlo.constant dense<4> : tensor<1xi32>
  %start = stablehlo.concatenate %c0, %c1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %limit = stablehlo.concatenate %n1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %step = stablehlo.concatenate %c1, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %odd = stablehlo.real_dynamic_slice %x, %start, %limit, %step : (tensor<?x4xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x2xf32>
  %shape = stablehlo.concatenate %n1, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %b = stablehlo.dynamic_broadcast_in_dim %bias, %shape, dims = [1] : (tensor<2xf32>, tensor<2xi32>) -> tensor<?x2xf32>
  %sum = stablehlo.add %odd, %b : tensor<?x2xf32>
  return %sum : tensor<?x2xf32>
}
"""


@pytest.mark.parametrize("batch", [1, 3])
def test_a_plain_dynamic_module_folds_and_runs(batch: int, cc: Runner, tmp_path: Path):
    from convcanon.refine import refine_at_batch

    refined = refine_at_batch(PLAIN_DYNAMIC, "plain.mlir", batch)
    for op in ("get_dimension_size", "real_dynamic_slice", "dynamic_broadcast_in_dim", "?x"):
        assert op not in refined, refined
    assert f"stablehlo.slice %arg0 [0:{batch}, 1:4:2]" in refined, refined

    x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
    bias = np.array([10.0, 20.0], np.float32)
    module, inputs = _write(tmp_path, PLAIN_DYNAMIC, [x, bias])
    out = tmp_path / "out.npz"
    result = cc("run", module, "--inputs", inputs, "--output", out)
    assert result.code == 0, result.err
    with np.load(out) as got:
        np.testing.assert_array_equal(got["result0"], x[:, 1::2] + bias)
