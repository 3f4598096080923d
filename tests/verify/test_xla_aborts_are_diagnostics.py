"""`verify --engine xla` on modules that make XLA abort the process: a one-line diagnostic, exit 1,
never a SIGABRT. A result over the memory limit is refused at its op before any engine runs (XLA
aborts on a shape whose size overflows int64); what is left for XLA to abort on (a `pad` whose
padding cancels past int64) ends XLA's child process, not verify, and the next module runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]

from convcanon.diagnostics import ConvcanonError

pytest.importorskip("jax")

CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
BIG = 4611686018427387904  # 2**62 elements: 2**64 bytes of f32, over int64
OVERFLOWING_RESULT = f"""func.func @main(%x: tensor<f32>) -> tensor<{BIG}xf32> {{
  %0 = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<{BIG}xf32>
  return %0 : tensor<{BIG}xf32>
}}
"""
CANCELLING_PAD = f"""func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.pad %x, %c, low = [{BIG}], high = [-{BIG}], interior = [0]
    : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}}
"""
NEGATE = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _verify(tmp_path: Path, text: str, engine: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    argv = ["verify", str(module), str(module), "--engine", engine, "--trials", "1"]
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=tmp_path)


@pytest.mark.parametrize("engine", ["xla", "iree", "reference"])
def test_a_result_over_the_memory_limit_is_refused_at_its_op_on_every_engine(
    tmp_path: Path, engine: str
):
    result = _verify(tmp_path, OVERFLOWING_RESULT, engine)
    assert result.returncode == 1, result.stderr
    assert diagnostic_lines(result.stderr)[:-1] == [
        f"{tmp_path / 'm.mlir'}:2:8: error: stablehlo.broadcast_in_dim result f32 tensor of shape "
        f"[{BIG}] needs {BIG * 4} bytes, over the memory limit of 4294967296"
    ]


def test_an_xla_abort_is_a_one_line_diagnostic(tmp_path: Path):
    result = _verify(tmp_path, CANCELLING_PAD, "xla")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{tmp_path / 'm.mlir'}: error: XLA was killed by SIGABRT: ")
    assert "overflow in static extent product" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]


def test_the_reference_runs_what_xla_aborts_on(tmp_path: Path):
    result = _verify(tmp_path, CANCELLING_PAD, "reference")
    # the pad moves every input element out: its zeros respond to no input, no verdict
    assert result.returncode == 3, result.stderr
    assert result.stdout.startswith("inconclusive: 1 trial(s) on engine reference")


def test_after_an_abort_the_next_module_runs_in_a_new_child():
    from convcanon.verify.engine_process import EngineProcess

    process = EngineProcess()
    x = np.arange(4, dtype=np.float32)

    def run(text: str, filename: str, *inputs: np.ndarray) -> list[np.ndarray]:
        return process.run("xla", (text, filename, list(inputs)), filename)

    try:
        with pytest.raises(ConvcanonError, match="XLA was killed by SIGABRT") as caught:
            run(CANCELLING_PAD, "pad.mlir", x)
        assert str(caught.value.loc) == "pad.mlir"
        (negated,) = run(NEGATE, "negate.mlir", x)
        np.testing.assert_array_equal(negated, -x)
        with pytest.raises(ConvcanonError, match="XLA rejected the module") as rejected:
            run(NEGATE, "negate.mlir", x, x)  # one argument too many
        assert str(rejected.value.loc) == "negate.mlir"
        (again,) = run(NEGATE, "negate.mlir", -x)  # the child outlived the error
        np.testing.assert_array_equal(again, x)
    finally:
        process.close()
