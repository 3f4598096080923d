"""f64 contractions: a dot lowers to a tosa.matmul that accumulates in its f64 result, exact as
`verify` judges f64; a conv is refused, located, since TOSA's convolutions name an accumulator
of at most 32 bits (a lowering that rounded would fail `verify` against its own input)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main, opt_main

DOT = (
    "func.func @main(%a: !migraphx.shaped<8x4096xf64, 4096x1>,"
    " %b: !migraphx.shaped<4096x4xf64, 4x1>) -> !migraphx.shaped<8x4xf64, 4x1> {\n"
    "  %0 = migraphx.dot %a, %b : <8x4096xf64, 4096x1>, <4096x4xf64, 4x1> -> <8x4xf64, 4x1>\n"
    "  return %0 : !migraphx.shaped<8x4xf64, 4x1>\n}\n"
)


def _conv(op: str, rank: int) -> str:
    """A 1-D or 3-D f64 conv (`rank` spatial dims) of two 2-wide kernels over 3-wide input."""
    x = "x".join(["1", "1", *["3"] * rank])
    w = "x".join(["1", "1", *["2"] * rank])
    out = "x".join(["1", "1", *(["2"] if op == "convolution" else ["6"]) * rank])

    def shaped(lens: str) -> str:
        dims = [int(n) for n in lens.split("x")]
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        return f"<{lens}xf64, {'x'.join(map(str, strides))}>"

    ones = ", ".join(["1"] * rank)
    stride = ", ".join(["1" if op == "convolution" else "2"] * rank)
    attrs = (
        f"{{dilation = [{ones}], group = 1 : i64, padding = [{', '.join(['0'] * rank)}],"
        f" padding_mode = 0 : i64, stride = [{stride}]}}"
    )
    return (
        f"func.func @main(%x: !migraphx.shaped{shaped(x)}, %w: !migraphx.shaped{shaped(w)})"
        f" -> !migraphx.shaped{shaped(out)} {{\n"
        f"  %0 = migraphx.{op} %x, %w {attrs} : {shaped(x)}, {shaped(w)} -> {shaped(out)}\n"
        f"  return %0 : !migraphx.shaped{shaped(out)}\n}}\n"
    )


def test_f64_dot_accumulates_in_f64_and_verifies(tmp_path: Path) -> None:
    source, lowered = tmp_path / "dot.mlir", tmp_path / "dot.tosa.mlir"
    source.write_text(DOT)
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    matmul = next(line for line in lowered.read_text().splitlines() if "tosa.matmul" in line)
    assert matmul.endswith("-> tensor<1x8x4xf64>")
    # K = 4096: an f32 accumulator is ~1e-5 off, far outside what verify allows f64
    assert main(["verify", str(source), str(lowered), "--trials", "2"]) == 0


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("op", ["convolution", "backwards_data_convolution"])
def test_f64_conv_is_refused_at_its_line(
    tmp_path: Path, op: str, rank: int, capsys: pytest.CaptureFixture[str]
) -> None:
    source, lowered = tmp_path / "conv.mlir", tmp_path / "conv.tosa.mlir"
    source.write_text(_conv(op, rank))
    assert main(["verify", str(source), str(source), "--trials", "1"]) == 0  # a valid program
    capsys.readouterr()
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 1
    assert without_source_lines(capsys.readouterr().err) == (
        f"{source}:2:3: error: 'migraphx.{op}' on f64 has no exact TOSA lowering:"
        " TOSA's convolutions accumulate in at most f32\n"
    )
    assert not lowered.exists()
