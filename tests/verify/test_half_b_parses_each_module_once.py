"""`run` and `verify` parse a migraphx module once for all that only read it.

`run` parsed a migraphx/TOSA module to draw its inputs, again to check the npz headers and again
to run it (a 20,000-op chain: three parses of ~10 s each); `verify` parsed BEFORE and AFTER for
its plan, its widening and every trial's run. Now they share one parse, as for StableHLO
(test_verify_parses_each_module_once.py). Counted, not timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _counting import record_calls  # pyright: ignore[reportMissingImports]

from convcanon.cli import main

SHAPED = "<2x3xf32, 3x1>"
CHAIN = f"""func.func @main(%0: !migraphx.shaped{SHAPED}) -> !migraphx.shaped{SHAPED} {{
  %1 = migraphx.relu %0 : {SHAPED} -> {SHAPED}
  %2 = migraphx.neg %1 : {SHAPED} -> {SHAPED}
  return %2 : !migraphx.shaped{SHAPED}
}}
"""


@pytest.fixture
def chain(tmp_path: Path) -> str:
    path = tmp_path / "chain.mlir"
    path.write_text(CHAIN)
    return str(path)


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every parse of half-B module text (its callers import `parse_file_text` when called)."""
    import convcanon.xdsl_io

    return record_calls(monkeypatch, convcanon.xdsl_io, "parse_file_text")


def test_run_draws_and_runs_a_migraphx_module_on_one_parse(chain, tmp_path, monkeypatch, capsys):
    calls = _parses(monkeypatch)
    assert main(["run", chain, "-o", str(tmp_path / "out.npz")]) == 0, capsys.readouterr()
    assert "drawn at random" in capsys.readouterr().err
    assert [c[1] for c in calls] == [chain]


def test_run_checks_inputs_and_runs_a_migraphx_module_on_one_parse(
    chain, tmp_path, monkeypatch, capsys
):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.arange(6, dtype=np.float32) - 3)
    calls = _parses(monkeypatch)
    assert main(["run", chain, "--inputs", str(inputs)]) == 0, capsys.readouterr()
    assert [c[1] for c in calls] == [chain]


def test_verify_parses_each_half_b_text_once_for_its_readers(chain, monkeypatch, capsys):
    calls = _parses(monkeypatch)
    args = ["verify", chain, "-p", "migraphx-to-tosa", "--trials", "3"]
    assert main(args) == 0, capsys.readouterr()
    # BEFORE: the pipeline's own parse (it changes its module) and one for every reader
    assert [c[0] for c in calls].count(CHAIN) == 2
    # AFTER and BEFORE's f64 copy: one parse each, however many trials run
    others = [c[0] for c in calls if c[0] != CHAIN]
    assert len(others) == len(set(others)) == 2, [len(t) for t in others]
