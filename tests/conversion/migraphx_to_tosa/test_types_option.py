"""`migraphx-to-tosa{types=...}`: `conformant` is the default because it is what IREE (and any
backend holding to TOSA 1.0's profiles) compiles, and `verify --engine iree` judges what a user
runs; `native` keeps tensors of the MIGraphX types, which IREE refuses."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from convcanon.cli import main, opt_main
from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.ops import ConvertOp
from convcanon.pipeline import parse_pipeline
from convcanon.xdsl_io import parse_file_text, print_file

from .test_conformant_codes import FOREIGN_TENSOR, lowered

# An fp8-FNUZ dequantize and an fp4 reshape-convert: one foreign type as argument, result and
# inside a layout change.
KERNEL = """\
func.func @main(%q: !migraphx.shaped<2x4xf8E4M3FNUZ, 4x1>, %s: !migraphx.shaped<2x4xf32, 4x1>, \
%f: !migraphx.shaped<2x3xf4E2M1FN, 1x2>) -> (!migraphx.shaped<2x4xf32, 4x1>, \
!migraphx.shaped<3x2xf4E2M1FN, 2x1>) {
  %0 = migraphx.dequantizelinear %q, %s : <2x4xf8E4M3FNUZ, 4x1>, <2x4xf32, 4x1> -> \
<2x4xf32, 4x1>
  %1 = migraphx.transpose %f {permutation = [1, 0]} : <2x3xf4E2M1FN, 1x2> -> <3x2xf4E2M1FN, 2x1>
  %2 = migraphx.convert %1 : <3x2xf4E2M1FN, 2x1> to <3x2xf32, 2x1>
  %3 = migraphx.mul %2, %2 : <3x2xf32, 2x1>, <3x2xf32, 2x1> -> <3x2xf32, 2x1>
  %4 = migraphx.convert %3 : <3x2xf32, 2x1> to <3x2xf4E2M1FN, 2x1>
  return %0, %4 : !migraphx.shaped<2x4xf32, 4x1>, !migraphx.shaped<3x2xf4E2M1FN, 2x1>
}
"""


def _lower(options: dict[str, object] | None) -> str:
    module = parse_file_text(KERNEL, "<k>")
    migraphx_to_tosa(module, options)  # type: ignore[arg-type]
    return print_file(module)


def test_conformant_is_the_default() -> None:
    ((_, options),) = parse_pipeline("migraphx-to-tosa")
    assert options == {"types": "conformant", "strict-strides": False}
    assert _lower(None) == _lower({"types": "conformant"}) == lowered(KERNEL)


def test_native_keeps_the_migraphx_types_and_iree_refuses_them() -> None:
    from convcanon.verify.iree_tosa import compile_tosa_text

    native = _lower({"types": "native"})
    assert FOREIGN_TENSOR.search(native)
    with pytest.raises(ConvcanonError) as info:
        compile_tosa_text(native)
    assert "profile" in info.value.message
    assert "default types=conformant lowers such types to storage integers" in (info.value.message)


def test_an_unknown_types_value_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "k.mlir"
    source.write_text(KERNEL)
    assert opt_main([str(source), "-p", "migraphx-to-tosa{types=exotic}"]) == 2
    err = capsys.readouterr().err
    assert "option 'types' must be one of conformant, native; got 'exotic'" in err


def test_verify_on_iree_judges_the_conformant_lowering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The migraphx module runs lowered by default (conformant: IREE compiles it) and its
    conformant TOSA takes the migraphx module's inputs (the engine packs the fp4 buffers)."""
    source, tosa = tmp_path / "k.mlir", tmp_path / "k.tosa.mlir"
    source.write_text(KERNEL)
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(tosa)]) == 0
    assert not FOREIGN_TENSOR.search(tosa.read_text())
    for after in (source, tosa):
        args = ["verify", str(source), str(after), "--engine", "iree", "--trials", "2"]
        assert main(args) == 0, capsys.readouterr().err
        assert "ok: 2 trial(s) on engine iree" in capsys.readouterr().out


def test_a_conformant_module_runs_on_iree_from_values() -> None:
    """`run_tosa_text` takes the migraphx values (ml_dtypes) and gives them back: fp4 squares
    saturate at 6."""
    from convcanon.verify.iree_tosa import run_tosa_text

    q = np.arange(8, dtype=np.uint8).view(ml_dtypes.float8_e4m3fnuz)
    s = np.full(8, 2.0, np.float32)
    f = np.array([0.5, -1.5, 2.0, -3.0, 6.0, -0.0], ml_dtypes.float4_e2m1fn)
    dequantized, squares = run_tosa_text(lowered(KERNEL), [q, s, f])
    np.testing.assert_array_equal(dequantized, q.astype(np.float32) * 2)
    assert squares.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    # f is stored column-major (strides 1x2): its transpose [3, 2] row-major is f itself
    np.testing.assert_array_equal(squares.astype(np.float32), [0.0, 2.0, 4.0, 6.0, 6.0, 0.0])


def test_a_foreign_tensor_left_in_conformant_tosa_is_a_located_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If a lowering emitted a tensor of a foreign type (here convert, wrongly taken for data
    movement, casts to f8E4M3FNUZ), the pass stops at the source function instead of printing
    TOSA that IREE refuses."""
    from convcanon.conversion.migraphx_to_tosa import function_lowering

    monkeypatch.setattr(
        function_lowering, "STORAGE_OPS", function_lowering.STORAGE_OPS | {ConvertOp}
    )
    module = parse_file_text(KERNEL, "k.mlir")
    with pytest.raises(ConvcanonError) as info:
        migraphx_to_tosa(module, {})
    assert "in its types=conformant TOSA" in info.value.message and "a convcanon bug" in (
        info.value.message
    )
    assert info.value.render().startswith("k.mlir:1:1: error: ")
