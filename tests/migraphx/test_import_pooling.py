"""A MIGraphX program of a small CNN, NHWC throughout (conv, max pool after the stem, conv,
global average pool, dot), imports, runs with `convcanon run` as XLA computes it, and lowers to
TOSA without a transpose; older programs (mode as a number, fewer fields) and rocMLIR's
`migraphx.pooling` syntax read too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file
from convcanon.xdsl_io import parse_file_text
from convcanon.xdsl_io import print_file as print_module

BIN = Path(sys.executable).parent
FIXTURE = Path(__file__).parent / "fixtures" / "small_cnn_pooling.txt"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)


def _nhwc(x: np.ndarray) -> np.ndarray:
    """The flat buffer of an [N, C, H, W] value stored channels-last."""
    return np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(-1)


def _expected(x: np.ndarray, w0: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    def conv(a: jax.Array, w: np.ndarray, stride: int) -> jax.Array:
        return jax.lax.conv_general_dilated(
            a, jnp.asarray(w), (stride, stride), [(1, 1), (1, 1)],
            precision=jax.lax.Precision.HIGHEST,
        )  # fmt: skip

    y = jax.nn.relu(conv(jnp.asarray(x), w0, 2))
    y = jax.lax.reduce_window(
        y, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0), (0, 0), (1, 1), (1, 1)]
    )
    y = jax.nn.relu(conv(y, w1, 1))
    return np.asarray(jnp.mean(y, axis=(2, 3)) @ jnp.asarray(w2))


def test_a_cnn_program_with_pooling_imports_runs_and_lowers(tmp_path: Path) -> None:
    imported, lowered = tmp_path / "cnn.mlir", tmp_path / "cnn.tosa.mlir"
    done = _run(str(BIN / "convcanon"), "import-migraphx", str(FIXTURE), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    text = imported.read_text()
    assert 'length = [3, 3], mode = "max", padding = [1, 1, 1, 1], stride = [2, 2]' in text
    assert "<1x8x8x8xf32, 512x1x64x8> -> <1x8x4x4xf32, 128x1x32x8>" in text

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    w0 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    w1 = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    w2 = rng.standard_normal((16, 10)).astype(np.float32)
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, arg0=_nhwc(x), arg1=_nhwc(w0), arg2=_nhwc(w1), arg3=w2.reshape(-1))
    ran = _run(str(BIN / "convcanon"), "run", str(imported), "--inputs", str(inputs), "-o",
               str(outputs))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    with np.load(outputs) as data:
        got = data["result0"]
    np.testing.assert_allclose(got, _expected(x, w0, w1, w2).reshape(-1), rtol=1e-4, atol=1e-4)

    opt = _run(str(BIN / "convcanon-opt"), str(imported), "-p", "migraphx-to-tosa", "-o",
               str(lowered))  # fmt: skip
    assert opt.returncode == 0, opt.stderr
    tosa_text = lowered.read_text()
    assert "tosa.max_pool2d" in tosa_text and "tosa.avg_pool2d" in tosa_text
    assert "tosa.transpose" not in tosa_text  # pooled where NHWC stores the values


OLD_PROGRAM = """x = @param:x -> float_type, {1, 2, 5, 5}, {50, 25, 5, 1}
@1 = pooling[mode=1,padding={0, 0},stride={2, 2},lengths={2, 2},ceil_mode=1](x) -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}
@2 = pooling[mode=0,padding={1, 1},stride={1, 1},lengths={3, 3}](@1) -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}
@3 = @return(@2)
"""  # noqa: E501


def test_an_older_program_prints_the_mode_as_its_number() -> None:
    text = print_file(import_program(OLD_PROGRAM, "old.txt"))
    assert '{ceil_mode = 1 : i64, length = [2, 2], mode = "max"' in text
    assert '{length = [3, 3], mode = "average", padding = [1, 1], stride = [1, 1]}' in text


ROCMLIR_FORM = """func.func @main(%x: !migraphx.shaped<1x4x9x9xf32, 324x1x36x4>) -> !migraphx.shaped<1x4x4x4xf32, 64x1x16x4> {
  %0 = migraphx.pooling %x {ceil_mode = 0 : i64, length = [3, 3], mode = "max", padding = [0, 0, 0, 0], stride = [2, 2]} : <1x4x9x9xf32, 324x1x36x4> -> <1x4x4x4xf32, 64x1x16x4>
  return %0 : !migraphx.shaped<1x4x4x4xf32, 64x1x16x4>
}
"""  # noqa: E501


def test_rocmlir_pooling_syntax_parses_and_prints_back() -> None:
    module = parse_file_text(ROCMLIR_FORM, "r.mlir")
    printed = print_module(module)
    assert ROCMLIR_FORM.splitlines()[1].strip() in printed
