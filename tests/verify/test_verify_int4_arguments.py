"""si4/ui4 function arguments (rocMLIR's int4 converts): `verify` draws them as int4/uint4
buffers inside their range and judges them as integers, the reference and our TOSA interpreter
agree, the wrong signedness is a mismatch; IREE refuses i4 casts (outside every TOSA profile it
compiles) and `verify --engine iree` says that it is IREE's limit. `run --inputs` takes an
integer array for a 4-bit argument (npz has no 4-bit dtype) and refuses values out of range."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from convcanon.cli import main, opt_main
from convcanon.verify.inputs import random_array
from convcanon.verify.judge import is_float, is_narrow_int


def _convert(source: str, target: str) -> str:
    return (
        f"func.func @main(%arg0: !migraphx.shaped<16x{source}, 1>) -> "
        f"!migraphx.shaped<16x{target}, 1> {{\n"
        f"  %0 = migraphx.convert %arg0 : <16x{source}, 1> to <16x{target}, 1>\n"
        f"  return %0 : !migraphx.shaped<16x{target}, 1>\n}}\n"
    )


def _dequantize(source: str) -> str:
    t = f"<16x{source}, 1>"
    return (
        f"func.func @main(%arg0: !migraphx.shaped{t}, %arg1: !migraphx.shaped<16xf32, 1>, "
        "%arg2: !migraphx.shaped<16xsi8, 1>) -> !migraphx.shaped<16xf32, 1> {\n"
        f"  %0 = migraphx.dequantizelinear %arg0, %arg1, %arg2 : {t}, <16xf32, 1>, <16xsi8, 1> "
        "-> <16xf32, 1>\n  return %0 : !migraphx.shaped<16xf32, 1>\n}\n"
    )


PROGRAMS = {
    "si4 to si8": _convert("si4", "si8"),
    "ui4 to si32": _convert("ui4", "si32"),
    "ui4 to f32": _convert("ui4", "f32"),
    "si4 to f16": _convert("si4", "f16"),
    "dequantize si4": _dequantize("si4"),
    "dequantize ui4": _dequantize("ui4"),
}


def _lowered(
    tmp_path: Path, name: str, text: str, pipeline: str = "migraphx-to-tosa"
) -> tuple[str, str]:
    source, lowered = tmp_path / f"{name}.mlir", tmp_path / f"{name}.tosa.mlir"
    source.write_text(text)
    assert opt_main([str(source), "-p", pipeline, "-o", str(lowered)]) == 0
    return str(source), str(lowered)


def test_random_4_bit_inputs_are_integers_in_range() -> None:
    rng = np.random.default_rng(0)
    for dtype, (low, high) in ((ml_dtypes.int4, (-8, 7)), (ml_dtypes.uint4, (0, 15))):
        dt = np.dtype(dtype)
        assert is_narrow_int(dt) and not is_float(dt)
        values = random_array(dt, (1000,), rng).astype(dt).astype(np.int64)
        assert low <= values.min() and values.max() <= high
        assert len(np.unique(values)) > 4
    assert is_float(np.dtype(ml_dtypes.float8_e4m3fn)) and is_float(np.dtype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_4_bit_argument_verifies_on_the_reference(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, lowered = _lowered(tmp_path, name.replace(" ", "_"), PROGRAMS[name])
    assert main(["verify", source, lowered, "--trials", "2"]) == 0, capsys.readouterr().err
    assert "ok: 2 trial(s)" in capsys.readouterr().out


def test_4_bit_signedness_is_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """si4 bits read as ui4 (-4 as 12): the unsigned lowering is a mismatch for the signed
    program (the buffers are the same int4 bits)."""
    signed, _ = _lowered(tmp_path, "signed", _convert("si4", "si32"))
    _, unsigned = _lowered(tmp_path, "unsigned", _convert("ui4", "si32"))
    assert main(["verify", signed, unsigned]) == 1
    assert "mismatch" in capsys.readouterr().err


def test_iree_refusing_i4_casts_says_it_is_an_iree_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the native form (types=native) the i4 cast stays, and IREE's refusal is named."""
    native = "migraphx-to-tosa{types=native}"
    source, lowered = _lowered(tmp_path, "si4", PROGRAMS["si4 to si8"], native)
    assert main(["verify", source, lowered, "--engine", "iree", "--trials", "1"]) == 1
    err = capsys.readouterr().err
    assert "IREE failed to compile" in err
    assert "an IREE limit: 4-bit integer casts are outside every TOSA profile" in err


def test_run_takes_4_bit_inputs_as_integer_arrays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, lowered = _lowered(tmp_path, "si4", PROGRAMS["si4 to si8"])
    values = np.arange(-8, 8, dtype=np.int8)
    np.savez(tmp_path / "in.npz", arg0=values)
    for module in (source, lowered):
        out = tmp_path / "out.npz"
        args = ["run", module, "--inputs", str(tmp_path / "in.npz"), "--output", str(out)]
        assert main(args) == 0
        np.testing.assert_array_equal(np.load(out)["result0"], values)
    np.savez(tmp_path / "bad.npz", arg0=values + 8)
    assert main(["run", source, "--inputs", str(tmp_path / "bad.npz")]) == 1
    assert "input arg0 holds 0..15, outside int4's -8..7" in capsys.readouterr().err
