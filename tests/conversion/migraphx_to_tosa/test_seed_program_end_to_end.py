"""Seed 003's MIGraphX program, printed by MIGraphX, imported and lowered through the CLI: the NHWC
convolution chain becomes TOSA with no transpose, and IREE computes what the reference does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .harness import check_with_iree

BIN = Path(sys.executable).parent

SEED_PROGRAM = """\
mlir_main:pointwise0:y1.0 = @param:y1.0 -> float_type, {2, 16, 3, 3}, {144, 1, 48, 16}, target_id=0
mlir_main:pointwise0:y0.0 = @param:y0.0 -> float_type, {1, 16, 4, 4}, {256, 1, 64, 16}, target_id=0
mlir_main:pointwise0:@4 = convolution[padding={0, 0, 0, 0},stride={1, 1},dilation={1, 1},group=1,\
padding_mode=0](mlir_main:pointwise0:y0.0,mlir_main:pointwise0:y1.0) -> float_type, {1, 2, 2, 2}, \
{8, 1, 4, 2}, target_id=0
mlir_main:pointwise0:@5 = exp(mlir_main:pointwise0:@4) -> float_type, {1, 2, 2, 2}, {8, 1, 4, 2}, \
target_id=0
mlir_main:pointwise0:@6 = @return(mlir_main:pointwise0:@5), target_id=0
"""


def run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_seed_program_imports_and_lowers_without_transposes(tmp_path: Path) -> None:
    program = tmp_path / "seed.txt"
    program.write_text(SEED_PROGRAM)
    imported = tmp_path / "seed.mlir"
    run(str(BIN / "convcanon"), "import-migraphx", str(program), "-o", str(imported))
    lowered = run(str(BIN / "convcanon-opt"), str(imported), "-p", "migraphx-to-tosa")
    assert '"tosa.transpose"' not in lowered
    assert lowered.count('"tosa.conv2d"') == 1
    assert check_with_iree(imported.read_text()) + "\n" == lowered
