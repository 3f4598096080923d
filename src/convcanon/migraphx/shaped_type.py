"""`!migraphx.shaped<LENSxT, STRIDES>`: a MIGraphX value's logical lens, its strides and its type.

Printed exactly as rocMLIR prints it (`!migraphx.shaped<2x16x3x3xf32, 144x1x48x16>`, scalar
`!migraphx.shaped<f32>`); inside op syntax the `!migraphx.shaped` prefix is dropped, which
`print_stripped` / `parse_shaped` implement. Every layout MIGraphX can describe is a type: which
ones may be written, and how declared strides meet their ops, is `declared_strides`' business.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from convcanon.migraphx import layout

_FLOAT_DTYPES: dict[type[Attribute], str] = {
    Float16Type: "float16",
    Float32Type: "float32",
    Float64Type: "float64",
    BFloat16Type: "bfloat16",
    Float8E4M3FNType: "float8_e4m3fn",
    Float8E4M3FNUZType: "float8_e4m3fnuz",
    Float8E5M2Type: "float8_e5m2",
    Float8E5M2FNUZType: "float8_e5m2fnuz",
    Float4E2M1FNType: "float4_e2m1fn",
    Float8E8M0FNUType: "float8_e8m0fnu",
}
_INT_WIDTHS = (1, 4, 8, 16, 32, 64)


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype of a known element type (ml_dtypes for bf16 and fp8); else ValueError."""
    name = _FLOAT_DTYPES.get(type(element_type))
    if name is not None:
        if name.startswith(("bfloat", "float8", "float4")):
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, name))
        return np.dtype(name)
    if isinstance(element_type, IntegerType) and element_type.width.data in _INT_WIDTHS:
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        if width == 4:  # si4/ui4: ml_dtypes' one-byte int4/uint4
            import ml_dtypes

            return np.dtype(ml_dtypes.uint4 if unsigned else ml_dtypes.int4)
        return np.dtype(f"{'u' if unsigned else ''}int{width}")
    raise ValueError(f"unsupported element type {element_type}")


def lowest_value(dtype: np.dtype) -> float | int:
    """C++'s std::numeric_limits<T>::lowest() of a numpy dtype (false, 0, for a bool): where
    MIGraphX's max pooling starts its fold."""
    import ml_dtypes

    if dtype == np.bool_:
        return 0
    if dtype.kind in "iu" or dtype.name in ("int4", "uint4"):
        return int(ml_dtypes.iinfo(dtype).min)
    return float(ml_dtypes.finfo(dtype).min)


def is_known_element_type(element_type: Attribute) -> bool:
    try:
        numpy_dtype(element_type)
    except ValueError:
        return False
    return True


def is_float_type(element_type: Attribute) -> bool:
    return isinstance(element_type, AnyFloat)


@irdl_attr_definition
class ShapedType(ParametrizedAttribute, TypeAttribute):
    """MIGraphX's shape: logical lens, per-dim strides (0 = broadcast), element type."""

    name = "migraphx.shaped"

    shape: ArrayAttr[IntAttr]
    strides: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(
        self,
        shape: Sequence[int],
        strides: Sequence[int] | None,
        element_type: Attribute,
    ):
        if strides is None:
            strides = layout.standard_strides(shape)
        super().__init__(
            ArrayAttr([IntAttr(n) for n in shape]),
            ArrayAttr([IntAttr(s) for s in strides]),
            element_type,
        )

    @property
    def lens(self) -> tuple[int, ...]:
        return tuple(a.data for a in self.shape.data)

    @property
    def stride_values(self) -> tuple[int, ...]:
        return tuple(a.data for a in self.strides.data)

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    def memory_layout(self) -> layout.MemoryLayout:
        return layout.memory_layout(self.lens, self.stride_values)

    def flat_size(self) -> int:
        return layout.flat_size(self.lens, self.stride_values)

    def flat_tensor_type(self) -> TensorType:
        """The `tensor<N x T>` that holds this value's memory at a function boundary."""
        return TensorType(self.element_type, [self.flat_size()])

    def dtype(self) -> np.dtype:
        return numpy_dtype(self.element_type)

    def verify(self) -> None:
        lens, strides = self.lens, self.stride_values
        if len(lens) != len(strides):
            raise VerifyException(
                f"!migraphx.shaped has {len(lens)} dims but {len(strides)} strides "
                "(one stride per dim)"
            )
        if not is_known_element_type(self.element_type):
            raise VerifyException(
                f"!migraphx.shaped element type {self.element_type} is not a known MIGraphX type"
            )
        too_big = [n for n in (*lens, *strides) if n >= 1 << 63]
        if too_big:
            raise VerifyException(
                f"!migraphx.shaped lens and strides must fit in int64, got {too_big[0]}"
            )
        if any(n < 1 for n in lens):
            raise VerifyException(
                f"!migraphx.shaped layout is not representable: dim lengths must be >= 1, "
                f"got {list(lens)}"
            )
        if layout.flat_size(lens, strides) >= 1 << 63:
            raise VerifyException(
                f"!migraphx.shaped<{'x'.join(map(str, lens))}x{self.element_type}, "
                f"{'x'.join(map(str, strides))}> spans more than 2^63 elements of memory"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        """`<LENSxT, STRIDES>` or `<T>` (scalar)."""
        parser.parse_punctuation("<")
        return _parse_body(parser).parameters

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            for n in self.lens:
                printer.print_string(f"{n}x")
            printer.print_attribute(self.element_type)
            if self.rank:
                printer.print_string(", " + "x".join(str(s) for s in self.stride_values))


def print_stripped(printer: Printer, ty: Attribute) -> None:
    """Print a type as inside migraphx op syntax: shaped types without `!migraphx.shaped`."""
    if isinstance(ty, ShapedType):
        ty.print_parameters(printer)
    else:
        printer.print_attribute(ty)


_STRIPPED: dict[int, tuple[Attribute, str]] = {}


def stripped_text(ty: Attribute) -> str:
    """`print_stripped` as a string, remembered per type object (a program repeats a few
    shapes, and hashing a type walks all its parameters). The entry holds the type, so its id
    is never reused while cached."""
    cached = _STRIPPED.get(id(ty))
    if cached is not None:
        return cached[1]
    import io

    stream = io.StringIO()
    print_stripped(Printer(stream=stream), ty)
    text = stream.getvalue()
    if len(_STRIPPED) < 4096:
        _STRIPPED[id(ty)] = (ty, text)
    return text


# `4x3xf32, 3x1>` and `f32>`: the written forms with no space, comment or alias inside
_LITERAL = re.compile(r"(?:\d+x)*[A-Za-z_]\w*(?:, ?\d+(?:x\d+)*)?>")
# literal text -> its type: a program writes a few shapes many times, and parsing one takes
# some fifty tokens and a verify
_PARSED: dict[str, ShapedType] = {}


def _parse_body(parser: AttrParser) -> ShapedType:
    """`LENSxT, STRIDES>` or `T>`, after the `<` has been consumed; verified at its position.

    A body written as one already parsed is that type: parsing is a function of the text."""
    text = parser.lexer.input.content
    literal = _LITERAL.match(text, parser.pos) if isinstance(text, str) else None
    if literal is not None:
        known = _PARSED.get(literal.group())
        if known is not None:
            parser._resume_from(literal.end())  # pyright: ignore[reportPrivateUsage]
            return known
    shaped = _parse_body_tokens(parser)
    # kept only when the parse ended at the literal's `>` (it always does; cheap to be sure)
    if literal is not None and text.rfind(">", 0, parser.pos) == literal.end() - 1:
        if len(_PARSED) < 4096:
            _PARSED[literal.group()] = shaped
    return shaped


def _parse_body_tokens(parser: AttrParser) -> ShapedType:
    start = pos = parser.pos
    lens, element_type = parser.parse_ranked_shape()
    if any(n < 0 for n in lens):
        parser.raise_error("dynamic dims are not allowed in !migraphx.shaped", pos)
    strides: list[int] = []
    if parser.parse_optional_punctuation(",") is not None:
        pos = parser.pos
        strides = parser.parse_dimension_list()
        if any(s < 0 for s in strides):
            parser.raise_error("strides must be non-negative integers", pos)
        if not strides:
            parser.raise_error(
                "expected strides (non-negative integers joined by `x`, e.g. `4x1`) after `,`"
            )
    elif lens:
        parser.raise_error(f"expected `,` and {len(lens)} strides after the lens")
    parser.parse_punctuation(
        ">", " to end the shaped type (strides must be non-negative integers joined by `x`)"
    )
    params = (
        ArrayAttr([IntAttr(n) for n in lens]),
        ArrayAttr([IntAttr(s) for s in strides]),
        element_type,
    )
    try:
        return ShapedType.new(params)
    except VerifyException as err:
        parser.raise_error(str(err), start, parser.pos)


def parse_shaped_or_type(parser: AttrParser) -> Attribute:
    """Parse `<LENSxT, STRIDES>` (the stripped shaped type inside op syntax) or any full type."""
    if parser.parse_optional_punctuation("<") is not None:
        return _parse_body(parser)
    return parser.parse_type()


def is_unsigned(element_type: Attribute) -> bool:
    return (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data == Signedness.UNSIGNED
    )


def signless(element_type: Attribute) -> Attribute:
    """The TOSA (signless) twin of a sign-explicit integer type (`si8`, `ui8` -> `i8`)."""
    if (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data != Signedness.SIGNLESS
    ):
        return IntegerType(element_type.width.data)
    return element_type
