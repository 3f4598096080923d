"""`convcanon import-migraphx`: MIGraphX's printed program (`program::print`) -> migraphx MLIR.

Line grammar, one instruction per line, optional `module: "name"` headers:
    NAME = @param:PNAME -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @literal{V, ...} -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = OP[FIELD=VALUE,...](ARG,...) -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @return(ARG,...)[, target_id=N]
Names may carry `mod:sub:` prefixes; they are matched whole. Params become the function's
arguments in order of appearance. Every declared result shape is checked against the op's
computed one, every literal value against its type (range, integrality), every len and stride
against int64, and every failure names its line.

Integers become sign-explicit, as MIGraphX's MLIR emitter writes them (`int8_type` -> si8,
`uint8_type` -> ui8, `bool_type` -> si8). MIGraphX types a comparison bool; rocMLIR's comparison
keeps its operands' type, so `greater(a, b) -> bool_type` imports as greater + convert to si8.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import gc
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from convcanon.diagnostics import MAX_SPLAT_ELEMENTS, ConvcanonError, SourceLoc, UsageError
from convcanon.fileio.output_file import check_output_path, write_output
from convcanon.fileio.reading import read_input
from convcanon.migraphx import layout
from convcanon.migraphx.boundary_ops import LiteralOp
from convcanon.migraphx.declared_strides import reconcile_strides, strict_by_default
from convcanon.migraphx.dialect import Migraphx
from convcanon.migraphx.op_base import MigraphxOp, i64, i64_array
from convcanon.migraphx.ops import IMPORTER_TRUSTED, ComparisonOp, ConvertOp
from convcanon.migraphx.shaped_type import ShapedType, numpy_dtype


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


def _program_ops() -> dict[str, tuple[type[MigraphxOp], tuple[str, ...]]]:
    """Instruction name -> (op class, fields that become attributes), as each op declares them."""
    table: dict[str, tuple[type[MigraphxOp], tuple[str, ...]]] = {}
    for cls in Migraphx.operations:
        name = cls.program_name() if issubclass(cls, MigraphxOp) else None
        if name is not None and issubclass(cls, MigraphxOp):
            table[name] = (cls, cls.PROGRAM_FIELDS)
    return table


OP_FIELDS = _program_ops()
# Fields MIGraphX prints that carry no semantics here (the result type says it all).
IGNORED_FIELDS = frozenset({"target_type", "use_dynamic_same_auto_pad", "out_dyn_dims"})


class _Cursor:
    """A scanner over one line that reports `file:line:col: error: expected ...`."""

    def __init__(self, text: str, filename: str, line: int):
        self.text, self.filename, self.line, self.pos = text, filename, line, 0

    def error(self, message: str, pos: int | None = None) -> ConvcanonError:
        col = (self.pos if pos is None else pos) + 1
        return ConvcanonError(message, SourceLoc(self.filename, self.line, col))

    def location(self, pos: int) -> FileLineColLoc:
        """Where an op came from, so later errors (verifier, migraphx-to-tosa) point into the
        program; locations are never printed."""
        return FileLineColLoc.new((_file_attr(self.filename), IntAttr(self.line), _column(pos + 1)))

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


_NAME = re.compile(r"[^\s=(),\[\]{}]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?\d+")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)", re.I)
_HEADER = re.compile(r'^module:\s*"?([^"]*)"?\s*$')


INT64_LIMIT = 1 << 63
MAX_NUMBER_CHARS = 400  # longer numbers are hostile (Python's int() stops at 4300 digits)


def _bounded_int(cur: _Cursor, what: str) -> int:
    cur.skip_ws()
    pos = cur.pos
    text = cur.match(_INT, f"an integer in {what}")
    if len(text) > MAX_NUMBER_CHARS:
        raise cur.error(f"integer of {len(text)} digits in {what}", pos)
    value = int(text)
    if not -INT64_LIMIT <= value < INT64_LIMIT:
        raise cur.error(f"{text} in {what} does not fit in int64", pos)
    return value


def _int_list(cur: _Cursor, what: str) -> list[int]:
    cur.expect("{", f"to start {what}")
    values: list[int] = []
    if not cur.optional("}"):
        values.append(_bounded_int(cur, what))
        while cur.optional(","):
            values.append(_bounded_int(cur, what))
        cur.expect("}", f"to end {what}")
    return values


@dataclass
class _Shape:
    type_name: str
    lens: list[int]
    strides: list[int]


_SHAPE_TEXT = re.compile(
    r"\s*->\s*([A-Za-z_]\w*),\s*\{((?:\s*\d{1,18}\s*,)*\s*\d{1,18}\s*)?\},\s*"
    r"\{((?:\s*\d{1,18}\s*,)*\s*\d{1,18}\s*)?\}(?:,\s*target_id=\d+)?\s*$"
)


def _shape(cur: _Cursor) -> _Shape:
    """`-> TYPE, {LENS}, {STRIDES}[, target_id=N]` to the end of the line."""
    fast = _SHAPE_TEXT.match(cur.text, cur.pos)  # the common, well-formed line: one regex
    if fast is not None and fast.group(1) in TYPE_NAMES:
        cur.pos = len(cur.text)
        lens = [int(v) for v in fast.group(2).split(",")] if fast.group(2) else []
        strides = [int(v) for v in fast.group(3).split(",")] if fast.group(3) else []
        return _Shape(fast.group(1), lens, strides)
    cur.expect("->", "before the result shape")
    cur.skip_ws()
    pos = cur.pos
    type_name = cur.match(_IDENT, "a MIGraphX type name (e.g. float_type)")
    if type_name not in TYPE_NAMES:
        close = difflib.get_close_matches(type_name, TYPE_NAMES, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise cur.error(f"unknown MIGraphX type `{type_name}`{hint}", pos)
    cur.expect(",", "after the type name")
    lens = _int_list(cur, "the lens")
    cur.expect(",", "between lens and strides")
    strides = _int_list(cur, "the strides")
    _target_id(cur)
    return _Shape(type_name, lens, strides)


def _target_id(cur: _Cursor) -> None:
    if cur.optional(","):
        cur.expect("target_id", "(the only field after the shape)")
        cur.expect("=", "after target_id")
        cur.match(_INT, "an integer target id")
    if not cur.at_end():
        raise cur.error(f"unexpected text at end of line: `{cur.text[cur.pos :]}`")


def _args(cur: _Cursor) -> list[tuple[str, int]]:
    cur.expect("(", "to start the argument list")
    names: list[tuple[str, int]] = []
    if not cur.optional(")"):
        while True:
            cur.skip_ws()
            start = cur.pos
            names.append((cur.match(_NAME, "an instruction name"), start))
            if cur.optional(")"):
                break
            cur.expect(",", "or `)` in the argument list")
    return names


def _field_value(cur: _Cursor) -> list[int] | int | float | str:
    cur.skip_ws()
    if cur.peek("{"):
        return _int_list(cur, "a field value")
    text = cur.match(re.compile(r"[^,\]]+"), "a field value").strip()
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _fields(cur: _Cursor) -> dict[str, tuple[list[int] | int | float | str, int]]:
    fields: dict[str, tuple[list[int] | int | float | str, int]] = {}
    if not cur.optional("["):
        return fields
    if cur.optional("]"):
        return fields
    while True:
        cur.skip_ws()
        pos = cur.pos
        key = cur.match(_IDENT, "a field name")
        cur.expect("=", f"after field `{key}`")
        fields[key] = (_field_value(cur), pos)
        if cur.optional("]"):
            return fields
        cur.expect(",", "or `]` in the field list")


@dataclass
class _Program:
    filename: str
    params: list[tuple[str, ShapedType]] = field(default_factory=lambda: [])
    values: dict[str, SSAValue] = field(default_factory=lambda: {})
    block: Block = field(default_factory=Block)
    returned: list[SSAValue] | None = None
    return_loc: FileLineColLoc | None = None

    def lookup(self, cur: _Cursor, name: str, pos: int) -> SSAValue:
        value = self.values.get(name)
        if value is None:
            close = difflib.get_close_matches(name, list(self.values), n=1, cutoff=0.5)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise cur.error(f"`{name}` names no earlier instruction{hint}", pos)
        return value


_SHAPED_CACHE: dict[tuple[str, tuple[int, ...], tuple[int, ...]], ShapedType] = {}


def _shaped(cur: _Cursor, shape: _Shape) -> ShapedType:
    key = (shape.type_name, tuple(shape.lens), tuple(shape.strides))
    if strict_by_default() and len(shape.lens) == len(shape.strides):
        reason = layout.check_layout(shape.lens, shape.strides)
        if reason is not None:
            raise cur.error(f"shape {shape.lens}, {shape.strides} is not representable: {reason}")
    cached = _SHAPED_CACHE.get(key)
    if cached is not None:
        return cached
    element_type = TYPE_NAMES[shape.type_name]()
    if len(shape.lens) != len(shape.strides):
        raise cur.error(
            f"{len(shape.lens)} lens but {len(shape.strides)} strides (one stride per dim)"
        )
    if any(n < 0 for n in shape.lens) or any(s < 0 for s in shape.strides):
        raise cur.error(f"lens {shape.lens} and strides {shape.strides} must be non-negative")
    if any(n < 1 for n in shape.lens):
        raise cur.error(f"lens {shape.lens} must be >= 1")
    if layout.flat_size(shape.lens, shape.strides) >= INT64_LIMIT:
        raise cur.error(f"shape {shape.lens}, {shape.strides} spans more than 2^63 elements")
    ty = ShapedType(shape.lens, shape.strides, element_type)
    if len(_SHAPED_CACHE) < 4096:
        _SHAPED_CACHE[key] = ty
    return ty


def _dense(tensor: TensorType, values: list[int] | list[float]) -> DenseIntOrFPElementsAttr:
    """Dense attribute of a tensor type known only at run time (int or float element)."""
    return DenseIntOrFPElementsAttr.from_list(tensor, values)  # pyright: ignore[reportCallIssue, reportArgumentType]


def _literal_attr(
    cur: _Cursor, values: list[tuple[str, int]], ty: ShapedType, type_name: str
) -> DenseIntOrFPElementsAttr:
    """Literal values (memory order when they fill the buffer, or one splat value) -> dense
    attribute of the logical value in standard order; every value checked against the type."""
    tensor = TensorType(ty.element_type, ty.lens)
    if math.prod(ty.lens) > MAX_SPLAT_ELEMENTS:  # the dense attribute holds every element
        raise cur.error(
            f"literal of {math.prod(ty.lens)} elements is over the limit of "
            f"{MAX_SPLAT_ELEMENTS} (its dense attribute would hold every element)"
        )
    dtype = numpy_dtype(ty.element_type)
    items = [_literal_value(cur, text, pos, dtype, type_name) for text, pos in values]
    buffer = np.asarray(items, dtype=dtype if dtype.kind in "iub" else np.float64)
    if len(values) != 1:
        if len(values) != ty.flat_size():
            raise cur.error(
                f"literal has {len(values)} values but its shape holds {ty.flat_size()} (or 1)"
            )
        buffer = layout.read_buffer(buffer, ty.lens, ty.stride_values).reshape(-1)
    return _dense(tensor, buffer.tolist())


def _literal_value(
    cur: _Cursor, text: str, pos: int, dtype: np.dtype, type_name: str
) -> int | float:
    """One literal value of `dtype`, or a diagnostic when the type cannot hold it."""
    if len(text) > MAX_NUMBER_CHARS:
        raise cur.error(f"number of {len(text)} characters in the literal", pos)
    if dtype.kind in "iub":
        try:
            value: int = int(text)
        except ValueError:
            number = float(text)
            if not math.isfinite(number) or number != int(number):
                raise cur.error(f"`{text}` is not an integer, as {type_name} needs", pos) from None
            value = int(number)
        low, high = (0, 1) if dtype == np.bool_ else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if not low <= value <= high:
            raise cur.error(f"{text} is out of range for {type_name} [{low}, {high}]", pos)
        return value
    number = float(text)
    if math.isfinite(number):
        with np.errstate(all="ignore"):
            rounded = np.asarray(number).astype(dtype)
        if not np.isfinite(rounded.astype(np.float64)):
            raise cur.error(f"{text} is out of range for {type_name}", pos)
    return number


def _literal_values(cur: _Cursor) -> list[tuple[str, int]]:
    cur.expect("{", "to start the literal values")
    values: list[tuple[str, int]] = []
    if not cur.optional("}"):
        while True:
            cur.skip_ws()
            pos = cur.pos
            values.append((cur.match(_NUMBER, "a number in the literal"), pos))
            if cur.optional("}"):
                break
            cur.expect(",", "or `}` in the literal values")
    return values


@functools.lru_cache(maxsize=1024)
def _int_attribute(value: tuple[int, ...] | int) -> Attribute:
    """Attributes are immutable: one per distinct field value (a program repeats a few)."""
    return i64_array(value) if isinstance(value, tuple) else i64(value)


def _attributes(
    cur: _Cursor, op_name: str, fields: dict[str, tuple[list[int] | int | float | str, int]]
) -> dict[str, Attribute]:
    _, wanted = OP_FIELDS[op_name]
    attributes: dict[str, Attribute] = {}
    for key, (value, pos) in fields.items():
        if key in IGNORED_FIELDS or (key == "steps" and value == []):
            continue
        if key not in wanted:
            expected = ", ".join(wanted) or "none"
            raise cur.error(f"unknown field `{key}` for `{op_name}` (fields: {expected})", pos)
        if not isinstance(value, list | int):
            raise cur.error(f"field `{key}` of `{op_name}` must be an integer or {{list}}", pos)
        try:
            attributes[key] = _int_attribute(tuple(value) if isinstance(value, list) else value)
        except VerifyException as err:  # e.g. an integer beyond i64
            raise cur.error(f"field `{key}`: {str(err).splitlines()[0]}", pos) from None
    return attributes


# `NAME = op(ARG, ...) -> TYPE, {LENS}, {STRIDES}`: most lines of a real program. A line that
# matches is imported without the cursor; anything else (or any error) takes the general path.
_PLAIN_OP = re.compile(r"\s*([^\s=(),\[\]{}]+)\s*=\s*([A-Za-z_]\w*)\(([^()\[\]{}]*)\)")


def _plain_instruction(program: _Program, cur: _Cursor) -> bool:
    """Import a field-free op line in one regex match; False leaves it to `_instruction`."""
    found = _PLAIN_OP.match(cur.text)
    if found is None:
        return False
    name, op_name, arg_text = found.groups()
    entry = OP_FIELDS.get(op_name)
    shape = _SHAPE_TEXT.match(cur.text, found.end())
    if entry is None or shape is None or shape.group(1) not in TYPE_NAMES:
        return False
    operands: list[SSAValue] = []
    if arg_text.strip():
        for arg in arg_text.split(","):
            value = program.values.get(arg.strip())
            if value is None:
                return False
            operands.append(value)
    cls = entry[0]
    if issubclass(cls, ComparisonOp):
        return False  # may need the bool convert
    lens = [int(v) for v in shape.group(2).split(",")] if shape.group(2) else []
    strides = [int(v) for v in shape.group(3).split(",")] if shape.group(3) else []
    cur.pos = len(cur.text)  # where the general path reports a bad shape
    ty = _shaped(cur, _Shape(shape.group(1), lens, strides))
    op = cls.create(operands=operands, result_types=[ty])
    _add(program, cur, op, found.start(2))
    program.values[name] = op.results[0]
    return True


def _instruction(program: _Program, cur: _Cursor) -> None:
    if _plain_instruction(program, cur):
        return
    cur.skip_ws()
    name = cur.match(_NAME, "an instruction name")
    cur.expect("=", "after the instruction name")
    cur.skip_ws()
    op_pos = cur.pos
    if cur.optional("@param:"):
        cur.match(_NAME, "a parameter name")
        ty = _shaped(cur, _shape(cur))
        program.params.append((name, ty))
        arg = program.block.insert_arg(ty, len(program.block.args))
        arg.name_hint = f"arg{len(program.params) - 1}"
        program.values[name] = arg
        return
    if cur.optional("@return"):
        if program.returned is not None:
            raise cur.error("a second @return (one function per program)", op_pos)
        args = _args(cur)
        _target_id(cur)
        program.returned = [program.lookup(cur, a, p) for a, p in args]
        program.return_loc = cur.location(op_pos)
        return
    if cur.optional("@literal"):
        values = _literal_values(cur)
        shape = _shape(cur)
        ty = _shaped(cur, shape)
        op = LiteralOp(_literal_attr(cur, values, ty, shape.type_name), ty)
    else:
        op_name = cur.match(_IDENT, "an op name or @param/@literal/@return")
        if op_name not in OP_FIELDS:
            close = difflib.get_close_matches(op_name, OP_FIELDS, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise cur.error(f"unknown MIGraphX op `{op_name}`{hint}", op_pos)
        fields = _fields(cur)
        args = _args(cur)
        operands = [program.lookup(cur, a, p) for a, p in args]
        ty = _shaped(cur, _shape(cur))
        cls, _ = OP_FIELDS[op_name]
        attributes = _attributes(cur, op_name, fields)
        if issubclass(cls, ComparisonOp) and operands and _is_bool_result(operands[0], ty):
            # MIGraphX types a comparison bool; rocMLIR's op keeps the operand type: compare,
            # then convert, as MIGraphX's own MLIR emitter does
            compare_type = ShapedType(ty.lens, ty.stride_values, _element(operands[0]))
            _add(program, cur, cls(operands, compare_type, attributes), op_pos)
            op = ConvertOp([program.block.last_op.results[0]], ty)  # type: ignore[union-attr]
        else:
            op = cls.create(operands=operands, result_types=[ty], attributes=attributes)
    _add(program, cur, op, op_pos)
    program.values[name] = op.results[0]


def _element(value: SSAValue) -> Attribute:
    ty = value.type
    return ty.element_type if isinstance(ty, ShapedType) else ty


def _is_bool_result(operand: SSAValue, result: ShapedType) -> bool:
    return result.element_type == TYPE_NAMES["bool_type"]() != _element(operand)


def _add(program: _Program, cur: _Cursor, op: Operation, op_pos: int) -> None:
    op.location = cur.location(op_pos)
    try:
        if type(op) in IMPORTER_TRUSTED and isinstance(op, MigraphxOp):
            op.verify_semantics()  # we built its attributes: only its own checks can fail
        else:
            op.verify()
    except VerifyException as err:
        raise cur.error(str(err).strip().splitlines()[0], op_pos) from None
    program.block.add_op(op)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector rescans every op built so far each time it runs: a quarter of
    the import time of a 10^5-instruction program. The IR has no garbage to collect meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check_function_name(name: str) -> None:
    """A symbol is any text, but not empty, and it is printed: a name from argv that is not
    UTF-8 (lone surrogates in Python) has no MLIR spelling."""
    if not name:
        raise UsageError("import-migraphx: the function name (--name) is empty")
    try:
        name.encode()
    except UnicodeEncodeError:
        raise UsageError(
            f"import-migraphx: the function name (--name) is not UTF-8 text: {name!r}"
        ) from None


def import_program(text: str, filename: str, name: str = "main") -> ModuleOp:
    """Translate a printed MIGraphX program into a module with one `func.func @name`."""
    _check_function_name(name)
    program = _Program(filename)
    with _collector_paused():
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip()
            if not line.strip() or _HEADER.match(line.strip()):
                continue
            _instruction(program, _Cursor(line, filename, number))
    if program.returned is None:
        raise ConvcanonError("the program has no @return", SourceLoc(filename))
    results = program.returned
    returned = func.ReturnOp(*results)
    if program.return_loc is not None:
        returned.location = program.return_loc
    program.block.add_op(returned)
    function = func.FuncOp(
        name,
        ([t for _, t in program.params], [r.type for r in results]),
        Region(program.block),
    )
    module = ModuleOp([function])
    try:  # every op was verified as it was added; the function's own checks remain
        function.verify(verify_nested_ops=False)
        returned.verify()
    except VerifyException as err:
        raise ConvcanonError(str(err).strip().splitlines()[0], SourceLoc(filename)) from None
    reconcile_strides(module, filename)
    return module


def import_command(input: str, output: str = "-", name: str = "main") -> int:
    """CLI body: read, import, print; nothing is written unless the import succeeded."""
    from convcanon.migraphx.io import print_file

    check_output_path(input, output)
    filename, text = read_input(input)
    result = print_file(import_program(text, filename, name))
    write_output(output, result)
    return 0
