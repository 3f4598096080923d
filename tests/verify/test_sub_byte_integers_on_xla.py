"""Sub-byte integer arguments (i2, i4, ui2, ui4) on XLA: the interpreter keeps them in a byte,
and verify handed XLA those int8/uint8 buffers, which it refused for the module's i4 parameters
("XLA rejected the module: ... RuntimeProgramInputMismatch"). Now they go in as their declared
types and come back in a byte: XLA and the interpreter agree element for element (wrapping
included), and a wrong AFTER is a mismatch on XLA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from convcanon.verify.engines import ENGINES
from convcanon.verify.inputs import DISTRIBUTIONS, random_inputs
from convcanon.verify.signature import module_signature

from .cli_calls import cli, verify_tells_apart

pytest.importorskip("jax")


def _program(element: str, op: str = "add") -> str:
    t = f"tensor<16x{element}>"
    return (
        f"func.func @main(%a: {t}, %b: {t}) -> ({t}, tensor<16xi32>) {{\n"
        f"  %0 = stablehlo.{op} %a, %b : {t}\n"
        f"  %1 = stablehlo.multiply %0, %b : {t}\n"
        f"  %2 = stablehlo.convert %1 : ({t}) -> tensor<16xi32>\n"
        f"  return %1, %2 : {t}, tensor<16xi32>\n}}\n"
    )


@pytest.mark.parametrize("element", ["i2", "i4", "ui2", "ui4"])
def test_the_interpreter_and_xla_agree_on_sub_byte_integers(element: str):
    text = _program(element)
    args = module_signature(text, "m.mlir", None).args
    rng = np.random.default_rng(0)
    for dist in DISTRIBUTIONS[:2]:  # signed ranges, then positive ones
        inputs = random_inputs(args, rng, dist)
        ours = ENGINES["reference"](text, "m.mlir", "main", inputs)
        xla = ENGINES["xla"](text, "m.mlir", "main", inputs)
        for a, b in zip(ours, xla, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), (element, a, b)


@pytest.mark.parametrize("element", ["i4", "ui4"])
def test_verify_on_xla_judges_sub_byte_integers(element: str, tmp_path: Path):
    before, wrong = tmp_path / "before.mlir", tmp_path / "wrong.mlir"
    before.write_text(_program(element))
    wrong.write_text(_program(element, "subtract"))
    verify_tells_apart(before, wrong, "xla")


def test_an_i2_argument_is_drawn_and_named_in_its_range(tmp_path: Path):
    """It was drawn in the byte it is kept in (-4..4, wrapped by the cast) and named so."""
    before = tmp_path / "before.mlir"
    before.write_text(_program("i2"))
    code, out, err = cli("verify", str(before), str(before), "--engine", "xla")
    assert code == 0 and out.rstrip().endswith("inputs integers in [-2, 1]"), (out, err)
