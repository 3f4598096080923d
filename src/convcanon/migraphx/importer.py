"""`convcanon import-migraphx`: MIGraphX's printed program (`program::print`) -> migraphx MLIR.

Line grammar, one instruction per line, optional `module: "name"` headers:
    NAME = @param:PNAME -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @literal{V, ...} -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @literal{ ... } -> ...   (values left out: an argument of the function, warned)
    NAME = OP[FIELD=VALUE,...](ARG,...) -> TYPE, {LENS}, {STRIDES}[, target_id=N]
    NAME = @return(ARG,...)[, target_id=N]
each optionally ending in ` # SYMBOLS` (`--debug-symbols`: the ONNX nodes, ignored).
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
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FloatAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from convcanon.diagnostics import (
    MAX_SPLAT_ELEMENTS,
    ConvcanonError,
    SourceLoc,
    UsageError,
    report,
)
from convcanon.fileio.output_file import check_output_path, write_output
from convcanon.fileio.reading import read_input
from convcanon.migraphx import layout
from convcanon.migraphx.boundary_ops import LiteralOp
from convcanon.migraphx.declared_strides import reconcile_strides, strict_by_default
from convcanon.migraphx.dialect import Migraphx
from convcanon.migraphx.op_base import MigraphxOp, i64, i64_array
from convcanon.migraphx.ops import IMPORTER_TRUSTED, ComparisonOp, ConvertOp
from convcanon.migraphx.program_text import (
    IDENT,
    INT64_LIMIT,
    MAX_NUMBER_CHARS,
    MODULE_HEADER,
    NAME,
    TYPE_NAMES,
    Cursor,
    Fields,
    Shape,
    read_args,
    read_fields,
    read_literal_values,
    read_shape,
    read_target_id,
    well_formed_shape,
)
from convcanon.migraphx.shaped_type import ShapedType, numpy_dtype


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
IGNORED_FIELDS = frozenset({"use_dynamic_same_auto_pad", "out_dyn_dims"})


@dataclass
class _Program:
    filename: str
    params: list[tuple[str, ShapedType]] = field(default_factory=lambda: [])
    values: dict[str, SSAValue] = field(default_factory=lambda: {})
    lines: dict[str, int] = field(default_factory=lambda: {})  # where each name is defined
    block: Block = field(default_factory=Block)
    returned: list[SSAValue] | None = None
    return_loc: FileLineColLoc | None = None
    # literals printed without values, each an argument: (name, argument index, where)
    elided: list[tuple[str, int, SourceLoc]] = field(default_factory=lambda: [])

    def define(self, cur: Cursor, name: str, value: SSAValue, pos: int) -> None:
        """Bind instruction `name` (at `pos` of its line) to `value`. MIGraphX prints each name
        once; a second one would silently hide the first (a parameter left unread)."""
        first = self.lines.get(name)
        if first is not None:
            raise cur.error(f"`{name}` is defined twice (first on line {first})", pos)
        self.lines[name] = cur.line
        self.values[name] = value

    def lookup(self, cur: Cursor, name: str, pos: int) -> SSAValue:
        value = self.values.get(name)
        if value is None:
            close = difflib.get_close_matches(name, list(self.values), n=1, cutoff=0.5)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise cur.error(f"`{name}` names no earlier instruction{hint}", pos)
        return value


_SHAPED_CACHE: dict[tuple[str, tuple[int, ...], tuple[int, ...]], ShapedType] = {}


def _shaped(cur: Cursor, shape: Shape) -> ShapedType:
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
    cur: Cursor, values: list[tuple[str, int]], ty: ShapedType, type_name: str
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
    cur: Cursor, text: str, pos: int, dtype: np.dtype, type_name: str
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


@functools.lru_cache(maxsize=1024)
def _int_attribute(value: tuple[int, ...] | int) -> Attribute:
    """Attributes are immutable: one per distinct field value (a program repeats a few)."""
    return i64_array(value) if isinstance(value, tuple) else i64(value)


def _attributes(cur: Cursor, op_name: str, fields: Fields) -> dict[str, Attribute]:
    cls, wanted = OP_FIELDS[op_name]
    attributes: dict[str, Attribute] = {}
    for key, (value, pos) in fields.items():
        if key in IGNORED_FIELDS or cls.PROGRAM_DEFAULTS.get(key) == value:
            continue
        if key not in wanted:
            expected = ", ".join(wanted) or "none"
            raise cur.error(f"unknown field `{key}` for `{op_name}` (fields: {expected})", pos)
        name = cls.PROGRAM_ATTRIBUTES.get(key, key)
        names = cls.PROGRAM_ENUMS.get(key)
        if names is not None:
            attributes[name] = _enum_attribute(cur, op_name, key, value, names, pos)
            continue
        if key in cls.PROGRAM_FLOATS:
            attributes[name] = _f32_attribute(cur, op_name, key, value, pos)
            continue
        if not isinstance(value, list | int):
            raise cur.error(f"field `{key}` of `{op_name}` must be an integer or {{list}}", pos)
        try:
            attributes[name] = _int_attribute(tuple(value) if isinstance(value, list) else value)
        except VerifyException as err:  # e.g. an integer beyond i64
            raise cur.error(f"field `{key}`: {str(err).splitlines()[0]}", pos) from None
    return attributes


def _enum_attribute(
    cur: Cursor, op_name: str, key: str, value: object, names: tuple[str, ...], pos: int
) -> Attribute:
    """A field MIGraphX prints as its enum's name (`mode=max`), or its number (older versions):
    the name, as rocMLIR's string attribute holds it."""
    if isinstance(value, int) and 0 <= value < len(names):
        return StringAttr(names[value])
    if isinstance(value, str) and value in names:
        return StringAttr(value)
    choices = ", ".join(f"{n} ({k})" for k, n in enumerate(names))
    raise cur.error(f"field `{key}` of `{op_name}` must be one of {choices}, got `{value}`", pos)


_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _f32_attribute(cur: Cursor, op_name: str, key: str, value: object, pos: int) -> Attribute:
    """A field MIGraphX holds as a C++ float and prints as a number (`value=0`, `value=-inf`,
    `value=-3.40282e+38`): an f32 attribute of the number rounded to f32, which must be within
    f32's range (or an infinity, or NaN)."""
    overflowed = isinstance(value, str) and _NUMBER_TEXT.fullmatch(value) is not None
    if not overflowed and not isinstance(value, int | float):
        raise cur.error(f"field `{key}` of `{op_name}` must be a number, got `{value}`", pos)
    try:
        number = math.inf if overflowed else float(value)  # type: ignore[arg-type]
    except OverflowError:  # an integer of hundreds of digits
        number, overflowed = math.inf, True
    with np.errstate(over="ignore"):
        rounded = np.float32(number)
    if overflowed or (math.isfinite(number) and not np.isfinite(rounded)):
        shown = str(value) if len(str(value)) <= 40 else f"a number of {len(str(value))} digits"
        raise cur.error(
            f"field `{key}` of `{op_name}`: {shown} is beyond float's range (MIGraphX holds it"
            " as a 32-bit float)",
            pos,
        )
    return FloatAttr(float(rounded), f32)


# `NAME = op(ARG, ...) -> TYPE, {LENS}, {STRIDES}`: most lines of a real program. A line that
# matches is imported without the cursor; anything else (or any error) takes the general path.
_PLAIN_OP = re.compile(r"\s*([^\s=(),\[\]{}]+)\s*=\s*([A-Za-z_]\w*)\(([^()\[\]{}]*)\)")


def _plain_instruction(program: _Program, cur: Cursor) -> bool:
    """Import a field-free op line in one regex match; False leaves it to `_instruction`."""
    found = _PLAIN_OP.match(cur.text)
    if found is None:
        return False
    name, op_name, arg_text = found.groups()
    entry = OP_FIELDS.get(op_name)
    shape = well_formed_shape(cur.text, found.end())
    if entry is None or shape is None:
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
    cur.pos = len(cur.text)  # where the general path reports a bad shape
    ty = _shaped(cur, shape)
    op = cls.create(operands=operands, result_types=[ty])
    _add(program, cur, op, found.start(2))
    program.define(cur, name, op.results[0], found.start(1))
    return True


def _instruction(program: _Program, cur: Cursor) -> None:
    if _plain_instruction(program, cur):
        return
    cur.skip_ws()
    name_pos = cur.pos
    name = cur.match(NAME, "an instruction name")
    cur.expect("=", "after the instruction name")
    cur.skip_ws()
    op_pos = cur.pos
    if cur.optional("@param:"):
        cur.match(NAME, "a parameter name")
        _argument(program, cur, name, _shaped(cur, read_shape(cur)), name_pos)
        return
    if cur.optional("@return"):
        if program.returned is not None:
            raise cur.error("a second @return (one function per program)", op_pos)
        args = read_args(cur)
        read_target_id(cur)
        program.returned = [program.lookup(cur, a, p) for a, p in args]
        program.return_loc = cur.location(op_pos)
        return
    if cur.optional("@literal"):
        values = read_literal_values(cur)
        shape = read_shape(cur)
        ty = _shaped(cur, shape)
        if values is None:  # printed without its values: the function reads it, as a param
            _argument(program, cur, name, ty, name_pos)
            program.elided.append((name, len(program.params) - 1, cur.source_loc(op_pos)))
            return
        op = LiteralOp(_literal_attr(cur, values, ty, shape.type_name), ty)
    else:
        op_name = cur.match(IDENT, "an op name or @param/@literal/@return")
        if cur.text.startswith("::", cur.pos):  # `gpu::code_object`, `hip::hip_copy_literal`
            raise cur.error(
                f"`{op_name}::...` is an op of a compiled program: import the program as"
                " MIGraphX prints it before compiling (`migraphx-driver read MODEL --print`)",
                op_pos,
            )
        if op_name not in OP_FIELDS:
            close = difflib.get_close_matches(op_name, OP_FIELDS, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise cur.error(f"unknown MIGraphX op `{op_name}`{hint}", op_pos)
        fields = read_fields(cur)
        args = read_args(cur)
        operands = [program.lookup(cur, a, p) for a, p in args]
        ty = _shaped(cur, read_shape(cur))
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
    program.define(cur, name, op.results[0], name_pos)


def _argument(program: _Program, cur: Cursor, name: str, ty: ShapedType, pos: int) -> None:
    """The function's next argument, bound to instruction `name`."""
    program.params.append((name, ty))
    arg = program.block.insert_arg(ty, len(program.block.args))
    arg.name_hint = f"arg{len(program.params) - 1}"
    program.define(cur, name, arg, pos)


def _warn_elided(program: _Program) -> None:
    """One warning for the literals printed without their values, at the first of them."""
    if not program.elided:
        return
    (first, index, loc), more = program.elided[0], len(program.elided) - 1
    others = f" and {more} more literal{'s' if more > 1 else ''}" if more else ""
    report(
        "warning",
        loc,
        f"MIGraphX printed `{first}`{others} without values (`{{ ... }}`): "
        f"{'each is an argument' if more else 'it is an argument'}"
        f" of the function in its place (argument {index} for `{first}`), so the"
        " program imports, lowers and runs on values given for it",
    )


def _element(value: SSAValue) -> Attribute:
    ty = value.type
    return ty.element_type if isinstance(ty, ShapedType) else ty


def _is_bool_result(operand: SSAValue, result: ShapedType) -> bool:
    return result.element_type == TYPE_NAMES["bool_type"]() != _element(operand)


def _add(program: _Program, cur: Cursor, op: Operation, op_pos: int) -> None:
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
        header: int | None = None  # the line of the module header read
        for number, raw in enumerate(text.split("\n"), 1):  # as editors number lines
            line = raw.rstrip()
            if not line.strip():
                continue
            if MODULE_HEADER.match(line.strip()):
                if header is not None:  # a submodule (`if`, `loop`), named apart from main
                    where = SourceLoc(filename, number, len(line) - len(line.lstrip()) + 1)
                    raise ConvcanonError(
                        f"a second module (after line {header}): one function per program", where
                    )
                header = number
                continue
            _instruction(program, Cursor(line, filename, number))
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
    _warn_elided(program)
    return module


def import_command(input: str, output: str = "-", name: str = "main") -> int:
    """CLI body: read, import, print; nothing is written unless the import succeeded."""
    from convcanon.migraphx.io import print_file

    check_output_path(input, output)
    filename, text = read_input(input)
    result = print_file(import_program(text, filename, name))
    write_output(output, result)
    return 0
