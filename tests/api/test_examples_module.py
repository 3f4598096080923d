"""`convcanon.examples.small_cnn` is the model the bundled example files were made from."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from convcanon.examples import small_cnn
from convcanon.fileio.npz import open_npz
from convcanon.reference.run import run_hlo_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODULE = EXAMPLES / "small_cnn.stablehlo.mlir"


def test_bundled_module_is_the_models_export():
    assert small_cnn.export_stablehlo() == MODULE.read_text()


def test_bundled_arguments_are_the_models_parameters_and_input():
    stored = dict(open_npz(str(EXAMPLES / "small_cnn.inputs.npz")))
    arguments = small_cnn.example_arguments()
    assert sorted(stored) == sorted(f"arg{i}" for i in range(len(arguments)))
    for i, value in enumerate(arguments):
        np.testing.assert_array_equal(stored[f"arg{i}"], np.asarray(value))


def test_interpreting_the_bundled_files_gives_the_models_logits():
    (report,) = run_hlo_text(
        MODULE.read_text(),
        str(MODULE),
        inputs=dict(open_npz(str(EXAMPLES / "small_cnn.inputs.npz"))),
    )
    expected = np.asarray(small_cnn.apply(small_cnn.params(), small_cnn.example_input()))
    np.testing.assert_allclose(report.results[0], expected, rtol=1e-4, atol=1e-5)
