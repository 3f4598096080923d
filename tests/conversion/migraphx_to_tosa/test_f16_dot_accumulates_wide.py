"""An f16/bf16 dot lowers to a tosa.matmul with an f32 accumulator, rounded once: with an f16
accumulator a long contraction loses about K/2 ulps, and IREE's result fails `verify`."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.cli import main, opt_main


def _dot(et: str, k: int) -> str:
    a, b, r = (
        f"<2x16x{k}x{et}, {16 * k}x{k}x1>",
        f"<2x{k}x8x{et}, {8 * k}x8x1>",
        f"<2x16x8x{et}, 128x8x1>",
    )
    return (
        f"func.func @main(%arg0: !migraphx.shaped{a}, %arg1: !migraphx.shaped{b}) -> "
        f"!migraphx.shaped{r} {{\n"
        f"  %0 = migraphx.dot %arg0, %arg1 : {a}, {b} -> {r}\n"
        f"  return %0 : !migraphx.shaped{r}\n}}\n"
    )


@pytest.mark.parametrize("et", ["f16", "bf16"])
def test_half_precision_dot_accumulates_in_f32_and_matches_on_iree(tmp_path: Path, et: str):
    source, lowered = tmp_path / "dot.mlir", tmp_path / "dot.tosa.mlir"
    source.write_text(_dot(et, 4096))
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    matmul = next(line for line in lowered.read_text().splitlines() if "tosa.matmul" in line)
    assert matmul.endswith("-> tensor<2x16x8xf32>")
    assert main(["verify", str(source), str(lowered), "--engine", "iree", "--trials", "2"]) == 0
