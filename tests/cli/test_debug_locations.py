"""Locations users can act on: for a JAX `as_text(debug_info=True)` export, `explain`, the
verbose remarks and diagnostics show the user's `file:line:col` and JAX's op name beside the
.mlir line:col."""

from __future__ import annotations

import json
from pathlib import Path

from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from cli_support import DEBUGINFO, Runner  # pyright: ignore[reportMissingImports]

from convcanon.hlo.context import HloLoc, make_context, parse_module, print_module, source_loc

OP = "jit(f)/conv_general_dilated"


def test_explain_shows_the_user_source_beside_the_mlir_position(cc: Runner) -> None:
    result = cc("explain", DEBUGINFO, "--format", "json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["convs"]
    assert [(r["location"], r["source"], r["op_name"]) for r in rows] == [
        (f"{DEBUGINFO}:6:10", "mymodel.py:5:8", OP),
        (f"{DEBUGINFO}:7:10", "mymodel.py:3:11", OP),  # the innermost frame: block(), line 3
    ]
    table = cc("explain", DEBUGINFO).out.splitlines()
    assert table[0].split()[:2] == ["location", "source"]
    assert table[1].split()[:3] == [f"{DEBUGINFO}:6:10", "mymodel.py:5:8", OP]


def test_explain_without_debug_info_has_no_source_column(cc: Runner, tmp_path: Path) -> None:
    plain = tmp_path / "plain.mlir"
    module = parse_module(DEBUGINFO.read_text(), str(DEBUGINFO), make_context())
    plain.write_text(print_module(module))  # without locations
    result = cc("explain", plain)
    assert result.code == 0, result.err
    assert result.out.split()[:2] == ["location", "lhs"]
    assert f"{plain}:3:10" in result.out


def test_verbose_remarks_carry_a_note_at_the_user_source(opt: Runner) -> None:
    result = opt(DEBUGINFO, "--stablehlo-canonicalize-conv=verbose=true", "-o", "/dev/null")
    assert result.code == 0, result.err
    lines = diagnostic_lines(result.err)
    assert lines[0].startswith(f"{DEBUGINFO}:7:10: remark: convolution not canonicalized")
    assert lines[1] == f"mymodel.py:3:11: note: in {OP}"
    assert lines[2] == (
        f"{DEBUGINFO}:7:10: remark: convolution's operand chain reaches the convolution at"
        f" {DEBUGINFO}:6:10"
    )


def test_diagnostics_carry_the_note_too(opt: Runner) -> None:
    result = opt(DEBUGINFO, "--canonicalize-conv")
    assert result.code == 1
    assert diagnostic_lines(result.err)[:-1] == [
        f"{DEBUGINFO}:6:10: error: canonicalize-conv found no mhlo.convolution but 2"
        " stablehlo.convolution ops: use stablehlo-canonicalize-conv for stablehlo modules",
        f"mymodel.py:5:8: note: in {OP}",
    ]


def test_debug_info_round_trips_unchanged(opt: Runner) -> None:
    # mlir-opt writes the module and one more newline
    assert opt(DEBUGINFO).out == DEBUGINFO.read_text() + "\n"


def test_fused_and_plain_file_locations() -> None:
    text = (
        'func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n'
        '  %0 = stablehlo.add %x, %x : tensor<2xf32> loc(fused["a.py":4:2, "add"("b.py":9:1)])\n'
        '  %1 = stablehlo.add %0, %0 : tensor<2xf32> loc("c.py":7:3)\n'
        '  return %1 : tensor<2xf32>\n}\n'
    )  # fmt: skip
    module = parse_module(text, "m.mlir", make_context())
    ops = list(module.body.operations[0].regions[0].blocks[0].operations)
    fused, plain = (source_loc(op.location, "m.mlir") for op in ops[:2])
    assert isinstance(fused, HloLoc) and isinstance(plain, HloLoc)
    assert (str(fused.source), fused.op_path) == ("a.py:4:2", "add")
    assert str(plain) == "m.mlir" and plain.notes() == ["c.py:7:3: note: here"]
    at = source_loc(ops[1].location, "m.mlir", position=(3, 8))
    assert str(at) == "m.mlir:3:8"


def test_a_verifier_error_on_a_debug_info_op_has_its_mlir_position(opt: Runner, tmp_path: Path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %0 = stablehlo.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32> loc(#l)\n'
        "  return %x : tensor<2xf32>\n}\n"
        '#l = loc("jit(f)/add"("model.py":4:4))\n'
    )  # fmt: skip
    result = opt(bad)
    assert result.code == 1
    assert diagnostic_lines(result.err)[:-1] == [
        f"{bad}:2:8: error: 'stablehlo.add' op requires the same shape for all operands and"
        " results",
        "model.py:4:4: note: in jit(f)/add",
    ]
