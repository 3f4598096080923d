"""An op field that restates the result's element type (convert's target_type, quantizelinear's
out_type, as MIGraphX's emitter writes them: its shape::type_t index) must name that type.

Both were ignored: `migraphx.convert %a {target_type = 1 : i64} : <4xf32> to <4xsi8>` (MIGraphX
computed half) lowered as a convert to si8, and `convert[target_type=1](x) -> float_type` was
imported as a convert to f32, with no word. Now each is the op's `file:line:col: error:`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.program_text import TYPE_ENUM
from convcanon.xdsl_io import parse_file_text, print_file

# MLIR element type -> the MIGraphX type indices that name it (a bool is si8, ui8 or i1)
NAMED_BY = {
    "si8": {0, 5},
    "ui8": {0, 4},
    "i1": {0},
    "f16": {1},
    "f32": {2},
    "f64": {3},
    "ui16": {6},
    "si16": {7},
    "si32": {8},
    "si64": {9},
    "ui32": {10},
    "ui64": {11},
    "f8E4M3FNUZ": {12},
    "f8E4M3FN": {13},
    "f8E5M2": {14},
    "bf16": {15},
    "f8E5M2FNUZ": {16},
    "f4E2M1FN": {18},
}


def _convert(result: str, index: int) -> str:
    return (
        "func.func @main(%a: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4x"
        f"{result}, 1> {{\n"
        f"  %r = migraphx.convert %a {{target_type = {index} : i64}} : <4xf32, 1> to "
        f"<4x{result}, 1>\n"
        f"  return %r : !migraphx.shaped<4x{result}, 1>\n}}\n"
    )


@settings(max_examples=80, deadline=None)
@given(result=st.sampled_from(sorted(NAMED_BY)), index=st.integers(-2, len(TYPE_ENUM) + 2))
def test_a_convert_is_accepted_exactly_when_its_target_type_names_the_result(
    result: str, index: int
):
    text = _convert(result, index)
    if index in NAMED_BY[result]:
        parse_file_text(text, "c.mlir")
        return
    with pytest.raises(ConvcanonError) as caught:
        parse_file_text(text, "c.mlir")
    rendered = caught.value.render()
    assert rendered.startswith("c.mlir:2:3: error: migraphx.convert: ")
    if 0 <= index < len(TYPE_ENUM):
        assert f"target_type {index} ({TYPE_ENUM[index]}) disagrees with the result" in rendered
    else:
        assert f"{index} is no MIGraphX type" in rendered


def test_a_target_type_that_is_no_integer_is_an_error():
    text = _convert("si8", 0).replace("0 : i64", '"half"')
    with pytest.raises(ConvcanonError) as caught:
        parse_file_text(text, "c.mlir")
    assert caught.value.render().startswith("c.mlir:2:3: error: 'migraphx.convert' op ")


def test_quantizelinear_out_type_names_the_result():
    t = "<4xf32, 1>"
    text = (
        f"func.func @main(%a: !migraphx.shaped{t}, %s: !migraphx.shaped{t})"
        " -> !migraphx.shaped<4xsi8, 1> {\n"
        f"  %r = migraphx.quantizelinear %a, %s {{out_type = OUT : i64}} : {t}, {t}"
        " -> <4xsi8, 1>\n  return %r : !migraphx.shaped<4xsi8, 1>\n}\n"
    )
    parse_file_text(text.replace("OUT", "5"), "q.mlir")
    with pytest.raises(ConvcanonError) as caught:
        parse_file_text(text.replace("OUT", "4"), "q.mlir")
    assert caught.value.render().startswith(
        "q.mlir:2:3: error: migraphx.quantizelinear: out_type 4 (uint8_type) disagrees with "
        "the result element type si8"
    )


PROGRAM = (
    "x = @param:x -> float_type, {4, 3}, {3, 1}\n"
    "@1 = convert[target_type=N](x) -> {T}\n@2 = @return(@1)\n"
)


@pytest.mark.parametrize(
    ("index", "result"), [(1, "float_type"), (2, "half_type"), (5, "uint8_type")]
)
def test_an_imported_convert_whose_target_type_disagrees_is_an_error(index: int, result: str):
    text = PROGRAM.replace("N", str(index)).replace("{T}", f"{result}, {{4, 3}}, {{3, 1}}")
    with pytest.raises(ConvcanonError) as caught:
        import_program(text, "p.txt")
    assert caught.value.render().startswith(
        f"p.txt:2:6: error: migraphx.convert: target_type {index} ({TYPE_ENUM[index]}) disagrees"
    )


def test_an_imported_convert_keeps_its_target_type():
    """What MIGraphX's emitter sends rocMLIR (the op's fields), so the MLIR says it too."""
    text = PROGRAM.replace("N", "1").replace("{T}", "half_type, {4, 3}, {3, 1}")
    assert "{target_type = 1 : i64}" in print_file(import_program(text, "p.txt"))
