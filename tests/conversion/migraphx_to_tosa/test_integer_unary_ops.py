"""Unary ops on integers lower to TOSA that IREE accepts, or are refused at their line.

TOSA 1.0's integer profile has clamp on i8/i16 only, abs on i32 only, and exp, log, tanh,
sigmoid, floor, ceil, rsqrt, reciprocal and erf on floating-point values only. The lowering
emitted them on any integer type: iree-opt parsed the result, IREE refused to compile it ("did not
align with any profile"). MIGraphX fuses relu and abs on int8/int32 into rocMLIR kernels
(AMDMIGraphX src/targets/gpu/fuse_mlir.cpp), so a relu on si32 or an abs on si8 is a real input.
Found by lowering each elementwise op at each element type and compiling the result with IREE.
"""

from __future__ import annotations

import numpy as np
import pytest

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_kernels import type_dtype
from convcanon.xdsl_io import parse_file_text, print_file

from .harness import check_with_iree, entry, reference

INTEGERS = ["si8", "si16", "si32", "ui8", "ui16", "i8", "i32"]


def _program(name: str, element: str) -> str:
    t = f"<2x3x{element}, 1x2>"  # column-major: the lowering keeps the layout too
    return (
        f"func.func @main(%a: !migraphx.shaped{t}) -> !migraphx.shaped{t} {{\n"
        f"  %r = migraphx.{name} %a : {t} -> {t}\n"
        f"  return %r : !migraphx.shaped{t}\n"
        "}\n"
    )


@pytest.mark.parametrize("element", INTEGERS)
@pytest.mark.parametrize("name", ["relu", "abs", "neg", "floor", "ceil"])
def test_integer_unary_op_runs_on_iree_as_the_reference_computes(name: str, element: str) -> None:
    check_with_iree(_program(name, element))  # iree-opt, IREE and our TOSA interpreter


@pytest.mark.parametrize("element", ["si8", "si32", "ui16"])
@pytest.mark.parametrize(
    "name", ["exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "recip", "erf", "softmax"]
)
def test_a_function_of_floats_on_integers_is_refused_at_its_op(name: str, element: str) -> None:
    text = _program(name, element)
    if name == "softmax":
        text = text.replace("%a : ", "%a {axis = 1 : i64} : ")
    module = parse_file_text(text, "int.mlir")
    with pytest.raises(ConvcanonError) as caught:
        migraphx_to_tosa(module, {})
    rendered = caught.value.render()
    assert rendered.startswith(f"int.mlir:2:3: error: 'migraphx.{name}' on {element} ")
    assert "has no exact TOSA lowering" in rendered
    assert "takes floating-point values" in rendered


def test_relu_of_a_bool_is_the_bool() -> None:
    """A bool is never below zero. The lowering built a clamp for it, whose bounds numpy's iinfo
    cannot give for a bool: a traceback, not TOSA (found by the half-B review)."""
    check_with_iree(_program("relu", "i1"))


@pytest.mark.parametrize("element", ["si4", "ui4"])
@pytest.mark.parametrize("name", ["relu", "neg", "greater", "less_or_equal", "equal"])
def test_native_4_bit_ops_lower_and_compute_as_the_reference(name: str, element: str) -> None:
    """Under `types=native` an op on 4-bit integers keeps them; each scalar constant it needs
    (a clamp's bound, a zero point) was made from numpy's view of the type, which holds no
    integer for it: a traceback (`struct.error`), not TOSA (found by the half-B review). Run
    on our TOSA interpreter against the reference (IREE takes no 4-bit tensor)."""
    t = f"<2x3x{element}, 1x2>"
    if name in ("relu", "neg"):
        text = _program(name, element)
    else:
        text = (
            f"func.func @main(%a: !migraphx.shaped{t}, %b: !migraphx.shaped{t})"
            f" -> !migraphx.shaped{t} {{\n"
            f"  %r = migraphx.{name} %a, %b : {t}, {t} -> {t}\n"
            f"  return %r : !migraphx.shaped{t}\n"
            "}\n"
        )
    module = parse_file_text(text, "int4.mlir")
    migraphx_to_tosa(module, {"types": "native"})
    tosa_text = print_file(module)
    assert "xi4>" in tosa_text  # kept as 4-bit tensors (TOSA's are signless)
    rng = np.random.default_rng(0)
    low, high = (-8, 7) if element == "si4" else (0, 15)
    inputs = [
        rng.integers(low, high, 6, endpoint=True).astype(type_dtype(ty))
        for ty in entry(parse_file_text(text, "int4.mlir")).function_type.inputs.data
    ]
    assert [(x.astype(np.int64) & 0xF).tolist() for x in reference(tosa_text, inputs)] == [
        (x.astype(np.int64) & 0xF).tolist() for x in reference(text, inputs)
    ]  # the bits: TOSA's i4 is signless, so a ui4 result comes back as an int4
