"""`dynamic_conv`, the conv whose padding is an operand: `jax.export` emits it when the padding
depends on a symbolic spatial extent. With a constant padding (what shape refinement leaves) it
is rewritten exactly as the convolution it stands for, in both dialects; with a padding computed
at run time it is seen and reported with its reason, never passed over in silence."""

# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main as cli_main
from convcanon.cli import opt_main
from convcanon.hlo.context import make_context, parse_module
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect, read_padding
from convcanon.verify.engines import iree_engine, reference_engine, xla_engine

from .cases import (
    ConvCase,
    all_conv_params,
    assert_canonical,
    conv_cases,
    functions,
    run_pass,
)

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


def as_dynamic_conv(text: str, padding_type: str) -> str:
    """The one-conv module `text` with its convolution written as a `dynamic_conv` whose padding
    is a `padding_type` constant (`tensor<Nx2xi32>`, say)."""
    module = parse_module(text, "case.mlir", make_context())
    (func,) = functions(module)
    conv = next(op for op in func.regions[0].blocks[0].operations if "convolution" in op.name)
    pairs = read_padding(conv.attributes["padding"])
    attrs = ", ".join(
        f"{name} = {conv.attributes[name]}" for name in conv.attributes if name != "padding"
    )
    body = ", ".join(f"[{lo}, {hi}]" for lo, hi in pairs)
    lhs, rhs, out = (str(v.type) for v in (*conv.operands, conv.results[0]))
    return (
        f"func.func public @main(%arg0: {lhs}, %arg1: {rhs}) -> {out} {{\n"
        f"  %p = stablehlo.constant dense<[{body}]> : {padding_type}\n"
        f'  %0 = "stablehlo.dynamic_conv"(%arg0, %arg1, %p) <{{{attrs}}}> : '
        f"({lhs}, {rhs}, {padding_type}) -> {out}\n"
        f"  return %0 : {out}\n"
        "}\n"
    )


def padding_type(case: ConvCase, width: int) -> str:
    return f"tensor<{len(case.lhs_shape) - 2}x2xi{width}>"


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases(), width=st.sampled_from([32, 64]))
def test_a_constant_padded_dynamic_conv_is_rewritten_as_its_convolution(
    case: ConvCase, width: int, dialect: Dialect
) -> None:
    text = as_dynamic_conv(case.text, padding_type(case, width))
    after, stats, printed = run_pass(text, dialect, gate="general")
    _, expected_stats, expected = run_pass(case.text, dialect, gate="general")
    assert "dynamic_conv" not in printed
    assert printed == expected  # the padding constant went with the op
    assert stats.counters == expected_stats.counters
    assert_canonical(all_conv_params(after, dialect))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases(elements=("f32", "f64", "i32")), width=st.sampled_from([32, 64]))
def test_the_reference_reads_a_dynamic_convs_padding_operand_as_the_padding(
    case: ConvCase, width: int
) -> None:
    text = as_dynamic_conv(case.text, padding_type(case, width))
    inputs = case.inputs()
    got = reference_engine(text, "case.mlir", "main", inputs)
    expected = reference_engine(case.text, "case.mlir", "main", inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


STRIDED = """
func.func public @main(%x: tensor<2x9x11x3xf32>, %w: tensor<3x4x3x5xf32>) -> tensor<2x5x2x5xf32> {
  %p = stablehlo.constant dense<[[1, 2], [-1, 2]]> : tensor<2x2xi32>
  %0 = "stablehlo.dynamic_conv"(%x, %w, %p) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, rhs_dilation = array<i64: 1, 2>, window_strides = array<i64: 2, 3>}> : (tensor<2x9x11x3xf32>, tensor<3x4x3x5xf32>, tensor<2x2xi32>) -> tensor<2x5x2x5xf32>
  return %0 : tensor<2x5x2x5xf32>
}
"""


def test_iree_runs_the_dynamic_conv_as_xla_and_iree_run_its_rewrite() -> None:
    """IREE runs a `dynamic_conv` itself (XLA cannot translate one): the rewrite, a plain
    canonical conv program, gives its values on both engines."""
    pytest.importorskip("iree.compiler")
    _, _, printed = run_pass(STRIDED, STABLEHLO, gate="general")
    assert "dynamic_conv" not in printed
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((2, 9, 11, 3), (3, 4, 3, 5))]
    (original,) = iree_engine(STRIDED, "case.mlir", "main", inputs)
    for engine in (iree_engine, xla_engine):
        (rewritten,) = engine(printed, "out.mlir", "main", inputs)
        np.testing.assert_allclose(rewritten, original, rtol=1e-5, atol=1e-5)


def test_a_constant_padding_that_contradicts_the_declared_result_is_an_error_at_the_op(
    tmp_path, capsys
) -> None:
    """The verifier cannot check a `dynamic_conv`'s result against a padding known only at run
    time; once the padding is a constant the pass can, and says so at the op, writing nothing."""
    path = tmp_path / "bad.mlir"
    path.write_text(STRIDED.replace("tensor<2x5x2x5xf32>", "tensor<2x5x4x5xf32>"))
    out = tmp_path / "out.mlir"
    code = opt_main([str(path), "-p", "stablehlo-canonicalize-conv", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert not out.exists()
    line = 4  # of the dynamic_conv, after the text's leading newline
    assert err.startswith(f"{path}:{line}:")
    assert "stablehlo.dynamic_conv with the constant padding [[1, 2], [-1, 2]]" in err
    assert "Traceback" not in err


RUNTIME = """
func.func public @main(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %p: tensor<2x2xi64>) -> tensor<1x4x4x4xf32> {
  %0 = "stablehlo.dynamic_conv"(%x, %w, %p) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}> : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<2x2xi64>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_runtime_padded_dynamic_conv_is_seen_and_kept_with_its_reason(dialect: Dialect) -> None:
    _, stats, printed = run_pass(RUNTIME, dialect, gate="general")
    assert stats.counters["convs-seen"] == 1
    (reason,) = (k for k in stats.counters if k.startswith("skipped: "))
    assert "padding is computed at run time" in reason
    assert printed.count(f'"{dialect.name}.dynamic_conv"') == 1


def test_explain_lists_a_jax_export_with_symbolic_spatial_extents(tmp_path, capsys) -> None:
    """SAME padding over a symbolic height and width: the export computes the padding at run
    time, and `explain` gives the conv a row, at its line, with `?` amounts and the reason."""
    jax = pytest.importorskip("jax")
    from jax import export, lax

    b, h = export.symbolic_shape("b, h")
    f = jax.jit(
        lambda x, w: lax.conv_general_dilated(
            x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
    )
    specs = (
        jax.ShapeDtypeStruct((b, h, h, 3), "float32"),
        jax.ShapeDtypeStruct((3, 3, 3, 4), "float32"),
    )
    text = export.export(f)(*specs).mlir_module()
    path = tmp_path / "poly.mlir"
    path.write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "stablehlo.dynamic_conv" in s)
    assert cli_main(["explain", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["convs"]
    assert re.match(rf"{re.escape(str(path))}:{line}:\d+$", row["location"])
    assert row["decision"] == "skip"
    assert row["reason"].startswith("dynamic spatial or feature extent")
    assert row["padding"] == [[None, None], [None, None]]
    assert row["ops_before"] == row["ops_after"] == {"dynamic_conv": 1}


def _module(dialect: str, padding: str, padding_type: str, result: str = "2x5x5x4") -> str:
    """One dynamic_conv of a 3x3/2 window over 9x9, its padding operand the op `padding`."""
    if dialect == "stablehlo":
        attrs = "<{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>}>"
    else:
        attrs = "{batch_group_count = 1 : i64, dimension_numbers = #mhlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = dense<2> : tensor<2xi64>}"
    return (
        f"func.func @main(%x: tensor<2x9x9x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<{result}xf32> {{\n"
        f"  %p = {padding} : {padding_type}\n"
        f'  %0 = "{dialect}.dynamic_conv"(%x, %w, %p) {attrs} : (tensor<2x9x9x3xf32>, tensor<3x3x3x4xf32>, {padding_type}) -> tensor<{result}xf32>\n'
        f"  return %0 : tensor<{result}xf32>\n}}\n"
    )


def _explain(tmp_path, capsys, text: str) -> dict:
    path = tmp_path / "m.mlir"
    path.write_text(text)
    assert cli_main(["explain", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("dialect", ["stablehlo", "mhlo"])
def test_explain_finds_a_module_whose_only_convs_are_dynamic_convs(
    tmp_path, capsys, dialect: str
) -> None:
    """Without `-p` explain picks the pass by the module's convs: a dynamic_conv counts."""
    report = _explain(
        tmp_path,
        capsys,
        _module(dialect, f"{dialect}.constant dense<[[1, 1], [1, 2]]>", "tensor<2x2xi32>"),
    )
    (row,) = report["convs"]
    assert row["decision"] == "rewrite"
    assert row["padding"] == [[1, 1], [1, 2]]


def test_an_arith_constant_padding_is_read() -> None:
    text = _module("stablehlo", "arith.constant dense<[[1, 1], [1, 2]]>", "tensor<2x2xi32>")
    _, stats, printed = run_pass(text, STABLEHLO, gate="general")
    assert "dynamic_conv" not in printed and "arith.constant" not in printed
    assert stats.counters["rewritten-stride"] == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param(
            _module("stablehlo", "stablehlo.constant dense_resource<pad>", "tensor<2x2xi32>")
            + '{-#\n  dialect_resources: {\n    builtin: {\n      pad: "0x0400000001000000010000000100000002000000"\n    }\n  }\n#-}\n',
            "its padding is a dense_resource constant, which the pass does not read",
            id="dense_resource",
        ),
        pytest.param(
            _module("mhlo", "mhlo.constant dense<[[1, 1], [1, 2]]>", "tensor<2x2xi32>").replace(
                "feature_group_count = 1 : i64,",
                "feature_group_count = 1 : i64, padding = dense<[[1, 1], [1, 2]]> : tensor<2x2xi64>,",
            ),
            "it has a padding attribute as well as a padding operand",
            id="mhlo-attribute-and-operand",
        ),
    ],
)
def test_a_constant_padding_the_pass_does_not_read_is_kept_with_what_it_is(
    tmp_path, capsys, text: str, reason: str
) -> None:
    (row,) = _explain(tmp_path, capsys, text)["convs"]
    assert (row["decision"], row["reason"]) == ("skip", reason)
    assert row["padding"] == [[None, None], [None, None]]


def test_explain_shows_a_read_padding_of_int64_min_as_the_number(tmp_path, capsys) -> None:
    """`?` marks a padding the pass did not read, never a value that happens to equal MLIR's
    dynamic-size marker."""
    text = _module(
        "stablehlo",
        "stablehlo.constant dense<[[-9223372036854775808, 0], [1, 2]]>",
        "tensor<2x2xi64>",
        "2x0x5x4",
    )
    (row,) = _explain(tmp_path, capsys, text)["convs"]
    assert row["padding"] == [[-(2**63), 0], [1, 2]]
    assert row["ops_before"] == {"dynamic_conv": 1} and row["ops_after"] == {"convolution": 1}


def test_the_reference_refuses_an_mhlo_padding_operand_of_the_wrong_shape(tmp_path) -> None:
    """MHLO's verifier does not check it; read flat it would be some other padding."""
    from convcanon.diagnostics import ConvcanonError

    text = _module("stablehlo", "stablehlo.constant dense<[[1, 1], [1, 2]]>", "tensor<2x2xi32>")
    module = parse_module(text, "m.mlir", make_context())
    from convcanon.hlo import legalize

    legalize.to_mhlo(module)
    mhlo = (
        str(module)
        .replace(
            "dense<[[1, 1], [1, 2]]> : tensor<2x2xi32>", "dense<[[1, 1, 1, 2]]> : tensor<1x4xi32>"
        )
        .replace("tensor<2x2xi32>", "tensor<1x4xi32>")
    )
    inputs = [np.ones((2, 9, 9, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)]
    with pytest.raises(
        ConvcanonError, match=r"padding int32\[1, 4\], expected integers of shape \[2, 2\]"
    ):
        reference_engine(mhlo, "m.mlir", "main", inputs)


@pytest.mark.parametrize("dialect", ["stablehlo", "mhlo"])
@pytest.mark.parametrize(
    ("literal", "element"),
    [
        ("[[1, 1], [1, 2]]", "i4"),
        ("[[1, 1], [1, 2]]", "ui4"),
        ("1", "i2"),
        ("[[-1, 1], [1, 1]]", "i2"),
    ],
)
def test_a_padding_of_2_or_4_bit_integers_is_read(dialect: str, literal: str, element: str) -> None:
    """StableHLO allows them; the bindings cannot index them, so their printed literal is read."""
    pairs = (
        [[1, 1], [1, 1]]
        if literal == "1"
        else [list(map(int, p.split(", "))) for p in literal[2:-2].split("], [")]
    )
    h, w = ((9 + lo + hi - 3) // 2 + 1 for lo, hi in pairs)  # a 3x3/2 window over 9x9
    text = _module(
        dialect, f"{dialect}.constant dense<{literal}>", f"tensor<2x2x{element}>", f"2x{h}x{w}x4"
    )
    _, _, printed = run_pass(text, STABLEHLO if dialect == "stablehlo" else MHLO, gate="general")
    assert "dynamic_conv" not in printed
    as_convolution = text.replace(
        f"{dialect}.constant dense<{literal}>", f"{dialect}.constant dense<{pairs}>"
    ).replace(element, "i64")
    _, _, expected = run_pass(
        as_convolution, STABLEHLO if dialect == "stablehlo" else MHLO, gate="general"
    )
    assert printed == expected


@pytest.mark.parametrize("dialect", ["stablehlo", "mhlo"])
def test_a_dynamic_conv_without_spatial_dims_becomes_a_convolution(dialect: str) -> None:
    text = (
        "func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {\n"
        f"  %p = {dialect}.constant dense<> : tensor<0x2xi64>\n"
        f'  %0 = "{dialect}.dynamic_conv"(%x, %w, %p) <{{batch_group_count = 1 : i64, dimension_numbers = #{dialect}.conv<[b, f]x[i, o]->[b, f]>, feature_group_count = 1 : i64}}> : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<0x2xi64>) -> tensor<2x4xf32>\n'
        "  return %0 : tensor<2x4xf32>\n}\n"
    )
    _, stats, printed = run_pass(
        text, STABLEHLO if dialect == "stablehlo" else MHLO, gate="general"
    )
    assert "dynamic_conv" not in printed and f"{dialect}.convolution" in printed
    assert stats.counters["skipped: rank 2 has no spatial dimension"] == 1


def test_an_mhlo_padding_of_i1_is_an_error_at_the_op(tmp_path, capsys) -> None:
    """StableHLO's verifier refuses an i1 padding; MHLO's allows it, and the pass refuses it."""
    path = tmp_path / "m.mlir"
    path.write_text(_module("mhlo", "mhlo.constant dense<true>", "tensor<2x2xi1>"))
    assert opt_main([str(path), "-p", "canonicalize-conv"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3:8: error: mhlo.dynamic_conv expects an integer padding")


def test_the_reference_refuses_a_float_mhlo_padding_operand() -> None:
    """Read as integers, 1.5 and 2.7 would be 1 and 2: another padding."""
    from convcanon.diagnostics import ConvcanonError

    text = _module("mhlo", "mhlo.constant dense<[[1.5, 1.0], [1.0, 2.7]]>", "tensor<2x2xf32>")
    inputs = [np.ones((2, 9, 9, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)]
    with pytest.raises(ConvcanonError, match=r"padding float32\[2, 2\], expected integers"):
        reference_engine(text, "m.mlir", "main", inputs)
