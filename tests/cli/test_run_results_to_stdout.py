"""`convcanon run -o -` writes the results' npz to stdout alone: the status lines (`main: ok ...`)
go to stderr, where before they came first on stdout and the npz read there was no zip. And
`run - --inputs -` is a usage error (stdin is read once), not an npz with "no zip header"."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_support import MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]

ENTRY = "import sys; from convcanon.cli import main; sys.exit(main())"
HLO = """func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.abs %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def _run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "run", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
    )


@pytest.mark.parametrize("stdout", ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
@pytest.mark.parametrize(
    ("text", "split", "length"),
    [(HLO, False, 3), (HLO + "// -----\n" + HLO, True, 3), (MIGRAPHX_EXP, False, 2)],
    ids=["hlo", "hlo split", "migraphx"],
)
def test_the_npz_on_stdout_is_the_one_a_file_gets(
    text: str, split: bool, length: int, stdout: str, tmp_path: Path
) -> None:
    """Also through a name of stdout's descriptor: the status lines went first into it."""
    module = tmp_path / "m.mlir"
    module.write_text(text)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.linspace(-1.0, 2.0, length, dtype=np.float32))
    common = [str(module), "--inputs", str(inputs), *(["--split-input-file"] if split else [])]
    to_file = _run([*common, "-o", str(tmp_path / "out.npz")])
    to_stdout = _run([*common, "-o", stdout])
    assert to_file.returncode == to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == (tmp_path / "out.npz").read_bytes()
    assert to_stdout.stderr == to_file.stdout  # the status lines, on stderr now
    with zipfile.ZipFile(io.BytesIO(to_stdout.stdout)) as archive:
        assert archive.namelist()


def test_file_and_inputs_both_stdin_is_a_usage_error(cc: Runner) -> None:
    result = cc("run", "-", "--inputs", "-")
    assert result.code == 2
    assert result.err == "error: FILE and --inputs cannot both be stdin (-): stdin is read once\n"
