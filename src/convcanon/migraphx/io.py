"""xDSL text I/O with `file:line:col` errors: parse in a given context and verify, locate ops,
print as MLIR does.

This module loads no dialect; `convcanon.xdsl_io` parses in the context of every half-B dialect.
"""

from __future__ import annotations

import functools
import math
import re
import struct
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.mlir_lexer import MLIRLexer

from convcanon.diagnostics import (
    MAX_SPLAT_ELEMENTS,
    ConvcanonError,
    SourceLoc,
    byte_column,
    in_file,
    offset_loc,
)
from convcanon.fileio.text_checks import check_integer_widths, check_nesting, lex_line

# xDSL 0.75's string-literal regex nests quantifiers, `"(?:[^"\\\n\v\f]+|...)*"`: an
# unterminated string backtracks exponentially (a 60-character line took minutes). The same
# language, one character per step, matches in linear time.
MLIRLexer._unescaped_characters_regex = re.compile(  # pyright: ignore[reportAttributeAccessIssue]
    r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
)


class _Parser(Parser):
    """xDSL's parser, refusing a dense literal that would hold more than `MAX_SPLAT_ELEMENTS`
    elements and more elements than its text has characters: xDSL expands a splat into a Python
    list (~85 bytes an element) once it has read the literal's type, so a 40-byte
    `dense<1.0> : tensor<99999999999xf32>` would take the machine's memory. Checked on the type
    xDSL parsed, every spelling is seen: a type alias, a hex splat `dense<"0x0000803F">`,
    comments between the literal and its type. A literal that lists its elements is as large
    as its text and passes."""

    _dense_at = 0  # where the dense literal being parsed starts

    def _parse_builtin_dense_attr(self) -> DenseIntOrFPElementsAttr:
        self._dense_at = self.lexer.input.content.rfind("dense", 0, self.pos)
        return super()._parse_builtin_dense_attr()

    def _parse_dense_literal_type(self) -> Any:
        literal_type = super()._parse_dense_literal_type()
        self._check_expansion(literal_type, self.pos)
        return literal_type

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> DenseIntOrFPElementsAttr:
        if type is not None:  # typed already: at most the rest of the text is its literal
            self._dense_at = self.pos
            self._check_expansion(type, self.lexer.input.len)
        return super().parse_dense_int_or_fp_elements_attr(type)

    def _parse_generic_operation(self, op_type: type[Operation]) -> Operation:
        """MLIR keeps an op's inherent attributes as properties, so its generic form writes
        them in `<{...}>` (`rocmlir-opt -mlir-print-op-generic`: `"migraphx.softmax"(%0)
        <{axis = 1 : i64}>`). An op we declare with attributes takes them from there, as
        its custom form does (one we do not declare, `out_dyn_dims`, rides along as there),
        and xDSL already moves a declared property out of the attribute dictionary."""
        op = super()._parse_generic_operation(op_type)
        if isinstance(op, IRDLOperation):
            declared = op.get_irdl_definition().properties
            for name in [n for n in op.properties if n not in declared]:
                if name not in op.attributes:
                    op.attributes[name] = op.properties.pop(name)
        return op

    def _check_expansion(self, literal_type: Any, end: int) -> None:
        count = math.prod(literal_type.get_shape())
        if count > MAX_SPLAT_ELEMENTS and count > end - self._dense_at:
            source = self.lexer.input
            raise ConvcanonError(
                f"dense splat of {count} elements is over the limit of {MAX_SPLAT_ELEMENTS} "
                "elements for migraphx/TOSA files",
                offset_loc(source.content, self._dense_at, source.name),
            )


def _parse_error(err: ParseError, filename: str) -> ConvcanonError:
    """xDSL's ParseError -> one `file:line:col: error: message`. Read from the error's span and
    message, not its printed form: when the span reaches into later lines (a type that ends its
    line spans up to the next token) the printed form ends with a caret line, not the message."""
    where = err.span.get_location()
    message = " ".join(line.strip() for line in err.msg.splitlines() if line.strip())
    content, start = err.span.input.content, err.span.start
    col = where.col  # xDSL counts characters; MLIR, bytes
    if isinstance(content, str):
        col = byte_column(content, err.span.input.get_start_of_line(start), start)
    # a split chunk's position in its file
    return ConvcanonError(message or "parse error", SourceLoc(filename, *in_file(where.line, col)))


def _op_lines(text: str, op_name: str) -> list[int]:
    """Lines on which `op_name` appears as an op (xDSL ops carry no location). Inside a function
    body `func.` is the default dialect, so `return` names `func.return`."""
    name = re.escape(op_name)
    if op_name.startswith("func."):
        name = rf"(?:func\.)?{re.escape(op_name.removeprefix('func.'))}"
    pattern = re.compile(rf"(^|[\s=\"]){name}(?:[\s(\"<]|$)")  # $: operands on later lines
    return [
        n for n, line in enumerate(text.split("\n"), 1) if pattern.search(line[: lex_line(line)[1]])
    ]


# `dense<[0xFC00, ...]> : tensor<...xf16>`: MLIR reads a per-element hex float as its bit pattern
# (-inf); xDSL 0.75 reads the integer 64512 and converts it (64500.0). xDSL reads the string form
# `dense<"0x...">` (little-endian bytes) as MLIR does, so per-element hex floats are rewritten to
# it before parsing. xDSL prints inf/nan as per-element hex, which this makes readable again.
# MLIR refuses a hex float wider than the type's bits (`0xFF` for f4E2M1FN) or with a minus sign.
_DENSE_ELEMENTS = re.compile(
    r"dense<(?P<body>[^\"<>]*)>(?P<colon>\s*:\s*)tensor<(?P<shape>(?:\d+x)*)(?P<element>\w+)>"
)
_HEX = re.compile(r"\b0[xX][0-9A-Fa-f]")
_DENSE_TOKEN = re.compile(
    r"\s*(?:(?P<sign>[-+]?)(?P<hex>0[xX][0-9A-Fa-f]+)|(?P<number>[-+]?[0-9.][0-9.eE+-]*)|[\[\],])"
)


@functools.lru_cache(maxsize=64)
def _element_dtype(name: str) -> np.dtype | None:
    from convcanon.migraphx.shaped_type import numpy_dtype

    try:
        return numpy_dtype(Parser(Context(), name).parse_type())  # a builtin type
    except (ParseError, ValueError):
        return None


def _hex_string(body: str, dtype: np.dtype, where: Callable[[int], SourceLoc]) -> str | None:
    """The `"0x..."` bytes of dense elements written as hex bit patterns and/or decimals; a hex
    element MLIR refuses is an error at `where(offset in body)`."""
    import ml_dtypes

    bits: list[int] = []
    pos = 0
    width = int(ml_dtypes.finfo(dtype).bits)  # f4E2M1FN: 4, though numpy stores it in a byte
    while pos < len(body):
        token = _DENSE_TOKEN.match(body, pos)
        if token is None:
            return None if body[pos:].strip() else "0x" + _pack(bits, dtype)
        pos = token.end()
        if token.group("hex") is not None:
            if token.group("sign") == "-":
                message = "hexadecimal float literal should not have a leading minus"
                raise ConvcanonError(message, where(token.start("hex")))
            value = int(token.group("hex"), 16)
            if value >> width:
                message = "hexadecimal float constant out of range for type"
                raise ConvcanonError(message, where(token.start("hex")))
            bits.append(value)
        elif token.group("number") is not None:
            try:
                value_array = np.asarray(float(token.group("number"))).astype(dtype)
            except ValueError:
                return None
            bits.append(int(value_array.view(f"u{dtype.itemsize}")))
    return "0x" + _pack(bits, dtype)


def _pack(bits: list[int], dtype: np.dtype) -> str:
    return np.asarray(bits, dtype=f"<u{dtype.itemsize}").tobytes().hex().upper()


def rewrite_hex_float_elements(text: str, filename: str = "<stdin>") -> str:
    """Per-element hex floats in `dense<...>` -> the equivalent `dense<"0x...">` string form."""
    if "0x" not in text and "0X" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        if _HEX.search(match.group("body")) is None or not match.group("element").startswith(
            ("f", "bf")
        ):
            return match.group(0)
        dtype = _element_dtype(match.group("element"))
        body_at = match.start("body")
        packed = (
            _hex_string(
                match.group("body"), dtype, lambda at: offset_loc(text, body_at + at, filename)
            )
            if dtype is not None
            else None
        )
        if packed is None:
            return match.group(0)
        tail = match.group(0)[match.end("body") - match.start(0) + 1 :]
        return f'dense<"{packed}">{tail}'

    return _DENSE_ELEMENTS.sub(replace, text)


def parse_in_context(context: Context, text: str, filename: str) -> ModuleOp:
    """Parse and verify a module of the dialects loaded in `context`; any failure is a
    ConvcanonError at its location."""
    check_nesting(text, filename)  # xDSL's recursive descent would hit RecursionError
    check_integer_widths(text, filename)  # xDSL computes `1 << width` for the value range
    text = rewrite_hex_float_elements(text, filename)
    parser: Parser | None = None
    try:
        parser = _Parser(context, text, filename)  # lexes the first token: may raise
        module = parser.parse_module()
    except ParseError as err:
        raise _parse_error(err, filename) from None
    except (VerifyException, DiagnosticException, OverflowError, ValueError, struct.error) as err:
        # attribute checks run while parsing (`2 : i1`, an index beyond int64 packed by struct,
        # Python's 4300-digit limit): report where the parser stopped
        message = str(err).strip().splitlines()[0] if str(err).strip() else "invalid input"
        where = parser.pos if parser is not None else 0
        raise ConvcanonError(message, offset_loc(text, where, filename)) from None
    attach_locations(module, text, filename)
    verify_module(module, filename, text)
    return module


def attach_locations(module: ModuleOp, text: str, filename: str) -> None:
    """Give every op without one a `FileLineColLoc` (MLIR's column: the op's first character,
    results included), so later passes can report `file:line:col`. Printing ignores locations."""
    rows = text.split("\n")  # MLIR's lines: \x0c or U+2028 end none
    for op, line in op_lines(module, text).items():
        if line and isinstance(op.location, UnknownLoc):
            row = rows[line - 1]
            # a split chunk's position in its file
            at, col = in_file(line, len(row) - len(row.lstrip()) + 1)
            op.location = FileLineColLoc(StringAttr(filename), IntAttr(at), IntAttr(col))
            name = _RESULT_NAME.match(row)
            if name and op.results:
                _SOURCE_NAMES[op] = name[1]


# The name each op's first result has in the source (`%4`; xDSL keeps no numeric names), for
# messages that name a value.
_SOURCE_NAMES: weakref.WeakKeyDictionary[Operation, str] = weakref.WeakKeyDictionary()
_RESULT_NAME = re.compile(r"\s*(%[\w$.-]+)(?::\d+)?\s*(?:,|=)")


def source_name(op: Operation) -> str | None:
    """The source name of the op's first result (`%4`), when the op was parsed from text."""
    return _SOURCE_NAMES.get(op)


def op_location(op: Operation) -> SourceLoc | None:
    """The op's source position when one was attached (`FileLineColLoc`)."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
    return None


def op_lines(module: ModuleOp, text: str) -> dict[Operation, int]:
    """Each op's source line: the k-th op of a name (walk order = parse order) is on the k-th
    line that names it. xDSL ops carry no location, and one op per line is the printed form."""
    seen: dict[str, int] = {}
    lines_of: dict[str, list[int]] = {}
    result: dict[Operation, int] = {}
    for op in module.walk():
        if op.name not in lines_of:
            lines_of[op.name] = _op_lines(text, op.name)
        index = seen.get(op.name, 0)
        seen[op.name] = index + 1
        lines = lines_of[op.name]
        result[op] = lines[index] if index < len(lines) else 0
    return result


def _first_use_before_definition(
    block: Block, visible: frozenset[SSAValue]
) -> tuple[Operation, int] | None:
    """The first (op, operand index) whose value is not defined above it: later in the block,
    by the op itself, or outside an isolated op. xDSL's parser resolves forward references and
    its verifier checks no dominance; MLIR's checks it, and an interpreter reading values in
    order would meet one it has not computed."""
    defined = set(visible) | set(block.args)
    for op in block.ops:
        for index, operand in enumerate(op.operands):
            if operand not in defined:
                return op, index
        if not op.regions:
            defined.update(op.results)
            continue
        # a copy per op with regions only: one per op made a long block quadratic
        inner = frozenset() if op.has_trait(IsolatedFromAbove) else frozenset(defined)
        for region in op.regions:
            seen = inner
            if len(region.blocks) > 1:  # no CFG here: a block's values count in all its siblings
                seen = inner | {v for b in region.blocks for o in b.ops for v in o.results}
            for nested in region.blocks:
                found = _first_use_before_definition(nested, seen)
                if found is not None:
                    return found
        defined.update(op.results)
    return None


def text_line_loc(filename: str, line: int) -> SourceLoc:
    """A line counted in the text being read, as a line of its file (0: unknown)."""
    return SourceLoc(filename, in_file(line, 0)[0])


def verify_module(module: ModuleOp, filename: str, text: str = "") -> None:
    """Verify every op (values defined before their uses first); report the first failing op's
    message at its line."""
    lines: dict[Operation, int] | None = None
    for block in module.body.blocks:
        found = _first_use_before_definition(block, frozenset())
        if found is not None:
            op, index = found
            raise ConvcanonError(
                f"'{op.name}' op operand #{index} does not dominate this use (it is defined "
                "after it, or is the op's own result)",
                op_location(op) or text_line_loc(filename, op_lines(module, text).get(op, 0)),
            )
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as err:
            message = str(err).strip().splitlines()[0] if str(err).strip() else "invalid op"
            if not message.startswith(op.name):
                message = f"'{op.name}' op {message}"
            where = op_location(op)
            if where is None:
                lines = lines if lines is not None else op_lines(module, text)
                where = text_line_loc(filename, lines.get(op, 0))
            raise ConvcanonError(message, where) from None


def print_file(module: ModuleOp) -> str:
    """Print in custom syntax, as rocMLIR/MLIR would (shaped types stripped inside ops)."""
    import io

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    text = stream.getvalue()
    return text if text.endswith("\n") else text + "\n"
