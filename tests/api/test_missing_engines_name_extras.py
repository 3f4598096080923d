"""Every "engine missing" message names the extra that installs it (`convcanon[xla]`, `[iree]`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SMALL_CNN = Path(__file__).resolve().parents[2] / "examples" / "small_cnn.stablehlo.mlir"


def _without(modules: list[str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a process where `modules` cannot be imported (as on a core-only install)."""
    code = (
        "import sys\n"
        f"for name in {modules!r}:\n"
        "    sys.modules[name] = None\n"
        "from convcanon.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("engine", "hidden"),
    [("xla", ["jax"]), ("iree", ["iree", "iree.compiler", "iree.runtime"])],
)
def test_verify_without_the_engine_names_its_extra(engine: str, hidden: list[str]):
    path = str(SMALL_CNN)
    result = _without(hidden, ["verify", path, path, "--engine", engine, "--trials", "1"])
    assert result.returncode == 1
    assert f"pip install 'convcanon[{engine}]'" in result.stderr
    assert "Traceback" not in result.stderr
