"""An HLO input file as the passes see it: the parsed module plus what printing it back needs."""

from __future__ import annotations

import io
import re

from convcanon.diagnostics import ConvcanonError, SourceLoc, in_file, lines_before, start_column
from convcanon.fileio.module_input import ModuleFromBytecode
from convcanon.fileio.stdout import encode_text
from convcanon.hlo.context import (
    error_from_mlir,
    ir,
    make_context,
    op_positions,
    parse_module,
    print_module,
    source_loc,
)
from convcanon.ir_kind import PLAIN_ASM, AsmFlags


class HloFile:
    """A parsed module, the name its diagnostics use, and how to print it back: with locations
    and/or in generic form when the input was, so an unchanged module prints back unchanged.

    A plain class, not a dataclass: generating one's methods costs ~0.4 ms of every convcanon-opt
    start-up, and no caller compares or prints these."""

    __slots__ = ("module", "filename", "debug_info", "generic", "text", "verified", "_positions")

    def __init__(
        self,
        module: ir.Module,
        filename: str,
        debug_info: bool,
        generic: bool = False,
        text: str = "",
        verified: bool = False,
    ) -> None:
        self.module = module
        self.filename = filename
        self.debug_info = debug_info
        self.generic = generic
        self.text = text  # the source, to find where an op carrying a debug-info location is
        # Known valid as it stands (parsing verifies): a pass then verifies only the ops it creates.
        self.verified = verified
        self._positions: dict[str, list[tuple[int, int]]] = {}

    def positions_of(self, op_names: list[str]) -> list[tuple[int, int] | None]:
        """`position_of` each op of a pre-order list, given by name: the i-th op of a name is
        the i-th of that name in the module."""
        if not self.debug_info or not self.text:
            return [None] * len(op_names)
        seen: dict[str, int] = {}
        positions = []
        for name in op_names:
            index = seen[name] = seen.get(name, -1) + 1
            positions.append(self.position_of(name, index))
        return positions

    def position_of(self, op_name: str, index: int) -> tuple[int, int] | None:
        """(line, col) in the .mlir text of the `index`-th `op_name` op, when its location is a
        debug-info one (else the location already is the position and this returns None).

        Ask before rewriting: the positions are counted in the module as parsed."""
        if not self.debug_info or not self.text:
            return None
        if op_name not in self._positions:
            found = op_positions(self.text, op_name)
            if len(found) != len(_ops_named(self.module, op_name)):
                found = []  # the text and the module disagree (e.g. ops outside the grammar)
            self._positions[op_name] = found
        positions = self._positions[op_name]
        return positions[index] if index < len(positions) else None

    def loc_of(self, op: ir.Operation) -> SourceLoc:
        """Where `op` is, with the user's source when the input carries debug info."""
        position = None
        if self.debug_info and self.text:
            same = _ops_named(self.module, op.name)
            index = next((i for i, o in enumerate(same) if o == op), None)
            position = None if index is None else self.position_of(op.name, index)
        return source_loc(op.location, self.filename, position=position)


def _ops_named(module: ir.Module, op_name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == op_name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


# The first op of a generic-form file is quoted: `"builtin.module"() ...` or `"func.func"() ...`
# (after any `#loc` alias lines and comments).
# Each comment or alias is a whole line: a comment that quotes an op is not the module's start.
_GENERIC_START = re.compile(r'\A(?:\s*(?://|#[\w.$-]+\s*=)[^\n]*(?:\n|\Z))*\s*"[\w.]+"\(')


def reading_context() -> ir.Context:
    """The context the child that reads bytecode first reads it in (`formats.read_child`): any
    dialect, since the bytes may hold either half's module; this process then parses what the
    child read in its own context, which knows the dialects it was asked to."""
    return make_context(allow_unregistered=True)


def parse_checked_bytecode(data: bytes, filename: str) -> ir.Module:
    """Plain MLIR bytecode that the reading child has read without failing, parsed here: ops
    of unknown dialects only under `--allow-unregistered-dialect`, as for text (the child
    reads any, since it cannot tell which half's module it holds)."""
    try:
        return ir.Module.parse(data, make_context())
    except ir.MLIRError as err:  # the child read it: an op of a dialect we do not know
        raise error_from_mlir(err, filename, "cannot read the MLIR bytecode") from None


def parse_file_text(text: str, filename: str) -> HloFile:
    """A module from its text. Text read from bytecode prints back without locations, as
    mlir-opt prints a bytecode input (its locations stay for diagnostics, none in the file)."""
    if isinstance(text, ModuleFromBytecode) and text.bytecode:
        return HloFile(
            parse_checked_bytecode(text.bytecode, filename),
            filename,
            False,
            text=text,
            verified=True,
        )
    generic = _GENERIC_START.match(text) is not None
    module = parse_module(text, filename)
    debug_info = "loc(" in text and not isinstance(text, ModuleFromBytecode)
    return HloFile(module, filename, debug_info, generic, text, verified=True)


def print_file(
    parsed: HloFile,
    *,
    debug_info: bool | None = None,
    generic: bool | None = None,
    large_elements_limit: int | None = None,
    flags: AsmFlags = PLAIN_ASM,
) -> str:
    """Print as parsed (locations and generic form kept), or as `--mlir-print-debuginfo` /
    `--mlir-print-op-generic` / `--mlir-elide-elementsattrs-if-larger` and `flags` ask. Text
    positions print with the input's name, as mlir-opt."""
    with_locations = parsed.debug_info if debug_info is None else debug_info
    text = print_module(
        parsed.module,
        debug_info=with_locations,
        generic=parsed.generic if generic is None else generic,
        large_elements_limit=large_elements_limit,
        flags=flags,
    )
    # The parser names the buffer "-": ops the input gives no location of their own print as
    # `loc("-":L:C)` (all of them, or some where only some ops carry one), where mlir-opt
    # names the file. Unless the input itself writes that name, each such location is ours.
    if with_locations and (not parsed.debug_info or '"-":' not in parsed.text):
        text = _named_positions(text, parsed.filename, flags.pretty_locations)
    return text


def _named_positions(text: str, filename: str, pretty: bool) -> str:
    """`text` with each position in the parser's buffer "-" named as the input file, at its
    line in the file (a split chunk's lines are the whole file's). A pretty location prints
    the name raw (`-:3:4`, after a space, `(`, `[` or `,`), a parseable one quoted."""
    before, column = lines_before(), start_column()
    if not pretty and not before and column == 1:
        return text.replace('loc("-":', f"loc({_quoted(filename)}:")
    if pretty:
        pattern, name = r"(?<=[\s(\[,])-:(\d+):(\d+)", filename
    else:
        pattern, name = r'loc\("-":(\d+):(\d+)', f"loc({_quoted(filename)}"

    def named(match: re.Match[str]) -> str:
        line = int(match[1])
        if line:
            return "{}:{}:{}".format(name, *in_file(line, int(match[2])))
        # the implicit module: mlir-opt puts a later chunk's where the chunk starts
        return f"{name}:{before + 1}:{column}" if column > 1 else f"{name}:0:0"

    return re.sub(pattern, named, text)


def _quoted(name: str) -> str:
    """`name` as MLIR prints a string: printable ASCII as is, `\\` doubled, every other byte
    (a quote, UTF-8, a byte of a name that is not UTF-8) as `\\XX`, as mlir-opt prints it."""
    raw = encode_text(name)  # a name from argv: its own bytes
    return '"' + "".join(_ESCAPED[b] for b in raw) + '"'


_ESCAPED = [
    "\\\\" if b == 0x5C else chr(b) if 0x20 <= b < 0x7F and b != 0x22 else f"\\{b:02X}"
    for b in range(256)
]


def verify_roundtrip(parsed: HloFile) -> None:
    """`--verify-roundtrip`, as mlir-opt checks an input's printers and parsers: the module
    printed in generic form with locations, and written as bytecode, each parses back to a
    module that prints the same; else an error at the module."""
    op = parsed.module.operation
    reference = _generic(op)
    allowed = parsed.module.context.allow_unregistered_dialects  # the same for both sides
    bytecode = io.BytesIO()
    op.write_bytecode(bytecode)
    for kind, content in (("textual", reference), ("bytecode", bytecode.getvalue())):
        try:
            again = _generic(parse_back(content, allowed).operation)
        except ir.MLIRError:
            raise ConvcanonError(
                f"'builtin.module' op failed to parse {kind} content back, cannot verify"
                " round-trip.",
                parsed.loc_of(op),
            ) from None
        if again != reference:
            raise ConvcanonError(
                f"'builtin.module' op {kind} roundTrip testing roundtripped module differs"
                f" from reference:\n<<<<<<Reference\n{reference}\n=====\n{again}"
                "\n>>>>>roundtripped",
                parsed.loc_of(op),
            )


def _generic(op: ir.Operation) -> str:
    return str(op.get_asm(print_generic_op_form=True, enable_debug_info=True))


def parse_back(content: str | bytes, allow_unregistered: bool) -> ir.Module:
    """Printed text or bytecode parsed in a fresh context, so that no resource is renamed
    for a name the input's context holds already."""
    return ir.Module.parse(content, make_context(allow_unregistered))


def check_single_root(parsed: HloFile) -> None:
    """`--no-implicit-module`: the input must be one top-level op, and, for convcanon-opt's
    pipelines, a `builtin.module`. MLIR's parser wraps anything else in a module it places at
    line 0; bytecode always holds one op."""
    if isinstance(parsed.text, ModuleFromBytecode):
        return
    location = parsed.module.operation.location
    implicit = (
        isinstance(location, ir.FileLineColLoc)
        and location.filename == "-"
        and location.start_line == 0
    )
    if not implicit:
        return
    ops = list(parsed.module.body.operations)
    if len(ops) != 1:
        raise ConvcanonError(
            f"source must contain a single top-level operation, found: {len(ops)}",
            SourceLoc(parsed.filename),
        )
    raise ConvcanonError(
        f"can't run 'builtin.module' pass manager on '{ops[0].operation.name}' op"
        " (convcanon-opt runs its pipelines on a module)",
        parsed.loc_of(ops[0].operation),
    )
