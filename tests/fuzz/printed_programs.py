"""What the printed-program fuzz tests share: drawing hostile integers and layouts, spelling
MIGraphX's braced lists, and taking a program through every tool (import; what imports is run
with a small memory limit and work budget, and lowered by `migraphx-to-tosa`; what lowers must
verify in iree-opt), the property `assert_no_harm` at each step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st

from convcanon.cli import main, opt_main

from .conftest import Outcome, assert_no_harm, digest, run_cli

IREE_OPT = Path(sys.executable).with_name("iree-opt")
BIG = [2**31, 2**40, 2**62, 2**63 - 1, 10**9, 10**20]


def weighted(usual: st.SearchStrategy[int], odd: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """Mostly `usual` (values that import, so the run and the lowering see them), else `odd`."""
    return st.integers(0, 9).flatmap(lambda roll: usual if roll < 7 else odd)


def braced(values: list[int]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def standard(lens: list[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(lens):
        strides.insert(0, step)
        step *= max(n, 1)
    return strides


def log(step: str, code: int, stderr: str = "") -> None:
    """For a campaign (CONVCANON_FUZZ_LOG=file): one line per command run, its exit and its
    error's words (the path and position cut)."""
    path = os.environ.get("CONVCANON_FUZZ_LOG")
    if path:
        errors = [line.split("error: ", 1)[1] for line in stderr.splitlines() if "error: " in line]
        with open(path, "a") as handle:
            handle.write(f"{step}\t{code}\t{errors[0][:120] if errors else ''}\n")


def through_the_tools(
    text: bytes, work: Path, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    """Import the printed program; what imports goes on through `module_through_the_tools`."""
    program = work / "program.txt"
    program.write_bytes(text)
    imported = work / "imported.mlir"
    outcome = run_cli(main, ["import-migraphx", str(program), "-o", str(imported)], capsys)
    assert_no_harm(outcome, program, digest(program), imported)
    log(f"{tag}-import", outcome.code, outcome.stderr)
    if outcome.code == 0:
        module_through_the_tools(imported, capsys, tag)


def module_through_the_tools(module: Path, capsys: pytest.CaptureFixture[str], tag: str) -> None:
    """Run the migraphx module and lower it; what lowers verifies in iree-opt."""
    before = digest(module)
    results = module.with_name("results.npz")
    ran = ["run", str(module), "--memory-limit", "64MiB", "--max-work", "1e8", "-o", str(results)]
    ran_outcome = run_cli(main, ran, capsys)
    assert_no_harm(ran_outcome, module, before, results)
    log(f"{tag}-run", ran_outcome.code, ran_outcome.stderr)
    tosa = module.with_name("lowered.mlir")
    lowered: Outcome = run_cli(
        opt_main, [str(module), "-p", "migraphx-to-tosa", "-o", str(tosa)], capsys
    )
    assert_no_harm(lowered, module, before, tosa)
    log(f"{tag}-lower", lowered.code, lowered.stderr)
    if lowered.code == 0 and IREE_OPT.exists():
        checked = subprocess.run([str(IREE_OPT), str(tosa)], capture_output=True, text=True)
        log(f"{tag}-iree-opt", checked.returncode)
        assert checked.returncode == 0, checked.stderr
