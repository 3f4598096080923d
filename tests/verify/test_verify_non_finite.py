"""`verify` never says `ok` when nothing was compared: a BatchNorm-like `rsqrt(variance)` is NaN
for about half of N(0,1) variances, so verify draws network-like inputs (vectors such as
variances positive, weights scaled by 1/sqrt(fan-in)) and says so; a module whose
output is never finite is a failure, not a pass; a wrong AFTER on such inputs still fails."""

from __future__ import annotations

from pathlib import Path

from .test_verify_every_type import verify

BATCHNORM = """func.func @main(%x: tensor<2x8xf32>, %var: tensor<8xf32>) -> tensor<2x8xf32> {
  %r = stablehlo.rsqrt %var : tensor<8xf32>
  %b = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<8xf32>) -> tensor<2x8xf32>
  %y = stablehlo.multiply %x, %b : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
"""
BATCHNORM_NEGATED = BATCHNORM.replace(
    "  return %y : tensor<2x8xf32>",
    "  %n = stablehlo.negate %y : tensor<2x8xf32>\n  return %n : tensor<2x8xf32>",
)
ALWAYS_INF = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %l = stablehlo.log %z : tensor<4xf32>
  %y = stablehlo.add %x, %l : tensor<4xf32>
  return %y : tensor<4xf32>
}
"""


def test_nan_from_normal_inputs_draws_positive_inputs_and_says_so(tmp_path: Path) -> None:
    code, out = verify(tmp_path, BATCHNORM, BATCHNORM)
    assert code == 0, out
    assert "N(0,1) inputs make BEFORE in f64 non-finite" in out
    assert "drew network-like (weights N(0,1)/sqrt(fan-in), other tensors N(0,1), vectors" in out
    assert out.rstrip().splitlines()[-1].endswith("vectors uniform[0.5,2))"), out


def test_wrong_after_on_redrawn_inputs_fails(tmp_path: Path) -> None:
    code, out = verify(tmp_path, BATCHNORM, BATCHNORM_NEGATED)
    assert code == 1
    assert "vectors uniform[0.5,2)) inputs): output 0 differs at index [0, 0]" in out, out


def test_output_never_finite_is_a_failure(tmp_path: Path) -> None:
    code, out = verify(tmp_path, ALWAYS_INF, ALWAYS_INF)
    assert code == 1
    assert "error: nothing to compare in trial 0" in out and "ok" not in out.split(), out


def test_resnet50_canonicalized_verifies_on_network_like_inputs(tmp_path: Path) -> None:
    """ResNet-50 (BatchNorm folded in as rsqrt of variance arguments): N(0,1) inputs make every
    logit NaN, uniform ones overflow f32 after 50 layers; network-like inputs compare all 1000."""
    from convcanon.driver import transform_text

    model = Path(__file__).parents[2] / "bench" / "models" / "resnet50.stablehlo.mlir"
    before = model.read_text()
    after = transform_text(before, str(model), "stablehlo-canonicalize-conv{gate=general}")
    code, out = verify(tmp_path, before, after, "--trials", "1")
    assert code == 0, out
    assert "ok: 1 trial(s) on engine reference; 1000 float element(s) judged" in out, out
    assert "drew network-like" in out, out
