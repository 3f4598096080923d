"""verify's f64 truth runs on the reference interpreter and falls back to XLA from the first op
the interpreter lacks: said once, and the summary then names XLA, not the reference."""

from __future__ import annotations

import numpy as np

from convcanon.verify.engines import ENGINES
from convcanon.verify.judge import Tally
from convcanon.verify.plan import ReferenceElseXla, Truth
from convcanon.verify.summary import summary

CHOLESKY = """func.func @main(%x: tensor<3x3xf64>) -> tensor<3x3xf64> {
  %a = stablehlo.dot_general %x, %x, contracting_dims = [1] x [1] : (tensor<3x3xf64>, tensor<3x3xf64>) -> tensor<3x3xf64>
  %y = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  return %y : tensor<3x3xf64>
}
"""  # noqa: E501


def test_the_fallback_to_xla_is_said_once_and_remembered(capsys) -> None:
    x = np.arange(9, dtype=np.float64).reshape(3, 3) + 3 * np.eye(3)
    truth = ReferenceElseXla()
    first = truth(CHOLESKY, "m.mlir", "main", [x])
    second = truth(CHOLESKY, "m.mlir", "main", [x])
    assert truth.fallback is not None and "stablehlo.cholesky" in truth.fallback
    out = capsys.readouterr().out
    assert out.count("XLA evaluates the f64 copy instead") == 1, out
    expected = np.linalg.cholesky(x @ x.T)
    for got in (first, second):
        np.testing.assert_allclose(np.tril(got[0]), expected, rtol=1e-12)
    assert np.allclose(ENGINES["xla"](CHOLESKY, "m.mlir", "main", [x])[0], first[0])


def test_the_summary_names_the_engine_the_truth_ran_on() -> None:
    x = np.arange(9, dtype=np.float64).reshape(3, 3) + 3 * np.eye(3)
    truth = ReferenceElseXla()
    plan = Truth("before", "after", truth, "reference")
    tally = Tally(float_elements=9)
    assert "BEFORE evaluated in f64 (reference)" in summary(
        "ok", "", 1, "iree", plan, tally, ["normal"]
    )
    truth(CHOLESKY, "m.mlir", "main", [x])
    assert "BEFORE evaluated in f64 (xla)" in summary("ok", "", 1, "iree", plan, tally, ["normal"])
