"""`convcanon import-migraphx`: MIGraphX's printed program (`program::print`) -> migraphx MLIR.

Line grammar (DESIGN 3.3), one instruction per line, optional `module: "name"` headers:
    NAME = @param:PNAME -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @literal{V, ...} -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = OP[FIELD=VALUE,...](ARG,...) -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @return(ARG,...)[, target_id=N]
Names may carry `mod:sub:` prefixes; they are matched whole. Params become the function's
arguments in order of appearance. Every declared result shape is checked against the op's
computed one, and every failure names its line.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
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
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from convcanon.diagnostics import MAX_SPLAT_ELEMENTS, ConvcanonError, SourceLoc
from convcanon.fileio import check_output_path, read_input, write_output
from convcanon.migraphx import layout
from convcanon.migraphx import ops as mx
from convcanon.migraphx.shaped_type import ShapedType, numpy_dtype


def _int(width: int, signed: bool = True) -> Callable[[], Attribute]:
    signedness = Signedness.SIGNLESS if signed else Signedness.UNSIGNED
    return lambda: IntegerType(width, signedness)


# MIGraphX type names. bool_type is i8, as rocMLIR represents MIGraphX booleans.
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

# op name -> (op class, fields that become attributes)
OP_FIELDS: dict[str, tuple[type[mx.MigraphxOp], tuple[str, ...]]] = {
    **{cls.name.removeprefix("migraphx."): (cls, ()) for cls in mx.ELEMENTWISE_BINARY},
    **{cls.name.removeprefix("migraphx."): (cls, ()) for cls in mx.ELEMENTWISE_UNARY},
    **{cls.name.removeprefix("migraphx."): (cls, ("axes",)) for cls in mx.REDUCTIONS},
    "contiguous": (mx.ContiguousOp, ()),
    "convert": (mx.ConvertOp, ()),
    "clip": (mx.ClipOp, ()),
    "where": (mx.WhereOp, ()),
    "transpose": (mx.TransposeOp, ("permutation",)),
    "reshape": (mx.ReshapeOp, ("dims",)),
    "broadcast": (mx.BroadcastOp, ("axis", "out_lens")),
    "multibroadcast": (mx.MultiBroadcastOp, ("out_lens",)),
    "slice": (mx.SliceOp, ("axes", "starts", "ends")),
    "softmax": (mx.SoftmaxOp, ("axis",)),
    "dot": (mx.DotOp, ()),
    "convolution": (
        mx.ConvolutionOp,
        ("padding", "stride", "dilation", "group", "padding_mode"),
    ),
}
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
        return FileLineColLoc(StringAttr(self.filename), IntAttr(self.line), IntAttr(pos + 1))

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


_NAME = re.compile(r"[^\s=(),\[\]{}]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?\d+")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)", re.I)
_HEADER = re.compile(r'^module:\s*"?([^"]*)"?\s*$')


def _int_list(cur: _Cursor, what: str) -> list[int]:
    cur.expect("{", f"to start {what}")
    values: list[int] = []
    if not cur.optional("}"):
        values.append(int(cur.match(_INT, f"an integer in {what}")))
        while cur.optional(","):
            values.append(int(cur.match(_INT, f"an integer in {what}")))
        cur.expect("}", f"to end {what}")
    return values


@dataclass
class _Shape:
    type_name: str
    lens: list[int]
    strides: list[int]


def _shape(cur: _Cursor) -> _Shape:
    """`-> TYPE, {LENS}, {STRIDES}[, target_id=N]` to the end of the line."""
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


def _shaped(cur: _Cursor, shape: _Shape) -> ShapedType:
    element_type = TYPE_NAMES[shape.type_name]()
    if len(shape.lens) != len(shape.strides):
        raise cur.error(
            f"{len(shape.lens)} lens but {len(shape.strides)} strides (one stride per dim)"
        )
    reason = layout.check_layout(shape.lens, shape.strides)
    if reason is not None:
        raise cur.error(f"shape {shape.lens}, {shape.strides} is not representable: {reason}")
    return ShapedType(shape.lens, shape.strides, element_type)


def _dense(tensor: TensorType, values: list[int] | list[float]) -> DenseIntOrFPElementsAttr:
    """Dense attribute of a tensor type known only at run time (int or float element)."""
    return DenseIntOrFPElementsAttr.from_list(tensor, values)  # pyright: ignore[reportCallIssue, reportArgumentType]


def _literal_attr(cur: _Cursor, values: list[float], ty: ShapedType) -> DenseIntOrFPElementsAttr:
    """Literal values (memory order when they fill the buffer, or one splat value) -> dense
    attribute of the logical value in standard order."""
    tensor = TensorType(ty.element_type, ty.lens)
    if math.prod(ty.lens) > MAX_SPLAT_ELEMENTS:  # the dense attribute holds every element
        raise cur.error(
            f"literal of {math.prod(ty.lens)} elements is over the limit of "
            f"{MAX_SPLAT_ELEMENTS} (its dense attribute would hold every element)"
        )
    buffer = np.asarray(values, dtype=np.float64)
    if len(values) != 1:
        if len(values) != ty.flat_size():
            raise cur.error(
                f"literal has {len(values)} values but its shape holds {ty.flat_size()} (or 1)"
            )
        buffer = layout.read_buffer(buffer, ty.lens, ty.stride_values).reshape(-1)
    integral = numpy_dtype(ty.element_type).kind in "iub"
    return _dense(tensor, buffer.astype(np.int64 if integral else np.float64).tolist())


def _literal_values(cur: _Cursor) -> list[float]:
    cur.expect("{", "to start the literal values")
    values: list[float] = []
    if not cur.optional("}"):
        while True:
            values.append(float(cur.match(_NUMBER, "a number in the literal")))
            if cur.optional("}"):
                break
            cur.expect(",", "or `}` in the literal values")
    return values


def _attributes(
    cur: _Cursor, op_name: str, fields: dict[str, tuple[list[int] | int | float | str, int]]
) -> dict[str, Attribute]:
    _, wanted = OP_FIELDS[op_name]
    attributes: dict[str, Attribute] = {}
    for key, (value, pos) in fields.items():
        if key in IGNORED_FIELDS:
            continue
        if key not in wanted:
            expected = ", ".join(wanted) or "none"
            raise cur.error(f"unknown field `{key}` for `{op_name}` (fields: {expected})", pos)
        if not isinstance(value, list | int):
            raise cur.error(f"field `{key}` of `{op_name}` must be an integer or {{list}}", pos)
        try:
            attributes[key] = mx.i64_array(value) if isinstance(value, list) else mx.i64(value)
        except VerifyException as err:  # e.g. an integer beyond i64
            raise cur.error(f"field `{key}`: {str(err).splitlines()[0]}", pos) from None
    return attributes


def _instruction(program: _Program, cur: _Cursor) -> None:
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
        ty = _shaped(cur, _shape(cur))
        op = mx.LiteralOp(_literal_attr(cur, values, ty), ty)
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
        op = cls(operands, ty, _attributes(cur, op_name, fields))
    op.location = cur.location(op_pos)
    try:
        op.verify()
    except VerifyException as err:
        raise cur.error(str(err).strip().splitlines()[0], op_pos) from None
    program.block.add_op(op)
    program.values[name] = op.results[0]


def import_program(text: str, filename: str, name: str = "main") -> ModuleOp:
    """Translate a printed MIGraphX program into a module with one `func.func @name`."""
    program = _Program(filename)
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
    try:
        module.verify()
    except VerifyException as err:
        raise ConvcanonError(str(err).strip().splitlines()[0], SourceLoc(filename)) from None
    return module


def import_command(input: str, output: str = "-", name: str = "main") -> int:
    """CLI body: read, import, print; nothing is written unless the import succeeded."""
    from convcanon.migraphx.io import print_file

    check_output_path(input, output)
    filename, text = read_input(input)
    result = print_file(import_program(text, filename, name))
    write_output(output, result)
    return 0
