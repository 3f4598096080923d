"""The quantization ops of the migraphx dialect, with rocMLIR's syntax and result verifiers.

    %q = migraphx.quantizelinear %x, %scale, %zp : <4x3xf32, 3x1>, <4x3xf32, 3x1>,
           <4x3xsi8, 3x1> -> <4x3xsi8, 3x1>
    %d = migraphx.dequantizelinear %q, %scale, %zp : <...>, <...>, <...> -> <4x3xf32, 3x1>
    %c = migraphx.quant_dot %a, %b : <2x4xsi8, 4x1>, <4x3xsi8, 3x1> -> <2x3xsi32, 3x1>
    %s = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb
           : <2x32xf4E2M1FN, 32x1> scaled by !migraphx.shaped<2x32xf8E8M0FNU, 32x1>, ...
             -> <2x3xf32, 3x1>
    %k = migraphx.quant_convolution %x, %w {dilation = [1, 1], group = 1 : i64, ...} : ...
    %g = migraphx.backwards_data_convolution %dy, %w {dilation = ..., padding = ..., ...} : ...
    %u = migraphx.unpack %p {axis = 1 : i64} : <8x2xui8, 2x1> -> <8x4xui8, 4x1>

Scales and zero points arrive already broadcast to the input's lens (MIGraphX's parser inserts
the broadcasts), so a per-axis quantization needs no `axis` attribute; an `axis` that MIGraphX's
program text carries is accepted and has no meaning here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    Float4E2M1FNType,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import irdl_op_definition, opt_attr_def
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import (
    ConvLikeOp,
    Lens,
    MigraphxOp,
    int_list,
    int_value,
    print_attr_dict,
)
from convcanon.migraphx.shaped_type import (
    ShapedType,
    is_float_type,
    parse_shaped_or_type,
    print_stripped,
)


def _is_int(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def _is_fp8(element_type: Attribute) -> bool:
    return is_float_type(element_type) and "f8" in str(element_type)


def _operand_count(op: MigraphxOp, counts: Sequence[int], names: str) -> None:
    if len(op.args) not in counts:
        raise VerifyException(
            f"{op.name} takes {' or '.join(map(str, counts))} operands ({names}), "
            f"got {len(op.args)}"
        )


def _check_broadcasts_to(what: str, lens: Lens, target: Lens) -> None:
    if rules.broadcast_lens(lens, target) != target:
        raise rules.ShapeError(f"{what} lens {list(lens)} do not broadcast to {list(target)}")


# -- quantize / dequantize -----------------------------------------------------------------------


@irdl_op_definition
class QuantizeLinearOp(MigraphxOp):
    """saturate(round_half_even(x / scale) + zero_point) in the result's integer type; for an
    fp8 result (ONNX's float8 QuantizeLinear) x / scale + zero_point, clamped to the largest
    finite fp8 value and rounded to nearest even.

    The zero point may be any integer type for an integer result (an i32 zero point with an i8
    result saturates the sum, as rocMLIR does), any float type for an fp8 one."""

    name = "migraphx.quantizelinear"
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis", "out_type")
    TYPE_FIELD: ClassVar[str | None] = "out_type"
    axis = opt_attr_def(IntegerAttr)
    out_type = opt_attr_def(IntegerAttr)

    def verify_(self) -> None:
        _operand_count(self, (2, 3), "input, scale[, bias]")
        super().verify_()

    def infer(self) -> tuple[Lens, Attribute]:
        x, scale, *bias = self.in_types()
        if not is_float_type(x.element_type) or scale.element_type != x.element_type:
            raise rules.ShapeError(
                f"input and scale must share one float type, got {x.element_type} and "
                f"{scale.element_type}"
            )
        _check_broadcasts_to("scale", scale.lens, x.lens)
        out = self.output.type
        element_type = x.element_type
        if isinstance(out, ShapedType):
            element_type = out.element_type
        elif bias:
            element_type = bias[0].element_type
        if not (_is_int(element_type) or _is_fp8(element_type)):
            raise rules.ShapeError(f"the result must be an integer or fp8, got {element_type}")
        if bias:
            _check_broadcasts_to("zero point", bias[0].lens, x.lens)
            zero = bias[0].element_type
            integral = _is_int(element_type)
            if not (_is_int(zero) if integral else is_float_type(zero)):
                kind = "an integer" if integral else "a float"
                raise rules.ShapeError(
                    f"a {element_type} result needs {kind} zero point, got {zero}"
                )
        return x.lens, element_type


@irdl_op_definition
class DeQuantizeLinearOp(MigraphxOp):
    """(x - zero_point) * scale, rounded to the scale's float type.

    The input and the zero point may be any integer or float types, each its own (rocMLIR's
    operand set: an i8 input with an i32 zero point, fp8 with f32, a float input): the
    difference is taken exactly, as MIGraphX takes it in int64/double."""

    name = "migraphx.dequantizelinear"
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
    axis = opt_attr_def(IntegerAttr)

    def verify_(self) -> None:
        _operand_count(self, (2, 3), "input, scale[, bias]")
        super().verify_()

    def infer(self) -> tuple[Lens, Attribute]:
        x, scale, *bias = self.in_types()
        if not (_is_int(x.element_type) or is_float_type(x.element_type)):
            raise rules.ShapeError(f"the input must be an integer or a float, got {x.element_type}")
        if not is_float_type(scale.element_type):
            raise rules.ShapeError(f"the scale must be a float, got {scale.element_type}")
        _check_broadcasts_to("scale", scale.lens, x.lens)
        if bias:
            _check_broadcasts_to("zero point", bias[0].lens, x.lens)
            zero = bias[0].element_type
            if not (_is_int(zero) or is_float_type(zero)):
                raise rules.ShapeError(f"the zero point must be an integer or a float, got {zero}")
        return x.lens, scale.element_type


def dequantize_compute_type(
    input_type: Attribute, zero_type: Attribute | None, result_type: Attribute
) -> Attribute:
    """Where dequantizelinear subtracts and multiplies: f32, or f64 when an operand or the
    result is f64 or when a float meets an integer wider than 16 bits (f32 cannot hold both
    exactly). Integer minus integer is exact before it is rounded to this type."""
    types = [input_type, result_type] + ([zero_type] if zero_type is not None else [])
    floats = [t for t in (input_type, zero_type) if t is not None and is_float_type(t)]
    wide_ints = [
        t for t in (input_type, zero_type) if isinstance(t, IntegerType) and t.width.data > 16
    ]
    if any(isinstance(t, Float64Type) for t in types) or (floats and wide_ints):
        return Float64Type()
    return Float32Type()


# -- quant_dot -----------------------------------------------------------------------------------

# Elements of K that share one scale in the OCP MX formats; rocMLIR refuses other K.
MX_BLOCK = 32


def quant_result_type(inputs: Attribute, declared: Attribute) -> Attribute:
    """int8 operands accumulate in a 32-bit integer (any signedness), fp8 ones in f32."""
    if isinstance(inputs, IntegerType) and inputs.width.data == 8:
        if isinstance(declared, IntegerType) and declared.width.data == 32:
            return declared
        raise rules.ShapeError(f"int8 operands give a 32-bit integer result, not {declared}")
    if _is_fp8(inputs):
        return Float32Type()
    raise rules.ShapeError(f"operands must be int8 or fp8, got {inputs}")


@irdl_op_definition
class QuantDotOp(MigraphxOp):
    """int8 x int8 -> i32 (fp8 -> f32) matmul; with `scaled by`, f4E2M1FN blocks times their
    per-element (already broadcast) scales, accumulated in f32.

    Operands are stored as (in_a, in_b) or (in_a, in_b, scale_a, scale_b)."""

    name = "migraphx.quant_dot"
    perf_config = opt_attr_def(Attribute)

    @property
    def scaled(self) -> bool:
        return len(self.args) == 4

    def verify_(self) -> None:
        _operand_count(self, (2, 4), "in_a, in_b[, scale_a, scale_b]")
        super().verify_()

    def infer(self) -> tuple[Lens, Attribute]:
        a, b, *scales = self.in_types()
        lens = rules.dot_lens(a.lens, b.lens)
        if a.element_type != b.element_type:
            raise rules.ShapeError(
                f"operand element types differ: {a.element_type} and {b.element_type}"
            )
        out = self.output.type
        declared = out.element_type if isinstance(out, ShapedType) else a.element_type
        if not scales:
            if isinstance(a.element_type, Float4E2M1FNType):
                raise rules.ShapeError("f4E2M1FN operands need `scaled by` scales")
            return lens, quant_result_type(a.element_type, declared)
        for operand, scale, which in ((a, scales[0], "a"), (b, scales[1], "b")):
            if scale.lens != operand.lens:
                raise rules.ShapeError(
                    f"scale of {which} has lens {list(scale.lens)}, its operand "
                    f"{list(operand.lens)}"
                )
            if not is_float_type(scale.element_type):
                raise rules.ShapeError(f"scale of {which} must be a float, got {scale}")
        if not isinstance(a.element_type, Float4E2M1FNType):
            raise rules.ShapeError(f"scaled quant_dot needs f4E2M1FN operands, got {a}")
        k = a.lens[-1]
        if k % MX_BLOCK:
            raise rules.ShapeError(
                f"K dimension ({k}) must be a multiple of the MX block size ({MX_BLOCK}): "
                "each scale covers one block of K"
            )
        return lens, Float32Type()

    def print(self, printer: Printer) -> None:
        if not self.scaled:
            return super().print(printer)
        a, b, sa, sb = self.args
        printer.print_string(" ")
        printer.print_operand(a)
        printer.print_string(" scaled by ")
        printer.print_operand(sa)
        printer.print_string(", ")
        printer.print_operand(b)
        printer.print_string(" scaled by ")
        printer.print_operand(sb)
        print_attr_dict(printer, dict(self.attributes))
        printer.print_string(" : ")
        for k, (value, scale) in enumerate(((a, sa), (b, sb))):
            if k:
                printer.print_string(", ")
            print_stripped(printer, value.type)
            printer.print_string(" scaled by ")
            printer.print_attribute(scale.type)
        printer.print_string(" -> ")
        print_stripped(printer, self.output.type)

    @classmethod
    def parse(cls, parser: Parser) -> MigraphxOp:
        a = parser.parse_unresolved_operand()
        if parser.parse_optional_keyword("scaled") is None:
            return cls._parse_plain(parser, a)
        parser.parse_keyword("by")
        sa = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        parser.parse_keyword("scaled")
        parser.parse_keyword("by")
        sb = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types_pos = parser.pos
        types: list[Attribute] = []
        for k in range(2):
            if k:
                parser.parse_punctuation(",")
            types.append(parse_shaped_or_type(parser))
            parser.parse_keyword("scaled")
            parser.parse_keyword("by")
            types.append(parse_shaped_or_type(parser))
        parser.parse_punctuation("->")
        result_type = parse_shaped_or_type(parser)
        ta, tsa, tb, tsb = types
        values = parser.resolve_operands([a, b, sa, sb], [ta, tb, tsa, tsb], types_pos)
        return cls(values, result_type, attributes)

    @classmethod
    def _parse_plain(cls, parser: Parser, a: UnresolvedOperand) -> MigraphxOp:
        """`%a, %b attr-dict : <A>, <B> -> <C>` after `%a`."""
        parser.parse_punctuation(",")
        b = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        types = [parse_shaped_or_type(parser)]
        parser.parse_punctuation(",")
        types.append(parse_shaped_or_type(parser))
        parser.parse_punctuation("->")
        result_type = parse_shaped_or_type(parser)
        return cls(parser.resolve_operands([a, b], types, pos), result_type, attributes)


# -- convolutions --------------------------------------------------------------------------------


@irdl_op_definition
class QuantConvolutionOp(ConvLikeOp):
    """Forward convolution of int8 operands into a 32-bit integer (fp8 operands into f32)."""

    name = "migraphx.quant_convolution"

    def infer(self) -> tuple[Lens, Attribute]:
        x, w = self.in_types()
        if x.element_type != w.element_type:
            raise rules.ShapeError(
                f"operand element types differ: {x.element_type} and {w.element_type}"
            )
        out = self.output.type
        declared = out.element_type if isinstance(out, ShapedType) else x.element_type
        return self.output_lens(), quant_result_type(x.element_type, declared)


def backwards_padding(padding: Sequence[int], sd: int) -> tuple[Lens, Lens]:
    """(begins, ends): `{b0, .., e0, ..}` or one symmetric value per spatial dim, read as the
    forward convolution's explicit padding (the extents do not matter in that mode)."""
    ones = [1] * sd
    return rules.conv_padding(ones, ones, padding, ones, ones, padding_mode=0)


def backwards_data_lens(
    input_lens: Sequence[int],
    filter_lens: Sequence[int],
    *,
    padding: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    group: int,
) -> Lens:
    """[N, K, *S] with filter [K, C/group, *R] -> [N, C, *O], O = s(S-1) + d(R-1) + 1 - pads.

    The filter is the forward convolution's ([out, in/group, ...]); this op maps the forward
    output back onto its input (the gradient w.r.t. data, ONNX's ConvTranspose).
    """
    if len(input_lens) != len(filter_lens) or not 3 <= len(input_lens) <= 5:
        raise rules.ShapeError(
            f"needs input and filter of equal rank 3..5, got {list(input_lens)} and "
            f"{list(filter_lens)}"
        )
    sd = len(input_lens) - 2
    if len(stride) != sd or len(dilation) != sd:
        raise rules.ShapeError(f"stride and dilation need {sd} values each")
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise rules.ShapeError("stride and dilation must be >= 1")
    if group < 1 or input_lens[1] != filter_lens[0] or filter_lens[0] % group:
        raise rules.ShapeError(
            f"with group={group} the input's {input_lens[1]} channels must equal the filter's "
            f"first dim {filter_lens[0]}, a multiple of the group count"
        )
    begins, ends = backwards_padding(padding, sd)
    spatial: list[int] = []
    for n, k, s, d, b, e in zip(
        input_lens[2:], filter_lens[2:], stride, dilation, begins, ends, strict=True
    ):
        extent = s * (n - 1) + d * (k - 1) + 1 - b - e
        if extent < 1:
            raise rules.ShapeError(f"padding {b} + {e} leaves no output (extent {extent})")
        spatial.append(extent)
    return (input_lens[0], filter_lens[1] * group, *spatial)


@irdl_op_definition
class BackwardsDataConvolutionOp(ConvLikeOp):
    """The transposed convolution MIGraphX sends for `convolution_backwards` (ConvTranspose).

    y[n, g*C/g + c, i*s - pb + r*d] += x[n, k, i] * w[k, c, r] for the k of group g.
    """

    name = "migraphx.backwards_data_convolution"

    @classmethod
    def program_name(cls) -> str | None:
        return "convolution_backwards"

    def explicit_padding(self) -> tuple[Lens, Lens]:
        x, _ = self.in_types()
        return backwards_padding(int_list(self, "padding"), x.rank - 2)

    def infer(self) -> tuple[Lens, Attribute]:
        x, w = self.in_types()
        element_type = x.element_type
        if element_type != w.element_type or not is_float_type(element_type):
            raise rules.ShapeError(
                f"needs float operands of one type, got {x.element_type} and {w.element_type}"
            )
        if int_value(self, "padding_mode", 0) != 0:
            raise rules.ShapeError("only padding_mode 0 (explicit padding) is defined")
        return backwards_data_lens(x.lens, w.lens, **self.window()), element_type


# -- unpack --------------------------------------------------------------------------------------


def unpacked_signed(element_type: Attribute) -> bool:
    """Whether an unpacked nibble is sign-extended: only for a signed (or signless) 4-bit type;
    8-bit results hold the nibble zero-extended (0..15), as rocMLIR's realize-int4 does."""
    assert isinstance(element_type, IntegerType)
    return element_type.width.data == 4 and element_type.signedness.data != Signedness.UNSIGNED


@irdl_op_definition
class UnpackOp(MigraphxOp):
    """Two 4-bit values per byte along `axis`, low nibble first (MIGraphX's unpack_int4)."""

    name = "migraphx.unpack"
    OPERAND_NAMES: ClassVar[tuple[str, ...]] = ("in",)
    PROGRAM_FIELDS: ClassVar[tuple[str, ...]] = ("axis",)
    axis = opt_attr_def(IntegerAttr)

    @classmethod
    def program_name(cls) -> str | None:
        """MIGraphX's program has no 4-bit element type: int4 travels packed in uint8."""
        return "unpack_int4"

    def infer(self) -> tuple[Lens, Attribute]:
        (x,) = self.in_types()
        if not (isinstance(x.element_type, IntegerType) and x.element_type.width.data == 8):
            raise rules.ShapeError(f"the packed input must be an 8-bit integer, got {x}")
        axis = rules.normalize_axis(int_value(self, "axis", -1), x.rank)
        out = self.output.type
        element_type = out.element_type if isinstance(out, ShapedType) else x.element_type
        if not (isinstance(element_type, IntegerType) and element_type.width.data in (4, 8)):
            raise rules.ShapeError(f"the result must be a 4- or 8-bit integer, got {element_type}")
        lens = list(x.lens)
        lens[axis] *= 2
        return tuple(lens), element_type


def unpack_axis(op: Operation) -> int:
    ty = op.operands[0].type
    assert isinstance(ty, ShapedType)
    return rules.normalize_axis(int_value(op, "axis", -1), ty.rank)


QUANT_OPS: tuple[type[MigraphxOp], ...] = (
    QuantizeLinearOp,
    DeQuantizeLinearOp,
    QuantDotOp,
    QuantConvolutionOp,
    BackwardsDataConvolutionOp,
    UnpackOp,
)
