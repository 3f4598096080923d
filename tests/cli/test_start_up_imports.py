"""convcanon-opt imports only what its job needs: a guard on start-up cost that is not a timing.

Each module named here once cost every run milliseconds (the generated op classes ~20,
`dataclasses` ~5, `shutil` ~3) while a StableHLO parse, pass and print needs none of them.
What the bindings themselves import is paid, as for any user of jaxlib (no module stands in
for another in `sys.modules`): numpy (`jaxlib.mlir.ir` and the mhlo/chlo/stablehlo modules
import it), jaxlib's `__init__` (pathlib, subprocess, datetime), `logging` and threading
(jaxlib's site initializer), inspect (numpy); bench/RESULTS_import.md says what they cost.
The modules are read from `sys.modules` as the console script's own entry ends the process (at
its `os._exit`), so the check sees the real run.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from cli_support import CNN  # pyright: ignore[reportMissingImports]

# What the HLO job never needs, and what importing it pulls in.
UNNEEDED = {
    "ml_dtypes": "numpy's extra float types",
    "jax": "JAX itself",
    "xdsl": "the migraphx/TOSA half's IR framework",
    "jaxlib.mlir.dialects.stablehlo": "the generated op classes",
    "jaxlib.mlir.dialects.func": "the generated op classes",
    "jaxlib.mlir.dialects.builtin": "the generated op classes",
    "shutil": "argparse's terminal width (it loads bz2 and lzma)",
    "importlib.metadata": "the installed version, read only for --version",
    "convcanon.hlo.resources": "the reader of dense_resource sections, which these files lack",
    "dataclasses": "a dataclass's generated methods (inspect, ast, dis)",
}
# The console script's body, with the loaded modules written to stderr as the process ends.
ENTRY = """
import os, sys
exit_now = os._exit
def report_and_exit(code):
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    sys.stderr.write("\\nloaded: " + " ".join(loaded) + "\\n")
    sys.stderr.flush()
    exit_now(code)
os._exit = report_and_exit
sys.argv[0] = "convcanon-opt"
from convcanon.cli import opt_main
try:
    opt_main()  # ends in os._exit
except SystemExit as stop:  # --version and --help exit through argparse
    report_and_exit(stop.code if isinstance(stop.code, int) else 1)
"""


def imported_by(*args: str) -> set[str]:
    """Every module loaded when a convcanon-opt run ends."""
    proc = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reports = re.findall(r"^loaded: (.*)$", proc.stderr, re.M)
    assert len(reports) == 1, proc.stderr[-2000:]
    return set(reports[0].split())


@pytest.mark.parametrize(
    "pipeline", ["", "stablehlo-canonicalize-conv{gate=general}"], ids=["print", "conv-pass"]
)
def test_an_hlo_job_imports_only_the_bindings_and_its_passes(pipeline: str):
    imported = imported_by("-p", pipeline, str(CNN), "-o", "/dev/null")
    assert "jaxlib.mlir._mlir_libs._mlir" in imported  # the report is read: the bindings loaded
    assert ("convcanon.hlo.passes" in imported) == bool(pipeline)
    unneeded = {name: why for name, why in UNNEEDED.items() if name in imported}
    assert not unneeded


def test_version_imports_no_ir_framework():
    imported = imported_by("--version")
    assert "importlib.metadata" in imported
    assert not {m for m in imported if m.partition(".")[0] in ("jaxlib", "xdsl", "numpy")}
