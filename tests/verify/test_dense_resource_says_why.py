"""torch-mlir's exports hold their weights as `dense_resource` blobs. The engines that cannot read
them say so: the reference interpreter names the constant kind, and `verify`'s f64 copy (which
cannot widen a blob) gives the verifier's own message, not a bare "Verification failed:"."""

from __future__ import annotations

from pathlib import Path

from convcanon.cli import main
from convcanon.verify.widen import widen_text

RESOURCE = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = stablehlo.constant dense_resource<weights> : tensor<2xf32>
  %y = stablehlo.add %x, %w : tensor<2xf32>
  return %y : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      weights: "0x040000000000803F00000040"
    }
  }
#-}
"""


def test_the_reference_names_a_dense_resource_constant(tmp_path: Path, capsys) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(RESOURCE)
    inputs = tmp_path / "in.npz"
    import numpy as np

    np.savez(inputs, arg0=np.ones(2, np.float32))
    assert main(["run", str(module), "--inputs", str(inputs)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"{module}:2:8: error: cannot interpret 'stablehlo.constant': dense_resource constants"
        " are not supported by the reference interpreter"
    ), err


def test_an_f64_copy_that_does_not_verify_says_why() -> None:
    widened = widen_text(RESOURCE, "m.mlir")
    assert widened.text is None
    assert widened.reason.startswith("the f64 copy does not verify: 'stablehlo.constant' op")
    assert "tensor<2xf64>" in widened.reason, widened.reason
