"""The lowered function keeps its attributes and those of its arguments and results.

MIGraphX marks each kernel it hands rocMLIR (`attributes {arch = "gfx942", kernel = "mixr",
num_cu = 304 : i64}`, as in rocMLIR's mlir/test/migraphx_models and fusion tests), and rocMLIR's
own migraphx-to-tosa rewrites the signature in place, so they reach the pipeline after it. They
were dropped, with the arguments' own attributes.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr, UnitAttr

from convcanon.xdsl_io import parse_file_text

from .harness import check_with_iree, lower

KERNEL = """\
func.func @mlir_dot_add(%a: !migraphx.shaped<2x3xf32, 3x1> {mhal.read_access}, \
%b: !migraphx.shaped<3x4xf32, 1x3>, %c: !migraphx.shaped<2x4xf8E4M3FNUZ, 4x1> {mhal.read_access}) \
-> (!migraphx.shaped<2x4xf32, 4x1> {mhal.write_access}) \
attributes {arch = "gfx942", kernel = "mixr", num_cu = 304 : i64} {
  %0 = migraphx.dot %a, %b : <2x3xf32, 3x1>, <3x4xf32, 1x3> -> <2x4xf32, 4x1>
  %1 = migraphx.convert %c : <2x4xf8E4M3FNUZ, 4x1> to <2x4xf32, 4x1>
  %2 = migraphx.add %0, %1 : <2x4xf32, 4x1>, <2x4xf32, 4x1> -> <2x4xf32, 4x1>
  return %2 : !migraphx.shaped<2x4xf32, 4x1>
}
"""


def _lowered_function(text: str) -> func.FuncOp:
    module = parse_file_text(lower(text), "lowered.mlir")
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return function


def test_function_attributes_and_argument_attributes_survive_the_lowering() -> None:
    check_with_iree(KERNEL)  # iree-opt parses and verifies them, IREE runs the kernel
    function = _lowered_function(KERNEL)
    assert function.attributes == {
        "arch": StringAttr("gfx942"),
        "kernel": StringAttr("mixr"),
        "num_cu": IntegerAttr(304, 64),
    }
    assert function.arg_attrs is not None
    a, b, c = (dict(d.data) for d in function.arg_attrs.data)
    assert a == {"mhal.read_access": UnitAttr()}
    assert b == {}
    # the fp8 FNUZ buffer keeps its own attribute beside the storage description
    assert c["mhal.read_access"] == UnitAttr()
    assert c["convcanon.element"] is not None
    assert function.res_attrs == ArrayAttr([DictionaryAttr({"mhal.write_access": UnitAttr()})])


def test_a_function_without_attributes_gets_none() -> None:
    plain = KERNEL.replace(" {mhal.read_access}", "").replace(" {mhal.write_access}", "")
    plain = plain.split(" attributes {")[0] + " {\n" + plain.split("304 : i64} {\n", 1)[1]
    plain = plain.replace("(!migraphx.shaped<2x4xf32, 4x1>)", "!migraphx.shaped<2x4xf32, 4x1>")
    function = _lowered_function(plain)
    assert function.attributes == {}
    assert function.res_attrs is None
    assert function.arg_attrs is not None  # the fp8 buffer's storage description only
    assert [bool(d.data) for d in function.arg_attrs.data] == [False, False, True]
