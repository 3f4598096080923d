"""The text of MIGraphX's printed program (`program::print`), read one line at a time.

A `Cursor` scans a line and reports `file:line:col: error: expected ...`; the readers here
take the line's pieces (names, `[FIELD=VALUE, ...]`, `(ARG, ...)`, the declared shape
`-> TYPE, {LENS}, {STRIDES}`, literal values) as text and integers, checked against int64.
What the pieces mean (ops, types, literal values against their type) is the importer's.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    BFloat16Type,
    FileLineColLoc,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute

from convcanon.diagnostics import ConvcanonError, SourceLoc, byte_column

FieldValue = list[int] | int | float | str
Fields = dict[str, tuple[FieldValue, int]]  # field name -> (value, column of the name)


def _int(width: int, signed: bool = True) -> Callable[[], Attribute]:
    signedness = Signedness.SIGNED if signed else Signedness.UNSIGNED
    return lambda: IntegerType(width, signedness)


# MIGraphX type names, with integers sign-explicit as MIGraphX's MLIR emitter writes them
# (`si8`, `ui8`); bool_type is si8, as MIGraphX hands booleans to MLIR.
TYPE_NAMES: dict[str, Callable[[], Attribute]] = {
    "float_type": Float32Type,
    "half_type": Float16Type,
    "bf16_type": BFloat16Type,
    "double_type": Float64Type,
    "bool_type": _int(8),
    "int8_type": _int(8),
    "uint8_type": _int(8, False),
    "int16_type": _int(16),
    "uint16_type": _int(16, False),
    "int32_type": _int(32),
    "uint32_type": _int(32, False),
    "int64_type": _int(64),
    "uint64_type": _int(64, False),
    "fp8e4m3fnuz_type": Float8E4M3FNUZType,
    "fp8e4m3fn_type": Float8E4M3FNType,
    "fp8e5m2_type": Float8E5M2Type,
    "fp8e5m2fnuz_type": Float8E5M2FNUZType,
}


# MIGraphX's shape::type_t in its enum order (src/include/migraphx/shape.hpp; new types are
# appended): an op field that names a type (convert's target_type, quantizelinear's out_type)
# holds its index here.
TYPE_ENUM = (
    "bool_type",
    "half_type",
    "float_type",
    "double_type",
    "uint8_type",
    "int8_type",
    "uint16_type",
    "int16_type",
    "int32_type",
    "int64_type",
    "uint32_type",
    "uint64_type",
    "fp8e4m3fnuz_type",
    "fp8e4m3fn_type",
    "fp8e5m2_type",
    "bf16_type",
    "fp8e5m2fnuz_type",
    "tuple_type",
    "fp4x2_type",
)


def type_index_elements(index: int) -> tuple[str, tuple[Attribute, ...]]:
    """MIGraphX's type index -> (its name, the element types that stand for it in MLIR): a bool
    is si8, ui8 (MIGraphX's emitter asks C++ whether bool is unsigned) or i1; packed fp4 is
    f4E2M1FN, as MIGraphX's emitter writes it; a tuple has none. ValueError past the enum."""
    if not 0 <= index < len(TYPE_ENUM):
        raise ValueError(f"{index} is no MIGraphX type (0 to {len(TYPE_ENUM) - 1})")
    name = TYPE_ENUM[index]
    if name == "bool_type":
        return name, (_int(8)(), _int(8, False)(), IntegerType(1))
    if name == "fp4x2_type":
        return name, (Float4E2M1FNType(),)
    maker = TYPE_NAMES.get(name)
    return name, (maker(),) if maker is not None else ()


class Cursor:
    """A scanner over one line that reports `file:line:col: error: expected ...`."""

    def __init__(self, text: str, filename: str, line: int):
        self.text, self.filename, self.line, self.pos = text, filename, line, 0

    def error(self, message: str, pos: int | None = None) -> ConvcanonError:
        return ConvcanonError(message, self.source_loc(self.pos if pos is None else pos))

    def source_loc(self, pos: int) -> SourceLoc:
        """`file:line:col` of character `pos` of the line (MLIR's column: bytes)."""
        return SourceLoc(self.filename, self.line, byte_column(self.text, 0, pos))

    def location(self, pos: int) -> FileLineColLoc:
        """Where an op came from, so later errors (verifier, migraphx-to-tosa) point into the
        program; locations are never printed."""
        return FileLineColLoc.new(
            (_file_attr(self.filename), IntAttr(self.line), _column(byte_column(self.text, 0, pos)))
        )

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def peek(self, token: str) -> bool:
        self.skip_ws()
        return self.text.startswith(token, self.pos)

    def optional(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str, what: str) -> None:
        if not self.optional(token):
            found = self.text[self.pos : self.pos + 12] or "end of line"
            raise self.error(f"expected `{token}` {what}, found `{found}`")

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        self.skip_ws()
        found = pattern.match(self.text, self.pos)
        if found is None:
            rest = self.text[self.pos : self.pos + 12] or "end of line"
            raise self.error(f"expected {what}, found `{rest}`")
        self.pos = found.end()
        return found.group(0)


@functools.lru_cache(maxsize=16)
def _file_attr(filename: str) -> StringAttr:
    return StringAttr(filename)


@functools.lru_cache(maxsize=256)
def _column(column: int) -> IntAttr:
    return IntAttr(column)


NAME = re.compile(r"[^\s=(),\[\]{}]+")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?\d+")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)", re.I)
MODULE_HEADER = re.compile(r'^module:\s*"?([^"]*)"?\s*$')


INT64_LIMIT = 1 << 63
MAX_NUMBER_CHARS = 400  # longer numbers are hostile (Python's int() stops at 4300 digits)


def _bounded_int(cur: Cursor, what: str) -> int:
    cur.skip_ws()
    pos = cur.pos
    text = cur.match(_INT, f"an integer in {what}")
    if len(text) > MAX_NUMBER_CHARS:
        raise cur.error(f"integer of {len(text)} digits in {what}", pos)
    value = int(text)
    if not -INT64_LIMIT <= value < INT64_LIMIT:
        raise cur.error(f"{text} in {what} does not fit in int64", pos)
    return value


def _int_list(cur: Cursor, what: str) -> list[int]:
    cur.expect("{", f"to start {what}")
    values: list[int] = []
    if not cur.optional("}"):
        values.append(_bounded_int(cur, what))
        while cur.optional(","):
            values.append(_bounded_int(cur, what))
        cur.expect("}", f"to end {what}")
    return values


@dataclass
class Shape:
    """A declared result shape: MIGraphX's type name, lens and strides."""

    type_name: str
    lens: list[int]
    strides: list[int]


_SHAPE_TEXT = re.compile(
    r"\s*->\s*([A-Za-z_]\w*),\s*\{((?:\s*\d{1,18}\s*,)*\s*\d{1,18}\s*)?\},\s*"
    r"\{((?:\s*\d{1,18}\s*,)*\s*\d{1,18}\s*)?\}(?:,\s*target_id=\d+)?(?:\s+#.*)?\s*$"
)


def well_formed_shape(text: str, pos: int) -> Shape | None:
    """The shape from `pos` to the end of the line in one regex, when it is well formed and of
    a known type (the common line); None leaves it to `read_shape`'s diagnostics."""
    found = _SHAPE_TEXT.match(text, pos)
    if found is None or found.group(1) not in TYPE_NAMES:
        return None
    lens = [int(v) for v in found.group(2).split(",")] if found.group(2) else []
    strides = [int(v) for v in found.group(3).split(",")] if found.group(3) else []
    return Shape(found.group(1), lens, strides)


def read_shape(cur: Cursor) -> Shape:
    """`-> TYPE, {LENS}, {STRIDES}[, target_id=N]` to the end of the line."""
    fast = well_formed_shape(cur.text, cur.pos)
    if fast is not None:
        cur.pos = len(cur.text)
        return fast
    cur.expect("->", "before the result shape")
    cur.skip_ws()
    pos = cur.pos
    type_name = cur.match(IDENT, "a MIGraphX type name (e.g. float_type)")
    if type_name not in TYPE_NAMES:
        close = difflib.get_close_matches(type_name, TYPE_NAMES, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise cur.error(f"unknown MIGraphX type `{type_name}`{hint}", pos)
    cur.expect(",", "after the type name")
    lens = _int_list(cur, "the lens")
    cur.expect(",", "between lens and strides")
    strides = _int_list(cur, "the strides")
    read_target_id(cur)
    return Shape(type_name, lens, strides)


def read_target_id(cur: Cursor) -> None:
    """`[, target_id=N]`, then the end of the line or the instruction's debug symbols (`# ...`,
    the ONNX node names MIGraphX prints after `--debug-symbols`), which carry no semantics."""
    if cur.optional(","):
        cur.expect("target_id", "(the only field after the shape)")
        cur.expect("=", "after target_id")
        cur.match(_INT, "an integer target id")
    if not cur.at_end() and not (cur.peek("#") and cur.text[cur.pos - 1] in " \t"):
        raise cur.error(f"unexpected text at end of line: `{cur.text[cur.pos :]}`")


def _tokens(
    cur: Cursor, brackets: str, pattern: re.Pattern[str], items: str, item: str
) -> list[tuple[str, int]]:
    """`(A, B, ...)` or `{A, B, ...}`: each token of `pattern` with its column."""
    opening, closing = brackets
    cur.expect(opening, f"to start {items}")
    tokens: list[tuple[str, int]] = []
    if not cur.optional(closing):
        while True:
            cur.skip_ws()
            pos = cur.pos
            tokens.append((cur.match(pattern, item), pos))
            if cur.optional(closing):
                break
            cur.expect(",", f"or `{closing}` in {items}")
    return tokens


def read_args(cur: Cursor) -> list[tuple[str, int]]:
    """`(NAME, ...)`: the instruction names an op reads."""
    return _tokens(cur, "()", NAME, "the argument list", "an instruction name")


def _field_value(cur: Cursor) -> FieldValue:
    cur.skip_ws()
    if cur.peek("{"):
        return _int_list(cur, "a field value")
    text = cur.match(re.compile(r"[^,\]]+"), "a field value").strip()
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return text
        # a finite decimal past a double's range reads as inf: kept as text, not an infinity
        overflowed = math.isinf(number) and "inf" not in text.lower()
        return text if overflowed else number


def read_fields(cur: Cursor) -> Fields:
    """`[KEY=VALUE, ...]`, if the line has it: each value with the column of its key."""
    fields: Fields = {}
    if not cur.optional("["):
        return fields
    if cur.optional("]"):
        return fields
    while True:
        cur.skip_ws()
        pos = cur.pos
        key = cur.match(IDENT, "a field name")
        if key in fields:  # MIGraphX prints each once; a second would silently win
            raise cur.error(f"field `{key}` is given twice", pos)
        cur.expect("=", f"after field `{key}`")
        fields[key] = (_field_value(cur), pos)
        if cur.optional("]"):
            return fields
        cur.expect(",", "or `]` in the field list")


def read_literal_values(cur: Cursor) -> list[tuple[str, int]] | None:
    """`{V, ...}` of a `@literal`: each number as text, typed by the importer; None for
    `{ ... }`, the values MIGraphX's printer leaves out of a large literal."""
    elided = _ELIDED.match(cur.text, cur.pos)
    if elided is not None:
        cur.pos = elided.end()
        return None
    return _tokens(cur, "{}", _NUMBER, "the literal values", "a number in the literal")


_ELIDED = re.compile(r"\s*\{\s*\.\.\.\s*\}")
