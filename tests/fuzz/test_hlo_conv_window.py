"""`--input-hlo` refuses a convolution whose window size is not its kernel's spatial shape, as
XLA's shape check does (its converter would drop the window size)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]


WINDOW_HLO = (
    "HloModule m\n\nENTRY main {\n  x = f32[1,8,8,4] parameter(0)\n"
    "  w = f32[3,3,4,4] parameter(1)\n"
    "  ROOT c = f32[1,6,6,4] convolution(x, w), window={WINDOW}, dim_labels=b01f_01io->b01f\n}\n"
)


@pytest.mark.parametrize(
    ("window", "written"),
    [("size=5x5", "window={size=5x5}"), ("size=3x3x3", "window={size=3x3x3}"),
     ("size=3x1 stride=2x1", "window={size=3x1}")],
)  # fmt: skip
@pytest.mark.parametrize("which", ["proto", "text"])
def test_a_window_that_disagrees_with_the_kernel_is_refused_at_the_conv(
    tmp_path: Path, window: str, written: str, which: str
):
    text = WINDOW_HLO.replace("WINDOW", window)
    path = tmp_path / f"m.{which}"
    if which == "text":
        path.write_text(text)
        where = f"{path}:6:8: error: "
    else:
        from jax._src.lib import hlo  # pyright: ignore

        path.write_bytes(hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
        where = f"{path}: error: "
    result = subprocess.run([*OPT, "--input-hlo", str(path)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert without_source_lines(result.stderr) == (
        f"{where}convolution %c: {written} does not match its kernel's spatial dims (3x3); "
        "XLA's shape check refuses it\n"
    )


def test_a_window_that_matches_the_kernel_converts(tmp_path: Path):
    path = tmp_path / "m.hlo"
    path.write_text(WINDOW_HLO.replace("WINDOW", "size=3x3 stride=1x1"))
    result = subprocess.run([*OPT, "--input-hlo", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "stablehlo.convolution" in result.stdout
