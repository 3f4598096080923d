"""A file name is bytes: one that is not UTF-8 (Python holds it as lone surrogates), or that holds
a quote or a backslash, is printed in locations as mlir-opt prints it and written back as the
same bytes, never a traceback; a function name that is not text is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
IDENTITY = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
CONV = (
    "func.func @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
    " window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}"
    " {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
    " : (tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32>\n"
    "  return %0 : tensor<1x4x4x2xf32>\n"
    "}\n"
)
NAMES = [b"bad\xffname.mlir", "mod\u00e8le.mlir".encode(), b'a"b\\c.mlir', b"tab\there.mlir"]
# stdout and stdin strict, as under a locale that is not C.UTF-8
STRICT = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}


def _run(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(args, capture_output=True, cwd=cwd, env=STRICT, timeout=120)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


@pytest.mark.parametrize("name", NAMES, ids=["not-utf8", "utf8", "quote-backslash", "tab"])
def test_locations_spell_the_file_name_as_mlir_opt_does(name: bytes, tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(name)).write_text(IDENTITY)
    ours = _run(BIN / "convcanon-opt", name, "-p", "", "--mlir-print-debuginfo", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    theirs = _run(BIN / "iree-opt", name, "--mlir-print-debuginfo", cwd=tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    locs = [line for line in ours.stdout.splitlines() if line.startswith(b"#loc")]
    assert locs and locs == [line for line in theirs.stdout.splitlines() if b"#loc" in line[:5]]
    assert all(32 <= b < 127 for line in locs for b in line)  # every byte escaped as MLIR does
    # written to a file the same, and it parses back
    out = _run(BIN / "convcanon-opt", name, "--mlir-print-debuginfo", "-o", "o.mlir", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "o.mlir").read_bytes() == ours.stdout
    again = _run(BIN / "convcanon-opt", "o.mlir", "--mlir-print-debuginfo", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == ours.stdout


def test_explain_on_a_strict_stdout_prints_the_file_name_as_its_bytes(tmp_path: Path) -> None:
    name = b"c\xffonv.mlir"
    (tmp_path / os.fsdecode(name)).write_text(CONV)
    done = _run(BIN / "convcanon", "explain", name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(name + b":2:8 ")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (b"\xff", b"is not UTF-8 text"),
        (b"", b"is empty"),
    ],
)
def test_import_migraphx_refuses_a_function_name_that_is_not_text(
    name: bytes, message: bytes, tmp_path: Path
) -> None:
    program = tmp_path / "p.txt"
    program.write_text(
        "x = @param:x -> float_type, {2}, {1}\n"
        "@1 = exp(x) -> float_type, {2}, {1}\n"
        "@2 = @return(@1)\n"
    )
    done = _run(BIN / "convcanon", "import-migraphx", program, "--name", name, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(b"error: import-migraphx: the function name (--name) ")
    assert message in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.txt"]
