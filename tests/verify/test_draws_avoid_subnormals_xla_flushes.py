"""XLA's CPU backend flushes subnormal f32, f64 and bf16 values to zero (inputs and results),
the interpreter does not. verify's typed comparisons run BEFORE and AFTER on one engine, so a
flush could only fool them through the inputs: a drawn subnormal that one engine reads as 0.
No family draws (or perturbs) one in a type XLA flushes, whatever the shape or fan-in; the
types whose draws can hold subnormals (N(0,1) puts 1% of f8E4M3FN values under its smallest
normal, f16's and f8E5M2's are 6e-5) XLA computes in f32, where they are normal, and keeps, as
the interpreter does: on drawn inputs and on the smallest subnormal the two agree."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.reference.hlo.values import TensorType
from convcanon.verify.engines import ENGINES
from convcanon.verify.inputs import DISTRIBUTIONS, perturbed, random_inputs

FLUSHED = ["f32", "f64", "bf16", "complex<f32>", "complex<f64>"]
KEPT = ["f16", "f8E4M3FN", "f8E5M2"]


def _subnormal(values: np.ndarray, element: str) -> np.ndarray:
    real = np.abs(values.astype(np.complex128)).ravel() if "complex" in element else None
    wide = real if real is not None else np.abs(values.astype(np.float64)).ravel()
    part = element.removeprefix("complex<").removesuffix(">")
    tiny = float(ml_dtypes.finfo(TensorType((), part).dtype).smallest_normal)
    return (wide > 0) & (wide < tiny)


@settings(max_examples=60, deadline=None)
@given(
    element=st.sampled_from(FLUSHED),
    dist=st.sampled_from(DISTRIBUTIONS),
    shape=st.lists(st.integers(1, 64), min_size=1, max_size=4),
    fan_in=st.sampled_from([None, 1, 9, 4608, 10**7]),
    seed=st.integers(0, 2**32 - 1),
)
def test_no_family_draws_a_subnormal_xla_flushes(element, dist, shape, fan_in, seed):
    rng = np.random.default_rng(seed)
    args = [TensorType(tuple(shape), element)]
    weights = None if fan_in is None else {0: fan_in}
    (drawn,) = random_inputs(args, rng, dist, weights)
    (moved,) = perturbed([drawn], rng)
    assert not _subnormal(drawn, element).any() and not _subnormal(moved, element).any()


@pytest.mark.parametrize("element", KEPT)
def test_drawn_subnormals_in_narrow_floats_are_kept_by_xla_as_by_the_interpreter(element):
    pytest.importorskip("jax")
    t = f"tensor<64x64x{element}>"
    text = (
        f"func.func @main(%a: {t}, %b: {t}) -> ({t}, {t}) {{\n"
        f"  %0 = stablehlo.multiply %a, %b : {t}\n"
        f"  %1 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}\n"
        f"  return %0, %1 : {t}, {t}\n}}\n"
    )
    rng = np.random.default_rng(0)
    args = [TensorType((64, 64), element)] * 2
    inputs = random_inputs(args, rng, DISTRIBUTIONS[0])
    if element == "f8E4M3FN":  # f16's and f8E5M2's smallest normal is 6e-5: rarely drawn
        assert _subnormal(inputs[0], element).sum() > 10
    subnormal = inputs[0].copy()
    subnormal[0] = np.array(ml_dtypes.finfo(inputs[0].dtype).smallest_subnormal, inputs[0].dtype)
    for feed in (inputs, [subnormal, inputs[1]]):
        ours = ENGINES["reference"](text, "m.mlir", "main", feed)
        xla = ENGINES["xla"](text, "m.mlir", "main", feed)
        assert np.array_equal(ours[0].view(np.uint8), xla[0].view(np.uint8))
        close = np.abs(ours[1].astype(np.float64) - xla[1].astype(np.float64))
        assert (
            close.max()
            <= 2
            * float(ml_dtypes.finfo(inputs[0].dtype).eps)
            * np.abs(xla[1].astype(np.float64)).max()
        )
