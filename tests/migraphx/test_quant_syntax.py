"""The quantization ops: rocMLIR's assembly syntax round-trips, result verifiers refuse wrong
shapes and types with a reason, MIGraphX's program text imports, and the element types of
block-scaled and int4 kernels (si4, ui4, f4E2M1FN, f8E8M0FNU) are known."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import Float4E2M1FNType, Float8E8M0FNUType, IntegerType, Signedness

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.shaped_type import numpy_dtype
from convcanon.xdsl_io import parse_file_text, print_file


def _function(args: str, body: str, result: str) -> str:
    return (
        f"func.func @main({args}) -> !migraphx.shaped{result} {{\n{body}\n"
        f"  return %r : !migraphx.shaped{result}\n}}\n"
    )


ROUND_TRIPS = {
    "quantizelinear": _function(
        "%x: !migraphx.shaped<2x4xf32, 4x1>, %s: !migraphx.shaped<2x4xf32, 0x1>, "
        "%z: !migraphx.shaped<2x4xsi8, 0x1>",
        "  %r = migraphx.quantizelinear %x, %s, %z : <2x4xf32, 4x1>, <2x4xf32, 0x1>, "
        "<2x4xsi8, 0x1> -> <2x4xsi8, 4x1>",
        "<2x4xsi8, 4x1>",
    ),
    "dequantizelinear": _function(
        "%x: !migraphx.shaped<2x4xui8, 4x1>, %s: !migraphx.shaped<2x4xf16, 0x0>",
        "  %r = migraphx.dequantizelinear %x, %s : <2x4xui8, 4x1>, <2x4xf16, 0x0> -> "
        "<2x4xf16, 4x1>",
        "<2x4xf16, 4x1>",
    ),
    "quantizelinear with a wider zero point": _function(
        "%x: !migraphx.shaped<2x4xf16, 4x1>, %s: !migraphx.shaped<2x4xf16, 0x1>, "
        "%z: !migraphx.shaped<2x4xsi32, 0x1>",
        "  %r = migraphx.quantizelinear %x, %s, %z : <2x4xf16, 4x1>, <2x4xf16, 0x1>, "
        "<2x4xsi32, 0x1> -> <2x4xsi8, 4x1>",
        "<2x4xsi8, 4x1>",
    ),
    "dequantizelinear of its own zero-point type": _function(
        "%x: !migraphx.shaped<2x4xsi8, 4x1>, %s: !migraphx.shaped<2x4xf32, 0x1>, "
        "%z: !migraphx.shaped<2x4xsi32, 0x1>",
        "  %r = migraphx.dequantizelinear %x, %s, %z : <2x4xsi8, 4x1>, <2x4xf32, 0x1>, "
        "<2x4xsi32, 0x1> -> <2x4xf32, 4x1>",
        "<2x4xf32, 4x1>",
    ),
    "dequantizelinear of a float": _function(
        "%x: !migraphx.shaped<2x4xf8E4M3FN, 4x1>, %s: !migraphx.shaped<2x4xf32, 0x1>, "
        "%z: !migraphx.shaped<2x4xf32, 0x1>",
        "  %r = migraphx.dequantizelinear %x, %s, %z : <2x4xf8E4M3FN, 4x1>, <2x4xf32, 0x1>, "
        "<2x4xf32, 0x1> -> <2x4xf32, 4x1>",
        "<2x4xf32, 4x1>",
    ),
    "quant_dot": _function(
        "%a: !migraphx.shaped<1x5x4xsi8, 20x4x1>, %b: !migraphx.shaped<1x4x3xsi8, 12x1x4>",
        "  %r = migraphx.quant_dot %a, %b : <1x5x4xsi8, 20x4x1>, <1x4x3xsi8, 12x1x4> -> "
        "<1x5x3xsi32, 15x3x1>",
        "<1x5x3xsi32, 15x3x1>",
    ),
    "quant_dot scaled by": _function(
        "%a: !migraphx.shaped<2x32xf4E2M1FN, 32x1>, %sa: !migraphx.shaped<2x32xf8E8M0FNU, 32x1>, "
        "%b: !migraphx.shaped<32x3xf4E2M1FN, 1x32>, %sb: !migraphx.shaped<32x3xf8E8M0FNU, 3x1>",
        "  %r = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb "
        '{perf_config = "v3:64"} : <2x32xf4E2M1FN, 32x1> scaled by '
        "!migraphx.shaped<2x32xf8E8M0FNU, 32x1>, <32x3xf4E2M1FN, 1x32> scaled by "
        "!migraphx.shaped<32x3xf8E8M0FNU, 3x1> -> <2x3xf32, 3x1>",
        "<2x3xf32, 3x1>",
    ),
    "quant_convolution": _function(
        "%x: !migraphx.shaped<1x3x6x7xsi8, 126x1x21x3>, "
        "%w: !migraphx.shaped<2x3x3x3xsi8, 27x9x3x1>",
        "  %r = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, "
        "padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : "
        "<1x3x6x7xsi8, 126x1x21x3>, <2x3x3x3xsi8, 27x9x3x1> -> <1x2x4x5xsi32, 40x20x5x1>",
        "<1x2x4x5xsi32, 40x20x5x1>",
    ),
    "backwards_data_convolution": _function(
        "%x: !migraphx.shaped<1x3x6x7xf32, 126x42x7x1>, "
        "%w: !migraphx.shaped<3x4x3x3xf32, 36x9x3x1>",
        "  %r = migraphx.backwards_data_convolution %x, %w {dilation = [1, 1], group = 1 : i64, "
        "padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [2, 3]} : "
        "<1x3x6x7xf32, 126x42x7x1>, <3x4x3x3xf32, 36x9x3x1> -> <1x4x11x19xf32, 836x209x19x1>",
        "<1x4x11x19xf32, 836x209x19x1>",
    ),
    "unpack": _function(
        "%x: !migraphx.shaped<8x2xui8, 2x1>",
        "  %r = migraphx.unpack %x {axis = 1 : i64} : <8x2xui8, 2x1> -> <8x4xsi4, 4x1>",
        "<8x4xsi4, 4x1>",
    ),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_quant_op_prints_what_it_parses(name: str) -> None:
    printed = print_file(parse_file_text(ROUND_TRIPS[name], "<test>"))
    op = name.split()[0]
    assert f"migraphx.{op} " in printed
    assert print_file(parse_file_text(printed, "<printed>")) == printed


def test_scaled_quant_dot_prints_rocmlir_form() -> None:
    printed = print_file(parse_file_text(ROUND_TRIPS["quant_dot scaled by"], "<test>"))
    assert (
        'migraphx.quant_dot %a scaled by %sa, %b scaled by %sb {perf_config = "v3:64"} : '
        "<2x32xf4E2M1FN, 32x1> scaled by !migraphx.shaped<2x32xf8E8M0FNU, 32x1>, "
        "<32x3xf4E2M1FN, 1x32> scaled by !migraphx.shaped<32x3xf8E8M0FNU, 3x1> -> "
        "<2x3xf32, 3x1>"
    ) in printed


BAD = {
    "quant_dot of int8 declared f32": (
        "%a: !migraphx.shaped<2x4xsi8, 4x1>, %b: !migraphx.shaped<4x3xsi8, 3x1>",
        "  %r = migraphx.quant_dot %a, %b : <2x4xsi8, 4x1>, <4x3xsi8, 3x1> -> <2x3xf32, 3x1>",
        "<2x3xf32, 3x1>",
        "int8 operands give a 32-bit integer result",
    ),
    "quant_dot of f4E2M1FN without scales": (
        "%a: !migraphx.shaped<2x4xf4E2M1FN, 4x1>, %b: !migraphx.shaped<4x3xf4E2M1FN, 3x1>",
        "  %r = migraphx.quant_dot %a, %b : <2x4xf4E2M1FN, 4x1>, <4x3xf4E2M1FN, 3x1> -> "
        "<2x3xf32, 3x1>",
        "<2x3xf32, 3x1>",
        "need `scaled by` scales",
    ),
    "scale of other lens": (
        "%a: !migraphx.shaped<2x4xf4E2M1FN, 4x1>, %sa: !migraphx.shaped<2x1xf8E8M0FNU, 1x1>, "
        "%b: !migraphx.shaped<4x3xf4E2M1FN, 3x1>, %sb: !migraphx.shaped<4x3xf8E8M0FNU, 3x1>",
        "  %r = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb : <2x4xf4E2M1FN, 4x1> "
        "scaled by <2x1xf8E8M0FNU, 1x1>, <4x3xf4E2M1FN, 3x1> scaled by <4x3xf8E8M0FNU, 3x1> "
        "-> <2x3xf32, 3x1>",
        "<2x3xf32, 3x1>",
        "scale of a has lens [2, 1]",
    ),
    "scaled quant_dot with K not a multiple of the block size": (
        "%a: !migraphx.shaped<1x4x40xf4E2M1FN, 160x40x1>, "
        "%sa: !migraphx.shaped<1x4x40xf8E8M0FNU, 160x40x1>, "
        "%b: !migraphx.shaped<1x40x3xf4E2M1FN, 120x3x1>, "
        "%sb: !migraphx.shaped<1x40x3xf8E8M0FNU, 120x3x1>",
        "  %r = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb : "
        "<1x4x40xf4E2M1FN, 160x40x1> scaled by !migraphx.shaped<1x4x40xf8E8M0FNU, 160x40x1>, "
        "<1x40x3xf4E2M1FN, 120x3x1> scaled by !migraphx.shaped<1x40x3xf8E8M0FNU, 120x3x1> "
        "-> <1x4x3xf32, 12x3x1>",
        "<1x4x3xf32, 12x3x1>",
        "K dimension .40. must be a multiple of the MX block size .32.",
    ),
    "quantize to a float": (
        "%x: !migraphx.shaped<4xf32, 1>, %s: !migraphx.shaped<4xf32, 1>",
        "  %r = migraphx.quantizelinear %x, %s : <4xf32, 1>, <4xf32, 1> -> <4xf16, 1>",
        "<4xf16, 1>",
        "the result must be an integer or fp8",
    ),
    "quantize to an integer with a float zero point": (
        "%x: !migraphx.shaped<4xf32, 1>, %s: !migraphx.shaped<4xf32, 1>, "
        "%z: !migraphx.shaped<4xf32, 1>",
        "  %r = migraphx.quantizelinear %x, %s, %z : <4xf32, 1>, <4xf32, 1>, <4xf32, 1> -> "
        "<4xsi8, 1>",
        "<4xsi8, 1>",
        "a si8 result needs an integer zero point, got f32",
    ),
    "dequantize by an integer scale": (
        "%x: !migraphx.shaped<4xsi8, 1>, %s: !migraphx.shaped<4xsi32, 1>",
        "  %r = migraphx.dequantizelinear %x, %s : <4xsi8, 1>, <4xsi32, 1> -> <4xsi32, 1>",
        "<4xsi32, 1>",
        "the scale must be a float",
    ),
    "unpack without doubling": (
        "%x: !migraphx.shaped<8x2xui8, 2x1>",
        "  %r = migraphx.unpack %x {axis = 1 : i64} : <8x2xui8, 2x1> -> <8x2xui8, 2x1>",
        "<8x2xui8, 2x1>",
        "declared result lens [8, 2] disagree with the computed lens [8, 4]",
    ),
    "unpack of a float": (
        "%x: !migraphx.shaped<8x2xf16, 2x1>",
        "  %r = migraphx.unpack %x {axis = 1 : i64} : <8x2xf16, 2x1> -> <8x4xf16, 4x1>",
        "<8x4xf16, 4x1>",
        "the packed input must be an 8-bit integer",
    ),
    "backwards conv of the wrong size": (
        "%x: !migraphx.shaped<1x3x6x7xf32, 126x42x7x1>, "
        "%w: !migraphx.shaped<3x4x3x3xf32, 36x9x3x1>",
        "  %r = migraphx.backwards_data_convolution %x, %w {dilation = [1, 1], group = 1 : i64, "
        "padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : "
        "<1x3x6x7xf32, 126x42x7x1>, <3x4x3x3xf32, 36x9x3x1> -> <1x4x6x7xf32, 168x42x7x1>",
        "<1x4x6x7xf32, 168x42x7x1>",
        "computed lens [1, 4, 8, 9]",
    ),
    "backwards conv with channels not matching the filter": (
        "%x: !migraphx.shaped<1x2x6x7xf32, 84x42x7x1>, %w: !migraphx.shaped<3x4x3x3xf32, 36x9x3x1>",
        "  %r = migraphx.backwards_data_convolution %x, %w {dilation = [1, 1], group = 1 : i64, "
        "padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : "
        "<1x2x6x7xf32, 84x42x7x1>, <3x4x3x3xf32, 36x9x3x1> -> <1x4x8x9xf32, 288x72x9x1>",
        "<1x4x8x9xf32, 288x72x9x1>",
        "input's 2 channels must equal the filter's first dim 3",
    ),
    "quant conv of floats": (
        "%x: !migraphx.shaped<1x3x6x7xf32, 126x42x7x1>, "
        "%w: !migraphx.shaped<2x3x3x3xf32, 27x9x3x1>",
        "  %r = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, "
        "padding = [0, 0, 0, 0], stride = [1, 1]} : <1x3x6x7xf32, 126x42x7x1>, "
        "<2x3x3x3xf32, 27x9x3x1> -> <1x2x4x5xf32, 40x20x5x1>",
        "<1x2x4x5xf32, 40x20x5x1>",
        "operands must be int8 or fp8",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_quant_op_verifier_says_what_is_wrong(name: str) -> None:
    args, body, result, message = BAD[name]
    with pytest.raises(ConvcanonError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_file_text(_function(args, body, result), "<test>")


def test_block_scale_and_int4_types_have_numpy_dtypes() -> None:
    assert numpy_dtype(Float4E2M1FNType()) == np.dtype(ml_dtypes.float4_e2m1fn)
    assert numpy_dtype(Float8E8M0FNUType()) == np.dtype(ml_dtypes.float8_e8m0fnu)
    assert numpy_dtype(IntegerType(4, Signedness.SIGNED)) == np.dtype(ml_dtypes.int4)
    assert numpy_dtype(IntegerType(4, Signedness.UNSIGNED)) == np.dtype(ml_dtypes.uint4)


CONV_FIELDS = "padding={0,0,0,0},stride={1,1},dilation={1,1},group=1,padding_mode=0"
BACK_FIELDS = "padding={1,1},stride={2,2},dilation={1,1},group=1,padding_mode=0"
BACKWARDS = """\
g = @param:g -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}
k = @param:k -> float_type, {2, 4, 3, 3}, {36, 9, 3, 1}
b = convolution_backwards[{BACK_FIELDS}](g, k) -> float_type, {1, 4, 5, 5}, {100, 25, 5, 1}
""".replace("{BACK_FIELDS}", BACK_FIELDS)
PROGRAM = (
    """\
x = @param:x -> float_type, {1, 3, 4, 4}, {48, 16, 4, 1}
s = @param:s -> float_type, {1, 3, 4, 4}, {0, 1, 0, 0}
z = @param:z -> int8_type, {1, 3, 4, 4}, {0, 1, 0, 0}
w = @param:w -> int8_type, {2, 3, 3, 3}, {27, 9, 3, 1}
sc = @param:sc -> float_type, {1, 2, 2, 2}, {0, 0, 0, 0}
q = quantizelinear[axis=1](x, s, z) -> int8_type, {1, 3, 4, 4}, {48, 16, 4, 1}
c = quant_convolution[{CONV_FIELDS}](q, w) -> int32_type, {1, 2, 2, 2}, {8, 4, 2, 1}
e = dequantizelinear(c, sc) -> float_type, {1, 2, 2, 2}, {8, 4, 2, 1}
d = quant_dot(q, q) -> int32_type, {1, 3, 4, 4}, {48, 16, 4, 1}
p = @param:p -> uint8_type, {4, 2}, {2, 1}
u = unpack_int4[axis=1](p) -> uint8_type, {4, 4}, {4, 1}
""".replace("{CONV_FIELDS}", CONV_FIELDS)
    + BACKWARDS
    + "r = @return(e, d, u, b)\n"
)


def test_program_text_quant_ops_import() -> None:
    printed = print_file(import_program(PROGRAM, "<program>"))
    for op in (
        "migraphx.quantizelinear",
        "migraphx.quant_convolution",
        "migraphx.quant_dot",
        "migraphx.unpack",
        "migraphx.backwards_data_convolution",
        "migraphx.dequantizelinear",
    ):
        assert op in printed
    assert "<4x2xui8, 2x1> -> <4x4xui8, 4x1>" in printed
    assert "-> <1x4x5x5xf32, 100x25x5x1>" in printed
    assert print_file(parse_file_text(printed, "<printed>")) == printed


def test_program_text_checks_the_backwards_conv_shape() -> None:
    bad = BACKWARDS.replace("{1, 4, 5, 5}, {100, 25, 5, 1}", "{1, 4, 6, 6}, {144, 36, 6, 1}")
    with pytest.raises(ConvcanonError) as caught:
        import_program(bad + "r = @return(b)\n", "<program>")
    assert caught.value.render().startswith("<program>:3:")
    assert "computed lens [1, 4, 5, 5]" in caught.value.message
