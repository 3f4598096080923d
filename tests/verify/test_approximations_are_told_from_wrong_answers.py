"""An AFTER that agrees in its own type but computes an approximation (upstream's expansion of a
CHLO special function, written for f32) is `approximate`, exit 0; an error just past that band
is still a mismatch, even where the type's rounding hides it; our exact rewrites stay `ok`.

The band is 64 steps of the type AFTER computes in (f32 for f16): the f16 programs below scale
their input in f32 by 1 + k steps of f32 and round back, which f16 cannot see, so only the f64
copy of AFTER tells them apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .cli_calls import cli
from .test_verify_every_type import verify

SPECIAL = """func.func @main(%x: tensor<64x{t}>) -> tensor<64x{t}> {{
  %0 = chlo.{op} %x : tensor<64x{t}> -> tensor<64x{t}>
  return %0 : tensor<64x{t}>
}}
"""

IDENTITY = """func.func @main(%x: tensor<64xf16>) -> tensor<64xf16> {
  return %x : tensor<64xf16>
}
"""

# x scaled in f32 by `factor` and rounded back to f16
SCALED = """func.func @main(%x: tensor<64xf16>) -> tensor<64xf16> {{
  %c = stablehlo.constant dense<{factor!r}> : tensor<64xf32>
  %w = stablehlo.convert %x : (tensor<64xf16>) -> tensor<64xf32>
  %m = stablehlo.multiply %w, %c : tensor<64xf32>
  %y = stablehlo.convert %m : (tensor<64xf32>) -> tensor<64xf16>
  return %y : tensor<64xf16>
}}
"""

F32_STEP = 2.0**-23


def status(out: str) -> str:
    """The whole program's verdict: the first word of its summary line."""
    found = re.search(r"^(ok|approximate|inconclusive|ill-conditioned): ", out, re.M)
    assert found, out
    return found.group(1)


@pytest.mark.parametrize("op", ["erf", "lgamma"])
@pytest.mark.parametrize("element", ["f32", "bf16"])
def test_upstream_expansions_of_special_functions_are_approximate(
    op: str, element: str, tmp_path: Path
) -> None:
    """chlo-legalize-to-stablehlo's polynomial for f32 is exact to f32 only: before this check
    told approximations apart, verify reported a mismatch whose f32 outputs were equal."""
    pytest.importorskip("jax")
    (tmp_path / "m.mlir").write_text(SPECIAL.format(op=op, t=element))
    args = ("-p", "chlo-legalize-to-stablehlo", "--engine", "xla", "--trials", "4")
    code, out, err = cli("verify", str(tmp_path / "m.mlir"), *args)
    assert code == 0 and status(out) == "approximate", (out, err)
    assert "past f64 rounding (output 0: " in out, out


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(4, 48), seed=st.integers(0, 3))
def test_errors_within_the_band_are_approximate(steps: int, seed: int, tmp_path_factory) -> None:
    tmp_path = tmp_path_factory.mktemp("band")
    factor = 1.0 + steps * F32_STEP
    code, out = verify(tmp_path, IDENTITY, SCALED.format(factor=factor), "--seed", str(seed))
    assert code == 0 and status(out) == "approximate", out


@settings(max_examples=12, deadline=None)
@given(steps=st.integers(80, 2000), seed=st.integers(0, 3))
def test_errors_past_the_band_are_mismatches_under_the_types_rounding(
    steps: int, seed: int, tmp_path_factory
) -> None:
    """Up to 2000 steps of f32 (2.4e-4) is under half a step of f16 (4.9e-4): the f16 outputs
    mostly equal BEFORE's, and only the f64 copy sees the error."""
    tmp_path = tmp_path_factory.mktemp("past")
    factor = 1.0 + steps * F32_STEP
    code, out = verify(tmp_path, IDENTITY, SCALED.format(factor=factor), "--seed", str(seed))
    assert code == 1 and "AFTER evaluated in f64 gives" in out, out
    assert "f64 rounding and 64 steps of f32" in out, out


def test_an_exact_rewrite_is_ok_not_approximate(tmp_path: Path) -> None:
    """The scaling by exactly 1 in f32: the same program, exactly."""
    code, out = verify(tmp_path, IDENTITY, SCALED.format(factor=1.0))
    assert code == 0 and status(out) == "ok", out
