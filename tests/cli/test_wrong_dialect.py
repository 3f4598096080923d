"""No silent no-ops: a conv pass over the other dialect's convs is an error naming the right pass;
`explain` picks the pass from the dialect it finds; XLA HLO without --input-hlo gets a hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from cli_support import CNN, Runner  # pyright: ignore[reportMissingImports]

from convcanon.api import canonicalize_conv
from convcanon.diagnostics import ConvcanonError


def test_mhlo_pass_on_stablehlo_names_the_stablehlo_pass(opt: Runner, tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    result = opt(CNN, "-p", "canonicalize-conv{gate=general}", "--stats", "-o", out)
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"{CNN}:3:10: error: canonicalize-conv found no mhlo.convolution")
    assert "6 stablehlo.convolution ops: use stablehlo-canonicalize-conv" in result.err
    assert "statistics" not in result.err and not out.exists()


def test_stablehlo_pass_on_mhlo_names_the_mhlo_pass(opt: Runner, mhlo_cnn: Path) -> None:
    result = opt(mhlo_cnn, "--stablehlo-canonicalize-conv")
    assert result.code == 1 and result.out == ""
    assert "stablehlo-canonicalize-conv found no stablehlo.convolution" in result.err
    assert "use canonicalize-conv for mhlo modules" in result.err


def test_a_module_without_convs_is_not_an_error(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "add.mlir"
    source.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.add %x, %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
    )
    assert opt(source, "-p", "canonicalize-conv").code == 0


def test_explain_picks_the_pass_from_the_dialect(cc: Runner, mhlo_cnn: Path) -> None:
    result = cc("explain", mhlo_cnn, "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["summary"]["convs_seen"] == 6
    stable = json.loads(cc("explain", CNN, "--format", "json").out)
    assert stable["summary"]["convs_seen"] == 6


def test_explain_with_the_wrong_pass_is_the_same_error(cc: Runner, mhlo_cnn: Path) -> None:
    result = cc("explain", mhlo_cnn, "-p", "stablehlo-canonicalize-conv")
    assert result.code == 1 and result.out == ""
    assert "use canonicalize-conv for mhlo modules" in result.err


def test_the_api_raises_the_same_error() -> None:
    with pytest.raises(ConvcanonError, match="use stablehlo-canonicalize-conv"):
        canonicalize_conv(CNN.read_text(), "mhlo")


def test_hlo_text_without_input_hlo_suggests_it(opt: Runner, cc: Runner, tmp_path: Path) -> None:
    hlo = tmp_path / "conv.hlo"
    hlo.write_text("\nHloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n")
    for result in (opt(hlo, "--stablehlo-canonicalize-conv"), cc("explain", hlo)):
        assert result.code == 1
        assert without_source_lines(result.err) == (
            f"{hlo}:2:1: error: this is XLA HLO text, not MLIR: convert it to StableHLO with "
            "--input-hlo (convcanon-opt, explain)\n"
        )


def test_binary_input_suggests_input_hlo(opt: Runner, tmp_path: Path) -> None:
    proto = tmp_path / "conv.pb"
    proto.write_bytes(b"\n\x05jit_f\x1a\xff\xfe\x00")
    result = opt(proto)
    assert result.code == 1
    assert "not UTF-8 text" in result.err and "with --input-hlo" in result.err


def test_a_module_of_the_other_half_names_the_pass_that_takes_it(
    opt: Runner, cc: Runner, tmp_path: Path
) -> None:
    from cli_support import MIGRAPHX_EXP  # pyright: ignore[reportMissingImports]

    migraphx = tmp_path / "exp.mlir"
    migraphx.write_text(MIGRAPHX_EXP)
    for result in (opt(migraphx, "--stablehlo-canonicalize-conv"), cc("explain", migraphx)):
        assert result.code == 1 and result.out == ""
        assert without_source_lines(result.err) == (
            f'{migraphx}:1:31: error: `!"migraphx"<"shaped<2xf32, 1>">` type created with'
            " unregistered dialect (this module holds migraphx/TOSA ops: migraphx-to-tosa takes"
            " them)\n"
        )
    result = opt(CNN, "-p", "migraphx-to-tosa")
    assert result.code == 1 and result.out == ""
    assert without_source_lines(result.err) == (
        f"{CNN}:3:31: error: Operation stablehlo.convolution is not registered (this module holds"
        " StableHLO/MHLO ops: stablehlo-canonicalize-conv or canonicalize-conv takes them)\n"
    )


@pytest.mark.parametrize("dialect_pass", ["stablehlo-canonicalize-conv", "canonicalize-conv"])
def test_vhlo_convs_are_an_error_not_passed_over(
    opt: Runner, tmp_path: Path, dialect_pass: str
) -> None:
    """VHLO (a portable artifact's contents, printed, or an artifact whose producer is not
    StableHLO's) has its own convs: a conv pass left all six as they were, exit 0."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from convcanon.hlo.context import make_context, print_module

    target = stablehlo.get_minimum_version()
    artifact = stablehlo.serialize_portable_artifact_str(CNN.read_text(), target)
    vhlo = print_module(ir.Module.parse(artifact, make_context()))  # VHLO as plain bytecode
    assert "vhlo.convolution_v1" in vhlo and "stablehlo." not in vhlo
    source = tmp_path / "cnn.vhlo.mlir"
    source.write_text(vhlo)
    result = opt(source, "-p", dialect_pass)
    assert result.code == 1 and result.out == "", result.err
    assert "found no" in result.err and "but 6 vhlo.convolution_v1 ops: VHLO" in result.err
    assert result.err.startswith(f"{source}:")
