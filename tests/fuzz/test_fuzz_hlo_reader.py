"""Damaged StableHLO given to `convcanon-opt`: a diagnostic and exit 1/2, never a crash or harm."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shared import SHARED  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import opt_main

from .conftest import REPO, assert_no_harm, digest, run_cli
from .mutations import mutated

SOURCES = [
    REPO / "examples" / "small_cnn.stablehlo.mlir",
    SHARED
    / "corpus"
    / "stablehlo"
    / "conv_general_dilated_float32_2_3_9_10_float32_3_3_4_5_t2.mlir",
]
SOURCES = [path for path in SOURCES if path.exists()]  # the corpus file is absent on a bare clone
PIPELINES = ["", "stablehlo-canonicalize-conv{gate=general}", "stablehlo-canonicalize-conv"]


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_damaged_hlo_never_crashes_or_harms(
    data: st.DataObject,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
):
    source = data.draw(st.sampled_from(SOURCES))
    damaged = data.draw(mutated(source.read_bytes()))
    pipeline = data.draw(st.sampled_from(PIPELINES))
    work = tmp_path_factory.mktemp("fuzz")
    input_file = work / "input.mlir"
    input_file.write_bytes(damaged)
    output_file = work / "out.mlir"
    before = digest(input_file)
    outcome = run_cli(opt_main, [str(input_file), "-p", pipeline, "-o", str(output_file)], capsys)
    assert_no_harm(outcome, input_file, before, output_file)
    if outcome.code == 0:
        assert output_file.read_text().strip(), "success must produce a module"


def test_deep_nesting_fails_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    depth = 100_000
    text = (
        "func.func @f() -> tensor<1xf32> {\n  %0 = stablehlo.constant dense<"
        + "[" * depth
        + "1.0"
        + "]" * depth
        + "> : tensor<1xf32>\n  return %0 : tensor<1xf32>\n}\n"
    )
    input_file = tmp_path / "deep.mlir"
    input_file.write_text(text)
    outcome = run_cli(opt_main, [str(input_file)], capsys)
    assert outcome.code == 1
    assert "nests deeper than" in outcome.stderr and f"{input_file}:2:" in outcome.stderr


def test_output_equal_to_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    input_file = tmp_path / "m.mlir"
    input_file.write_bytes(SOURCES[0].read_bytes())
    before = digest(input_file)
    outcome = run_cli(opt_main, [str(input_file), "-o", str(input_file)], capsys)
    assert outcome.code == 2 and "is the input file" in outcome.stderr
    assert digest(input_file) == before
