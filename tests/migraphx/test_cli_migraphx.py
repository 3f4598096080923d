"""The installed commands handle migraphx files: convcanon-opt round-trips them with no pass and
`convcanon run` executes an imported program on flat buffers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from convcanon.migraphx import layout

BIN = Path(sys.executable).parent
FIXTURE = Path(__file__).parent / "fixtures" / "seed003_nhwc_conv.txt"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_import_then_opt_round_trips_and_run_executes(tmp_path: Path) -> None:
    imported = tmp_path / "seed.mlir"
    done = _run(str(BIN / "convcanon"), "import-migraphx", str(FIXTURE), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    text = imported.read_text()

    opt = _run(str(BIN / "convcanon-opt"), str(imported))
    assert opt.returncode == 0, opt.stderr
    assert opt.stdout == text + "\n"  # mlir-opt writes one more newline after the module
    assert (
        "<1x16x4x4xf32, 256x1x64x16>, <2x16x3x3xf32, 144x1x48x16> -> <1x2x2x2xf32, 8x1x4x2>" in text
    )

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32) * 0.1
    w = rng.standard_normal((2, 16, 3, 3)).astype(np.float32) * 0.1
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(
        inputs,
        arg0=layout.write_buffer(x, x.shape, [256, 1, 64, 16]),
        arg1=layout.write_buffer(w, w.shape, [144, 1, 48, 16]),
    )
    ran = _run(
        str(BIN / "convcanon"),
        "run",
        str(imported),
        "--inputs",
        str(inputs),
        "--output",
        str(outputs),
    )
    assert ran.returncode == 0, ran.stderr
    with np.load(outputs) as data:
        flat = data["result0"]
    # NHWC result: element (n, c, h, w) at 4h + 2w + c
    conv = np.einsum("chw,ochw->o", x[0, :, 0:3, 1:4], w)
    np.testing.assert_allclose(flat[2 * 1 + np.arange(2)], np.exp(conv), rtol=1e-4)


def test_opt_reports_a_bad_migraphx_file_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @f(%a: !migraphx.shaped<4x3xf32, 3x1>) -> !migraphx.shaped<3x4xf32, 4x1> {\n"
        "  %0 = migraphx.exp %a : <4x3xf32, 3x1> -> <3x4xf32, 4x1>\n"
        "  func.return %0 : !migraphx.shaped<3x4xf32, 4x1>\n}\n"
    )
    out = tmp_path / "out.mlir"
    done = _run(str(BIN / "convcanon-opt"), str(bad), "-o", str(out))
    assert done.returncode == 1
    assert done.stderr.startswith(f"{bad}:2:")
    assert "disagree with the computed lens [4, 3]" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
