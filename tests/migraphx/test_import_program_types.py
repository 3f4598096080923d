"""MIGraphX's printed programs with its integer types and its index/shape ops: integers become
sign-explicit (`int8_type` -> si8, `uint8_type` -> ui8, `bool_type` -> si8), a comparison typed
bool becomes compare + convert (rocMLIR's comparison keeps its operand type), literal values are
checked against their type, and import time grows linearly with the program."""

from __future__ import annotations

import time

import numpy as np
import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.xdsl_io import parse_file_text, print_file


def _import(text: str) -> str:
    printed = print_file(import_program(text, "prog.txt"))
    assert print_file(parse_file_text(printed, "printed.mlir")) == printed
    return printed


@pytest.mark.parametrize(
    ("type_name", "element"),
    [
        ("int8_type", "si8"),
        ("uint8_type", "ui8"),
        ("bool_type", "si8"),
        ("int16_type", "si16"),
        ("uint16_type", "ui16"),
        ("int32_type", "si32"),
        ("uint32_type", "ui32"),
        ("int64_type", "si64"),
        ("uint64_type", "ui64"),
    ],
)
def test_integer_type_names_become_sign_explicit(type_name: str, element: str) -> None:
    text = f"x = @param:x -> {type_name}, {{2, 3}}, {{1, 2}}\n@1 = @return(x)\n"
    assert f"!migraphx.shaped<2x3x{element}, 1x2>" in _import(text)


def test_bool_typed_comparison_imports_as_compare_then_convert() -> None:
    text = (
        "a = @param:a -> half_type, {4}, {1}\nb = @param:b -> half_type, {4}, {1}\n"
        "@2 = greater(a,b) -> bool_type, {4}, {1}\n@3 = @return(@2)\n"
    )
    printed = _import(text)
    assert "migraphx.greater %arg0, %arg1 : <4xf16, 1>, <4xf16, 1> -> <4xf16, 1>" in printed
    assert "migraphx.convert %0 : <4xf16, 1> to <4xsi8, 1>" in printed


def test_index_and_shape_ops_import_with_their_fields() -> None:
    text = (
        "d = @param:d -> float_type, {5, 1, 3}, {3, 3, 1}\n"
        "i = @param:i -> int64_type, {2}, {1}\n"
        "@2 = squeeze[axes={1}](d) -> float_type, {5, 3}, {3, 1}\n"
        "@3 = unsqueeze[axes={0},steps={}](@2) -> float_type, {1, 5, 3}, {15, 3, 1}\n"
        "@4 = flatten[axis=2](@3) -> float_type, {5, 3}, {3, 1}\n"
        "@5 = gather[axis=0](@4,i) -> float_type, {2, 3}, {3, 1}\n"
        "j = @param:j -> int32_type, {2, 3}, {3, 1}\n"
        "@7 = scatter_none[axis=0](@4,j,@5) -> float_type, {5, 3}, {3, 1}\n"
        "@8 = @return(@5,@7)\n"
    )
    printed = _import(text)
    for op in ("squeeze", "unsqueeze", "flatten", "gather", "scatter_none"):
        assert f"migraphx.{op} " in printed
    module = parse_file_text(printed, "p.mlir")
    data = np.arange(15, dtype=np.float32)
    ids = np.array([4, -5], dtype=np.int64)
    targets = np.array([[1, 0, 2], [3, 4, 0]], dtype=np.int32).reshape(-1)
    gathered, scattered = Interpreter(module, "p.mlir", {}).run("main", [data, ids, targets])
    assert gathered.tolist() == [12, 13, 14, 0, 1, 2]
    expected = data.reshape(5, 3).copy()
    expected[[1, 0, 2], [0, 1, 2]] = [12, 13, 14]
    expected[[3, 4, 0], [0, 1, 2]] = [0, 1, 2]
    assert scattered.reshape(5, 3).tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        (
            "@literal{1000,1} -> int8_type, {2}, {1}",
            "1:15: error: 1000 is out of range for int8_type",
        ),
        ("@literal{nan} -> int32_type, {1}, {1}", "`nan` is not an integer, as int32_type needs"),
        ("@literal{-1,1} -> uint8_type, {2}, {1}", "-1 is out of range for uint8_type [0, 255]"),
        ("@literal{1e300,1} -> half_type, {2}, {1}", "1e300 is out of range for half_type"),
        ("@literal{1e30} -> int64_type, {1}, {1}", "1e30 is out of range for int64_type"),
        ("@literal{1.5} -> int32_type, {1}, {1}", "`1.5` is not an integer, as int32_type needs"),
        ("@literal{" + "9" * 5000 + "} -> float_type, {1}, {1}", "number of 5000 characters"),
    ],
)
def test_literal_value_out_of_its_type_is_a_diagnostic(literal: str, message: str) -> None:
    with pytest.raises(ConvcanonError) as info:
        import_program(f"@0 = {literal}\n@1 = @return(@0)\n", "lit.txt")
    assert message in info.value.render()


def test_literal_values_keep_their_integer_precision() -> None:
    big = (1 << 62) + 1  # not representable in f64
    text = f"@0 = @literal{{{big}, -7}} -> int64_type, {{2}}, {{1}}\n@1 = @return(@0)\n"
    module = parse_file_text(_import(text), "p.mlir")
    (value,) = Interpreter(module, "p.mlir", {}).run("main", [])
    assert value.tolist() == [big, -7]


@pytest.mark.parametrize(
    "shape", ["{100000000000000000000}, {1}", "{2}, {9223372036854775808}", "{2}, {-1}"]
)
def test_lens_and_strides_beyond_int64_are_a_diagnostic(shape: str) -> None:
    with pytest.raises(ConvcanonError) as info:
        import_program(f"x = @param:x -> float_type, {shape}\n@1 = @return(x)\n", "s.txt")
    assert info.value.render().startswith("s.txt:1:")


def _chain(count: int) -> str:
    lines = ["x = @param:x -> float_type, {4, 4}, {4, 1}"]
    previous = "x"
    for k in range(count):
        op = "transpose[permutation={1,0}]" if k % 2 else "exp"
        strides = "{1, 4}" if k % 2 else "{4, 1}"
        lines.append(f"@{k} = {op}({previous}) -> float_type, {{4, 4}}, {strides}, target_id=0")
        previous = f"@{k}"
    return "\n".join([*lines, f"@r = @return({previous})", ""])


def test_import_time_grows_linearly_with_the_program() -> None:
    small, large = _chain(2000), _chain(8000)
    import_program(small, "warm.txt")
    timings = []
    for text in (small, large):
        start = time.process_time()
        import_program(text, "chain.txt")
        timings.append(time.process_time() - start)
    assert timings[1] < 6 * timings[0] + 0.2, timings  # 4x the program; quadratic would be 16x


def test_inf_and_nan_literals_print_as_text_that_reads_back() -> None:
    text = "@0 = @literal{inf, nan, -inf} -> half_type, {3}, {1}\n@1 = @return(@0)\n"
    module = parse_file_text(_import(text), "p.mlir")
    (value,) = Interpreter(module, "p.mlir", {}).run("main", [])
    assert value[0] == np.inf and np.isnan(value[1]) and value[2] == -np.inf
