"""Valid inputs of every kind that the fuzz tests damage, built once per session from real files.

The MIGraphX program (tests/fuzz/fixtures/program.txt: grouped padded strided NHWC conv, splat
literal, add, relu, transpose, slice, reduce) is imported to migraphx MLIR and lowered to TOSA by
our own tools; MHLO comes from JAX's exported CNN through jaxlib's legalization pass.
"""

from __future__ import annotations

import io
import os
from functools import cache
from pathlib import Path

import numpy as np
from _shared import SHARED  # pyright: ignore[reportMissingImports]

from .conftest import REPO

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STABLEHLO = REPO / "examples" / "small_cnn.stablehlo.mlir"
CORPUS = (
    SHARED
    / "corpus"
    / "stablehlo"
    / "conv_general_dilated_float32_2_3_9_10_float32_3_3_4_5_t2.mlir"
)
PROGRAM = FIXTURES / "program.txt"


def examples(default: int) -> int:
    """max_examples per reader: modest in CI, large for a campaign (CONVCANON_FUZZ_EXAMPLES)."""
    return int(os.environ.get("CONVCANON_FUZZ_EXAMPLES", default))


@cache
def mhlo_text() -> str:
    from convcanon.hlo import legalize
    from convcanon.hlo.context import parse_module, print_module

    module = parse_module(STABLEHLO.read_text(), str(STABLEHLO))
    legalize.to_mhlo(module)
    text = print_module(module)
    assert "mhlo.convolution" in text
    return text


@cache
def migraphx_text() -> str:
    from convcanon.migraphx.importer import import_program
    from convcanon.migraphx.io import print_file

    return print_file(import_program(PROGRAM.read_text(), str(PROGRAM)))


@cache
def tosa_text() -> str:
    from convcanon.driver import transform_text

    text = transform_text(migraphx_text(), "program.mlir", "migraphx-to-tosa")
    assert "tosa.conv2d" in text or "tosa.depthwise_conv2d" in text
    return text


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # pyright: ignore[reportArgumentType]
    return buffer.getvalue()


@cache
def migraphx_inputs() -> bytes:
    """Flat buffers for the program's two parameters (arg0: 1x4x6x6, arg1: 6x2x3x3)."""
    rng = np.random.default_rng(0)
    return npz_bytes(
        {
            "arg0": rng.standard_normal(144).astype(np.float32),
            "arg1": rng.standard_normal(108).astype(np.float32),
        }
    )


@cache
def cnn_inputs() -> bytes:
    """Every argument of the exported CNN, from its signature."""
    import re

    head = STABLEHLO.read_text().split("->", 1)[0]
    shapes = re.findall(r"%arg(\d+): tensor<([\dx]+)xf32>", head)
    rng = np.random.default_rng(0)
    return npz_bytes(
        {
            f"arg{i}": rng.standard_normal([int(d) for d in dims.split("x")]).astype(np.float32)
            for i, dims in shapes
        }
    )
