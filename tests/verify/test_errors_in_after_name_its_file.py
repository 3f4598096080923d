"""An error in AFTER's text is at AFTER's path, line and column, whichever check reads it
first: the local check of each conv read AFTER under the name `<after>` (found by
tests/fuzz/test_run_and_verify_command_lines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_calls import cli

CONV = (
    "func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
    " window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}"
    " {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
    " : (tensor<1x5x5x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32>\n"
    "  return %0 : tensor<1x3x3x2xf32>\n"
    "}\n"
)
AFTERS = {
    "a stride its result type contradicts": (
        CONV.replace("stride = [2, 2]", "stride = [1, 2]"),
        ":2:8: error: inferred shape '[1, 5, 3, 2]' is incompatible",
    ),
    "a second function cut short": (
        CONV + "func.func @f(\n",
        ":5:14: error: expected non-function type",
    ),
}


@pytest.mark.parametrize("after_text, where", AFTERS.values(), ids=list(AFTERS))
def test_an_error_in_after_names_after(tmp_path: Path, after_text: str, where: str) -> None:
    before, after = tmp_path / "before.mlir", tmp_path / "after.mlir"
    before.write_text(CONV)
    after.write_text(after_text)
    code, _, err = cli("verify", str(before), str(after), "--trials", "1")
    assert code == 1
    assert err.splitlines()[0].startswith(f"{after}{where}"), err
