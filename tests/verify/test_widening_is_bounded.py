"""The f64 copy that verify judges against is not made of a literal whose f64 copy is over the
memory limit: a 4 GB f32 splat became an 8 GB f64 array before any check (killed for memory,
or `error: out of memory` without a location). Such a module is judged against BEFORE itself."""

from __future__ import annotations

import pytest

from convcanon.reference import hlo_interp
from convcanon.verify.widen import widen_text

BIG_SPLAT = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<1.5> : tensor<1000x1000xf32>
  %r = stablehlo.add %x, %x : tensor<2xf32>
  return %r : tensor<2xf32>
}
"""


def test_a_literal_whose_f64_copy_is_over_the_limit_is_not_copied(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(hlo_interp, "DEFAULT_MEMORY_LIMIT", 4_000_000)  # the f32 literal fits
    widened = widen_text(BIG_SPLAT, "m.mlir")
    assert widened.text is None
    assert widened.reason == (
        "a literal of shape [1000, 1000] needs 8000000 bytes in f64, over the memory limit of"
        " 4000000"
    )


def test_under_the_limit_the_literal_is_widened_as_a_splat():
    widened = widen_text(BIG_SPLAT, "m.mlir")
    assert widened.text is not None
    assert "dense<1.500000e+00> : tensor<1000x1000xf64>" in widened.text
