"""An entry that takes or returns a tuple is refused at the entry by `run` and `verify`: the
draw of random inputs (and `run --inputs`) asked a tuple argument for its element type and died
with a KeyError traceback; a tuple result ended verify in an AttributeError traceback (XLA
refused it as 'Invalid XLA PrimitiveType') and `run` printed it as one stacked array."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main

TUPLE_ENTRY = """func.func @main(%arg0: tuple<tensor<4xf32>, tensor<2xi32>>) -> tensor<4xf32> {
  %0 = stablehlo.get_tuple_element %arg0[0] : (tuple<tensor<4xf32>, tensor<2xi32>>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""  # noqa: E501
TUPLE_RESULT = """func.func @main(%arg0: tensor<4xf32>) -> tuple<tensor<4xf32>> {
  %0 = stablehlo.tuple %arg0 : tuple<tensor<4xf32>>
  return %0 : tuple<tensor<4xf32>>
}
"""


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (TUPLE_ENTRY, "argument 0 is a tuple (tuple<tensor<4xf32>, tensor<2xi32>>)"),
        (TUPLE_RESULT, "result 0 is a tuple (tuple<tensor<4xf32>>)"),
    ],
    ids=["argument", "result"],
)
@pytest.mark.parametrize(
    "command",
    [
        ["verify", "{m}", "{m}"],
        ["verify", "{m}", "{m}", "--engine", "xla"],
        ["run", "{m}"],
        ["run", "{m}", "--inputs", "{npz}"],
    ],
    ids=["verify", "verify-xla", "run", "run-inputs"],
)
def test_a_tuple_entry_is_one_diagnostic(text: str, what: str, command: list[str], tmp_path: Path):
    module, npz = tmp_path / "m.mlir", tmp_path / "in.npz"
    module.write_text(text)
    np.savez(npz, arg0=np.zeros(4, np.float32))
    argv = [part.format(m=module, npz=npz) for part in command]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 1 and out.getvalue() == ""
    assert without_source_lines(err.getvalue()) == (
        f"{module}:1:1: error: @main {what}: entries are run on tensor arguments and results only\n"
    )
