"""`verify - -` is a usage error (it read stdin twice); AFTER or -p, one of them; --rtol/--atol
widen the typed allowance; the local check is in the Python API."""

from __future__ import annotations

from pathlib import Path

import pytest

import convcanon
from convcanon.cli import main
from convcanon.verify.local import after_pipeline

from .test_verify_detects_mismatch import CONV

PIPELINE = "stablehlo-canonicalize-conv{gate=general merge-phases=exact}"


@pytest.mark.parametrize(
    "args",
    [["-", "-"], ["a.mlir"], ["a.mlir", "b.mlir", "-p", PIPELINE], ["a.mlir", "-", "--rtol", "-1"]],
)
def test_bad_verify_command_lines_are_usage_errors(args: list[str], capsys):
    assert main(["verify", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


ROUNDED = CONV.replace(
    "  return %0 : tensor<1x5x5x4xf32>",
    """  %b = stablehlo.convert %0 : (tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xbf16>
  %r = stablehlo.convert %b : (tensor<1x5x5x4xbf16>) -> tensor<1x5x5x4xf32>
  return %r : tensor<1x5x5x4xf32>""",
)


def test_rtol_widens_the_typed_allowance(tmp_path: Path, capsys):
    """AFTER rounds through bf16: its f64 copy is exact, its f32 output is off by 2^-9."""
    (tmp_path / "b.mlir").write_text(CONV)
    (tmp_path / "a.mlir").write_text(ROUNDED)
    files = [str(tmp_path / "b.mlir"), str(tmp_path / "a.mlir")]
    assert main(["verify", *files, "--trials", "1"]) == 1
    assert "of the output's scale" in capsys.readouterr().err
    assert main(["verify", *files, "--trials", "1", "--rtol", "0.01"]) == 0, capsys.readouterr()


def test_the_local_check_from_the_api():
    verdicts = convcanon.verify_convs(CONV, pipeline=PIPELINE)
    assert [(v.location, v.verdict) for v in verdicts] == [("<before>:2:8", "ok")]
    assert verdicts[0].relative_error is not None and verdicts[0].relative_error < 1e-6
    after = after_pipeline(CONV, "<before>", PIPELINE, with_locations=True)
    broken = after.replace(
        "low = [0, 1, 1, 0], high = [0, 2, 2, 0]", "low = [0, 2, 1, 0], high = [0, 1, 2, 0]"
    )
    assert broken != after
    (verdict,) = convcanon.verify_convs(CONV, broken)
    assert verdict.verdict == "mismatch" and verdict.location == "<before>:2:8"
    assert verdict.relative_error is not None and verdict.relative_error > 0.01
    assert "verify_convs" in dir(convcanon)


INT_CONV = (
    CONV.replace("x3xf32>", "x3xi8>")
    .replace("x4xf32>", "x4xi32>")
    .replace("3x3x3x4xi32>", "3x3x3x4xi8>")
)


def test_an_integer_convs_local_verdict_counts_equal_elements_and_no_scale():
    """An integer conv is judged equal or not: its line said "output scale 0", which reads as
    a conv whose outputs were all zero (no signal)."""
    assert "tensor<3x3x3x4xi8>" in INT_CONV and "tensor<1x5x5x4xi32>" in INT_CONV
    (verdict,) = convcanon.verify_convs(INT_CONV, pipeline=PIPELINE)
    assert verdict.verdict == "ok"
    assert verdict.message == "100 integer/bool element(s) equal"
    after = after_pipeline(INT_CONV, "<before>", PIPELINE, with_locations=True)
    broken = after.replace(
        "low = [0, 1, 1, 0], high = [0, 2, 2, 0]", "low = [0, 2, 1, 0], high = [0, 1, 2, 0]"
    )
    assert broken != after
    (verdict,) = convcanon.verify_convs(INT_CONV, broken)
    assert verdict.verdict == "mismatch"


def test_two_files_without_locations_say_the_local_check_did_not_run(tmp_path: Path, capsys):
    """An `ok` must not read as if each rewrite had been judged on its own too."""
    from convcanon.api import canonicalize_conv

    (tmp_path / "b.mlir").write_text(CONV)
    (tmp_path / "a.mlir").write_text(canonicalize_conv(CONV, gate="general").text)
    files = [str(tmp_path / "b.mlir"), str(tmp_path / "a.mlir")]
    assert main(["verify", *files, "--trials", "1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ok: ")
    assert err.startswith("note: local check not run for 1 conv(s): ")
    assert "--mlir-print-debuginfo" in err
