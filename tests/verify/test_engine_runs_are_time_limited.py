"""`verify --engine xla|iree` on a module that never finishes (a `while` loop whose condition
never fails): neither engine bounds it, so each run goes to a child process that is stopped at
`--timeout`, and verify ends in a one-line diagnostic, exit 1, instead of running forever. The
reference bounds the loop itself (`--max-loop-iterations`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _processes import children_outlive_a_stop  # pyright: ignore[reportMissingImports]

from convcanon.diagnostics import ConvcanonError

CLI = [sys.executable, "-c", "import sys; from convcanon.cli import main; sys.exit(main())"]
FOREVER = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.while(%it = %x) : tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %n = stablehlo.add %it, %it : tensor<4xf32>
      stablehlo.return %n : tensor<4xf32>
    }
  return %0 : tensor<4xf32>
}
"""
COUNTED = FOREVER.replace(
    "%t = stablehlo.constant dense<true> : tensor<i1>",
    "%z = stablehlo.constant dense<1.0e6> : tensor<4xf32>\n"
    "      %c = stablehlo.compare LT, %it, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>\n"
    "      %f = stablehlo.constant dense<true> : tensor<i1>\n"
    "      %t = stablehlo.reduce(%c init: %f) applies stablehlo.and across dimensions = [0]"
    " : (tensor<4xi1>, tensor<i1>) -> tensor<i1>",
)
NAMES = {"xla": "XLA", "iree": "IREE"}


def _verify(tmp_path: Path, text: str, *options: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    argv = ["verify", str(module), str(module), "--trials", "1", *options]
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("engine", ["xla", "iree"])
def test_a_run_that_never_ends_is_stopped_at_the_time_limit(tmp_path: Path, engine: str):
    pytest.importorskip("jax" if engine == "xla" else "iree.runtime")
    start = time.monotonic()
    result = _verify(tmp_path, FOREVER, "--engine", engine, "--timeout", "3")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'm.mlir'}: error: {NAMES[engine]} did not finish within 3 s and was"
        " stopped (a `while` loop whose condition never fails runs forever; `--timeout` sets"
        " the limit)"
    ]
    assert time.monotonic() - start < 120  # stopped, not run to the test's own timeout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]


@pytest.mark.parametrize("engine", ["xla", "iree"])
def test_a_loop_that_ends_runs_on_the_engine(tmp_path: Path, engine: str):
    pytest.importorskip("jax" if engine == "xla" else "iree.runtime")
    result = _verify(tmp_path, COUNTED, "--engine", engine)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok: 1 trial(s) on engine {engine}")


def test_the_reference_bounds_the_loop_itself(tmp_path: Path):
    result = _verify(tmp_path, FOREVER)
    assert result.returncode == 1
    assert "stablehlo.while ran 100000 iterations and its condition still holds" in result.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e308"])
def test_a_time_limit_that_bounds_nothing_is_a_usage_error(tmp_path: Path, value: str):
    result = _verify(tmp_path, FOREVER, "--engine", "xla", f"--timeout={value}")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: --timeout must be a number of seconds > 0 and <= 1e+06, not {float(value):g}"
    ]


def test_after_a_stopped_run_the_next_module_runs_in_a_new_child():
    pytest.importorskip("jax")
    from convcanon.verify.engine_process import EngineProcess

    process = EngineProcess()
    process.time_limit = 3
    x = np.arange(4, dtype=np.float32)
    try:
        with pytest.raises(ConvcanonError, match="XLA did not finish within 3 s") as caught:
            process.run("xla", (FOREVER, "forever.mlir", [x]), "forever.mlir")
        assert str(caught.value.loc) == "forever.mlir"
        process.time_limit = 120
        (counted,) = process.run("xla", (COUNTED, "counted.mlir", [x + 1]), "counted.mlir")
        np.testing.assert_array_equal(counted, (x + 1) * 2**18)  # until one reaches 1e6
    finally:
        process.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_verify_leaves_no_engine_running(tmp_path: Path):
    pytest.importorskip("jax")
    module = tmp_path / "m.mlir"
    module.write_text(FOREVER)
    argv = ["verify", str(module), str(module), "--engine", "xla", "--timeout", "600"]
    # stopped well inside XLA's endless loop
    left = children_outlive_a_stop([*CLI, *argv], "engine_process", settle=2.0)
    assert left == [], "the engine outlived verify"


def test_ctrl_c_stops_verify_inside_an_engine_run_at_once(tmp_path: Path):
    pytest.importorskip("jax")
    module = tmp_path / "m.mlir"
    module.write_text(FOREVER)
    # SIGINT raises KeyboardInterrupt even where this test's runner started with it ignored
    call = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from convcanon.cli import main; sys.exit(main())"
    )
    argv = [sys.executable, "-c", call, "verify", str(module), str(module), "--engine", "xla"]
    # XLA writes the module it compiled to its dump directory, then runs it: the file that holds
    # the loop says the engine child is in the endless run (and verify waits on it)
    dump = tmp_path / "xla_dump"
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump}"}
    verify = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 300  # a bound on the wait, not what the test measures
        while not any("while" in f.read_text() for f in dump.glob("*after_optimizations.txt")):
            assert verify.poll() is None, verify.communicate()
            assert time.monotonic() < deadline, "XLA never compiled the loop"
            time.sleep(0.1)
        assert verify.poll() is None, verify.communicate()
        verify.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, stderr = verify.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        verify.kill()
        verify.wait()
    assert verify.returncode == 130, stderr
    assert stderr.strip() == "error: interrupted"
    assert took < 5, f"verify took {took:.1f} s to stop: it waited for the busy engine child"
