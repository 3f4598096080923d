"""`verify` of a module with no @main and several public functions asks which to compare.

It compared the first public function alone and said ok, while AFTER's second function negated
its result: XLA (and IREE for the TOSA lowering) ran @f of both modules and never @g. `--entry`'s
help says "default: main, or the only one"; now that is what verify does, in both halves."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_calls import cli
from .lowered_pair import lowered_and_broken

TWO_FUNCTIONS = """func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @g(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.tanh %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
G_NEGATED = TWO_FUNCTIONS.replace(
    "  %0 = stablehlo.tanh %arg0 : tensor<4xf32>\n  return %0",
    "  %t = stablehlo.tanh %arg0 : tensor<4xf32>\n"
    "  %0 = stablehlo.negate %t : tensor<4xf32>\n  return %0",
)

MIGRAPHX_TWO_FUNCTIONS = """func.func @f(%arg0: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.add %arg0, %arg0 : <4xf32, 1>, <4xf32, 1> -> <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}
func.func @g(%arg0: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {
  %0 = migraphx.tanh %arg0 : <4xf32, 1> -> <4xf32, 1>
  return %0 : !migraphx.shaped<4xf32, 1>
}
"""  # noqa: E501


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    before, after = tmp_path / "before.mlir", tmp_path / "after.mlir"
    before.write_text(TWO_FUNCTIONS)
    after.write_text(G_NEGATED)
    return str(before), str(after)


@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_several_public_functions_and_no_main_is_refused(pair, engine):
    before, after = pair
    code, out, err = cli("verify", before, after, "--engine", engine)
    assert code == 1 and "ok" not in out, (out, err)
    assert err.strip() == (
        f"{before}: error: no @main and 2 public functions (@f, @g): name the one to compare"
        " with --entry"
    )


def test_each_named_entry_is_judged_on_xla(pair):
    before, after = pair
    code, out, err = cli("verify", before, after, "--engine", "xla", "--entry", "g")
    assert code == 1 and "error: mismatch (engine xla" in err, (out, err)
    code, out, err = cli("verify", before, after, "--engine", "xla", "--entry", "f")
    assert code == 0 and out.startswith("ok: 3 trial(s) on engine xla"), (out, err)


def test_the_only_public_function_is_the_entry(tmp_path):
    """A private helper beside one public function: that function, as before."""
    path = tmp_path / "one.mlir"
    path.write_text(TWO_FUNCTIONS.replace("func.func @f", "func.func private @f"))
    code, out, err = cli("verify", str(path), str(path), "--engine", "xla")
    assert code == 0 and out.startswith("ok:"), (out, err)


def test_a_migraphx_module_with_two_public_functions_is_refused(tmp_path):
    source, lowered, _ = lowered_and_broken(
        tmp_path, MIGRAPHX_TWO_FUNCTIONS, "tosa.tanh", "tosa.tanh"
    )
    code, out, err = cli("verify", source, lowered, "--engine", "iree")
    assert code == 1 and "ok" not in out, (out, err)
    assert "no @main and 2 public functions (@f, @g)" in err, err
    code, out, err = cli("verify", source, lowered, "--engine", "iree", "--entry", "g")
    assert code == 0 and "\nok: 3 trial(s) on engine iree" in out, (out, err)
