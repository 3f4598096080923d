"""The pass driver: statistics, verbose remarks (seed phase 2b), dynamic shapes, EUET001."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import re

import pytest
from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import make_context
from convcanon.hlo.dialects import MHLO, STABLEHLO
from convcanon.hlo.io import HloFile
from convcanon.hlo.passes import canonicalize

from .cases import (
    DYNAMIC,
    EXAMPLES,
    all_conv_params,
    assert_canonical,
    assert_same_results,
    parse,
    random_inputs,
    run_pass,
    xla,
)

CHAIN = """
func.func public @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>, %v: tensor<3x3x3x2x2xf32>) -> tensor<1x8x8x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x8x8x2xf32>
  %1 = stablehlo.tanh %0 : tensor<1x8x8x2xf32>
  %2 = stablehlo.convolution(%1, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x8x8x2xf32>
  %r = stablehlo.reshape %x : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x4x2xf32>
  %3 = stablehlo.convolution(%r, %v) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f], window = {pad = [[1, 1], [1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x4x2xf32>, tensor<3x3x3x2x2xf32>) -> tensor<1x4x4x4x2xf32>
  return %2 : tensor<1x8x8x2xf32>
}
"""

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_statistics_count_seen_rewritten_and_skipped_by_reason(dialect) -> None:
    _, stats, _ = run_pass(CHAIN, dialect)
    assert stats.counters == {
        "convs-seen": 3,
        "rewritten-pad": 2,
        "skipped: lhs rank 5 is not 4": 1,
    }
    _, stats, _ = run_pass(CHAIN, dialect, gate="general")
    assert stats.counters == {"convs-seen": 3, "rewritten-pad": 3}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_default_gate_leaves_the_rejected_conv_of_a_mixed_module_as_it_was(dialect) -> None:
    def rank5_conv(text: str) -> str:
        (line,) = [s for s in text.splitlines() if "convolution" in s and "4x4x4" in s]
        return re.sub(r"%[\w#]+", "%v", line.strip())  # SSA names renumber; all else is equal

    before = rank5_conv(str(parse(CHAIN, dialect).module))
    _, _, printed = run_pass(CHAIN, dialect)
    assert rank5_conv(printed) == before
    assert printed.count(f"{dialect.name}.pad") == 2


def test_small_cnn_statistics() -> None:
    text = (EXAMPLES / "small_cnn.stablehlo.mlir").read_text()
    _, stats, _ = run_pass(text, STABLEHLO, gate="general")
    assert stats.counters == {"convs-seen": 6, "rewritten-pad": 5, "rewritten-stride": 4}
    # engine=xla-cpu: the 7x7/2 RGB stem's four phases merge into one conv (kernel zero-extended)
    _, stats, _ = run_pass(text, STABLEHLO, gate="general", engine="xla-cpu")
    assert stats.counters == {
        "convs-seen": 6,
        "rewritten-pad": 5,
        "rewritten-stride": 4,
        "merged-phases": 3,
    }


@pytest.mark.parametrize("dialect", DIALECTS)
def test_verbose_remarks_report_conv_chains_and_rejections_and_change_nothing(
    dialect, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, quiet = run_pass(CHAIN, dialect)
    assert capsys.readouterr().err == ""
    _, _, loud = run_pass(CHAIN, dialect, verbose=True)
    assert loud == quiet
    remarks = capsys.readouterr().err.splitlines()
    assert remarks == [
        "case.mlir:5:8: remark: convolution's operand chain reaches the convolution at case.mlir:3:8",
        "case.mlir:7:8: remark: convolution not canonicalized: lhs rank 5 is not 4",
    ]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_dynamic_shapes_are_skipped_with_a_reason(dialect) -> None:
    before = str(parse(DYNAMIC, dialect).module)
    _, stats, printed = run_pass(DYNAMIC, dialect, gate="general")
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: dynamic spatial or feature extent: lhs is tensor<1x?x8x2xf32>": 1,
    }
    assert printed == before


def _quantized_conv_module(dialect_name: str) -> ir.Module:
    """A conv on an element type with no zero. jaxlib ships no `quant` dialect, so the type is
    opaque and the module is built op by op (it would not pass the verifier; the pass must fail
    before it gets that far)."""
    context = make_context(allow_unregistered=True)
    with context, ir.Location.name("qconv"):
        module = ir.Module.create(loc=ir.Location.file("q.mlir", 3, 5))
        q = ir.Type.parse("!quant.uniform<i8:f32, 1.0>")
        lhs = ir.RankedTensorType.get([1, 8, 8, 2], q)
        rhs = ir.RankedTensorType.get([3, 3, 2, 2], q)
        out = ir.RankedTensorType.get([1, 8, 8, 2], q)
        ftype = ir.FunctionType.get([lhs, rhs], [out])
        func = ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get("main"),
                "function_type": ir.TypeAttr.get(ftype),
            },
            regions=1,
        )
        ir.InsertionPoint(module.body).insert(func)
        block = func.regions[0].blocks.append(lhs, rhs)
        with ir.InsertionPoint(block):
            conv = ir.Operation.create(
                f"{dialect_name}.convolution",
                results=[out],
                operands=list(block.arguments),
                attributes={
                    "dimension_numbers": ir.Attribute.parse(
                        f"#{dialect_name}.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>"
                    ),
                    "padding": ir.Attribute.parse("dense<1> : tensor<2x2xi64>"),
                    "feature_group_count": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1),
                    "batch_group_count": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1),
                },
                loc=ir.Location.file("q.mlir", 3, 5),
            )
            ir.Operation.create("func.return", operands=[conv.result])
    return module


@pytest.mark.parametrize("dialect", DIALECTS)
def test_element_type_without_zero_is_euet001_at_the_conv(dialect) -> None:
    module = _quantized_conv_module(dialect.name)
    before = str(module)
    with pytest.raises(ConvcanonError) as info:
        canonicalize(HloFile(module, "q.mlir", False), {"gate": "general"}, dialect)
    err = info.value
    assert err.code == "EUET001"
    assert err.render() == (
        "q.mlir:3:5: error: EUET001: element type !quant.uniform<i8:f32, 1.0> of the "
        "convolution's lhs cannot be zero-padded"
    )
    assert str(module) == before  # failed before rewriting anything


def test_a_rewrite_that_does_not_verify_is_an_internal_error_at_its_conv(
    tmp_path, monkeypatch, capsys
) -> None:
    """A bug of the rewrite (here: partial convs written with a stride their result type does
    not have) is one diagnostic at the conv, exit 1 and no output file, never a traceback."""
    from convcanon.cli import opt_main
    from convcanon.hlo.build import Builder

    def strided_conv(self: Builder, lhs, rhs, p, written, element):
        strided = p._replace(strides=(2,) * p.num_spatial)
        return original(self, lhs, rhs, strided, written | {"window_strides"}, element)

    original = Builder.conv
    monkeypatch.setattr(Builder, "conv", strided_conv)
    source = tmp_path / "in.mlir"
    source.write_text(CHAIN)
    out = tmp_path / "out.mlir"
    code = opt_main(
        ["-p", "stablehlo-canonicalize-conv{gate=general}", str(source), "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert re.match(
        rf"{re.escape(str(source))}:3:\d+: error: internal error: the rewritten module does not verify: ",
        err,
    ), err
    assert "Traceback" not in err and "please report" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir"]


NESTED = """
module {
  func.func public @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %r:3 = stablehlo.while(%i = %c0, %a = %x, %k = %w) : tensor<i32>, tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>
     cond {
      %n = stablehlo.constant dense<2> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %y = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x8x8x2xf32>
      %t = stablehlo.tanh %y : tensor<1x8x8x2xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %t, %k : tensor<i32>, tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>
    }
    %z = stablehlo.convolution(%r#1, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32>
    return %z : tensor<1x4x4x2xf32>
  }
  module @inner {
    func.func @g(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32> {
      %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32>
      return %y : tensor<1x6x6x2xf32>
    }
  }
}
"""


def test_convs_in_loop_bodies_and_nested_modules_are_found_in_order_and_stay_exact() -> None:
    """Every conv nested (at any depth) in a function is rewritten, in the order of the text:
    the loop body's conv before the one after the loop, then the nested module's."""
    hlo, stats, printed = run_pass(NESTED, STABLEHLO, gate="general")
    assert stats.counters == {
        "convs-seen": 3,
        "rewritten-pad": 2,
        "rewritten-stride": 1,
        "merged-phases": 3,
        "skipped: already canonical (zero padding, unit stride, no lhs dilation)": 1,
    }
    _, records = canonicalize(parse(NESTED), {"gate": "general"}, STABLEHLO)
    assert [r.loc.line for r in records] == [11, 17, 22]
    assert_canonical(all_conv_params(hlo, STABLEHLO))
    inputs = random_inputs([(1, 8, 8, 2), (3, 3, 2, 2)], "f32", seed=7)
    assert_same_results(xla(NESTED, inputs), xla(printed, inputs), "f32")
