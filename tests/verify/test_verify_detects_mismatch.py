"""`convcanon verify`: equivalent modules pass, a deliberately wrong AFTER fails with the output and
element index, on every engine (reference, XLA, IREE)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convcanon.cli import main
from convcanon.driver import transform_text

CONV = """func.func @main(%x: tensor<1x9x9x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<1x5x5x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}
    {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
    : (tensor<1x9x9x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}
"""

# the padding moved by one row: same shapes, wrong values from output row 0 on
WRONG_PAD = """func.func @main(%x: tensor<1x9x9x3xf32>, %w: tensor<3x3x3x4xf32>)
    -> tensor<1x5x5x4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [0, 2, 1, 0], high = [0, 0, 1, 0], interior = [0, 0, 0, 0]
    : (tensor<1x9x9x3xf32>, tensor<f32>) -> tensor<1x11x11x3xf32>
  %0 = stablehlo.convolution(%p, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
    : (tensor<1x11x11x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}
"""

# only the last output element is wrong: the index must be reported exactly
WRONG_CORNER = CONV.replace(
    "  return %0 : tensor<1x5x5x4xf32>",
    """  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %e = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<1x1x1x1xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.pad %e, %z, low = [0, 4, 4, 3], high = [0, 0, 0, 0], interior = [0, 0, 0, 0]
    : (tensor<1x1x1x1xf32>, tensor<f32>) -> tensor<1x5x5x4xf32>
  %r = stablehlo.add %0, %m : tensor<1x5x5x4xf32>
  return %r : tensor<1x5x5x4xf32>""",
)


def _files(tmp_path: Path, after: str) -> tuple[str, str]:
    (tmp_path / "before.mlir").write_text(CONV)
    (tmp_path / "after.mlir").write_text(after)
    return str(tmp_path / "before.mlir"), str(tmp_path / "after.mlir")


def _verify(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out + err


def _canonical() -> str:
    # merge-phases=exact: under auto this 3-feature conv (an image stem) is one conv, no phases
    return transform_text(
        CONV, "conv.mlir", "stablehlo-canonicalize-conv{gate=general merge-phases=exact}"
    )


def test_canonicalized_module_verifies_on_reference(tmp_path: Path, capsys) -> None:
    after = _canonical()
    assert "stablehlo.pad" in after and "stablehlo.slice" in after  # really rewritten
    code, out = _verify([*_files(tmp_path, after), "--trials", "3"], capsys)
    assert code == 0, out
    assert out.startswith("ok: 3 trial(s) on engine reference; 300 float element(s) judged against")


def test_wrong_padding_is_detected(tmp_path: Path, capsys) -> None:
    code, out = _verify([*_files(tmp_path, WRONG_PAD)], capsys)
    assert code == 1
    assert "output 0 differs at index [0, 0, 0, 0]" in out, out


def test_single_wrong_element_is_located(tmp_path: Path, capsys) -> None:
    code, out = _verify([*_files(tmp_path, WRONG_CORNER), "--seed", "5"], capsys)
    assert code == 1
    assert "output 0 differs at index [0, 4, 4, 3]" in out and "(1 of 100 elements" in out, out


def test_different_signatures_are_rejected(tmp_path: Path, capsys) -> None:
    other = CONV.replace("1x9x9x3", "1x9x9x2").replace("3x3x3x4", "3x3x2x4")
    code, out = _verify([*_files(tmp_path, other)], capsys)
    assert code == 1 and "takes different arguments" in out, out


@pytest.mark.parametrize("engine", ["xla", "iree"])
def test_real_engines_verify_and_detect(engine: str, tmp_path: Path, capsys) -> None:
    code, out = _verify(
        [*_files(tmp_path, _canonical()), "--engine", engine, "--trials", "2"], capsys
    )
    assert code == 0, out
    assert f"on engine {engine}" in out
    code, out = _verify([*_files(tmp_path, WRONG_PAD), "--engine", engine, "--trials", "1"], capsys)
    assert code == 1 and "output 0 differs at index [0, 0, 0, 0]" in out, out


@pytest.mark.parametrize(("engine", "module"), [("xla", "jax"), ("iree", "iree.compiler")])
def test_missing_engine_is_a_clear_message(
    engine: str, module: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    code, out = _verify([*_files(tmp_path, CONV), "--engine", engine], capsys)
    assert code == 1
    assert f"engine '{engine}' needs the optional package" in out, out
