"""The one place that knows how to get an MLIR context with the HLO dialects, without importing JAX.

JAX builds its contexts from a `DialectRegistry` filled by `_jax_mlir_ext.register_dialects`, then
registers mhlo/chlo/stablehlo; we do the same: start-up pays ~0.15 s, not `import jax`'s ~1.5 s.
Contexts are per call (never global), so two threads can work on two modules at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

# Start-up is paid as the bindings ask: `jaxlib/__init__` (its version: pathlib, subprocess,
# datetime), `logging` (jaxlib's site initializer keeps a logger) and numpy (`jaxlib.mlir.ir`
# registers attribute builders with it, and the mhlo/chlo/stablehlo modules import it) load as
# for any user of jaxlib; nothing here stands in for a module in `sys.modules`
# (bench/RESULTS_import.md: what each stand-in saved). The native dialect modules give the
# register functions and attribute classes without the generated op classes.
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _chlo, _jax_mlir_ext, _mlir, _mlirHlo, _stablehlo

from convcanon.diagnostics import PRINT_OP_ON_DIAGNOSTIC, ConvcanonError, SourceLoc, in_file
from convcanon.fileio.text_checks import (
    check_conv_dimension_indices,
    check_integer_widths,
    check_nesting,
    check_number_digits,
    check_unicode,
    nesting_may_exceed,
)
from convcanon.ir_kind import (
    PLAIN_ASM,
    SINGLE_THREADED,
    UNREGISTERED_DIALECTS,
    AsmFlags,
)


class _PlainContext(ir.Context):
    """An `ir.Context` that skips jaxlib's wrapper `__init__` (it loads every linked dialect):
    jaxlib's `ir.Context` subclasses the native context (tests/hlo/test_hlo_context.py checks
    that a jaxlib upgrade keeps it so)."""

    def __init__(self) -> None:
        super(ir.Context, self).__init__()  # pyright: ignore[reportArgumentType]


@cache
def _registry() -> ir.DialectRegistry:
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    return registry


# Loaded up front because code here builds their ops; any other registered dialect is loaded
# by the parser when a module uses it. Loading all ~25 that jaxlib registers cost ~6 ms a context.
_BUILT_DIALECTS = ("func", "arith", "tensor")


def make_context(allow_unregistered: bool | None = None) -> ir.Context:
    """A fresh context with func, arith, tensor, stablehlo, chlo and mhlo loaded; ops of
    unregistered dialects parse if asked, or under `--allow-unregistered-dialect`; MLIR's
    passes run on one thread under `--mlir-disable-threading`."""
    context = _PlainContext()
    context.append_dialect_registry(_registry())
    for name in _BUILT_DIALECTS:
        context.get_dialect_descriptor(name)  # loads it, without its Python op classes
    _mlirHlo.register_mhlo_dialect(context)
    _chlo.register_dialect(context)
    _stablehlo.register_dialect(context)
    if allow_unregistered is None:
        allow_unregistered = UNREGISTERED_DIALECTS.get()
    context.allow_unregistered_dialects = allow_unregistered
    if SINGLE_THREADED.get():
        context.enable_multithreading(False)
    return context


@cache
def register_hlo_passes() -> None:
    """Register StableHLO's, CHLO's and MHLO's passes with jaxlib's pass registry (once per
    process, from the native modules: the Python dialect modules cost ~0.5 s to import), so a
    pipeline can name them as stablehlo-opt does."""
    _stablehlo.register_stablehlo_passes()
    _mlirHlo.register_mhlo_passes()


@contextmanager
def generic_op_classes() -> Iterator[None]:
    """Within it the bindings wrap ops and attributes in their generic classes instead of first
    importing each dialect's generated op classes (`jaxlib.mlir.dialects.stablehlo` and
    `.builtin`: ~20 ms of convcanon-opt's start-up), which no HLO code here uses. The dialect
    search path is restored after, so later code (JAX) finds its op classes as usual."""
    bindings = _mlir.globals
    saved = bindings.dialect_search_modules
    bindings.dialect_search_modules = []
    try:
        yield
    finally:
        bindings.dialect_search_modules = saved


# A pattern string, compiled on first use (re's cache): most runs never need it.
_LOC_RE = r'loc\("(?P<file>(?:[^"\\]|\\.)*)":(?P<line>\d+):(?P<col>\d+)'


class HloLoc(SourceLoc):
    """A position in the .mlir input plus what a debug-info export says about the op: the user's
    `file:line:col` (JAX's innermost frame) and the op-name path (`jit(f)/conv_general_dilated`).
    `str()` is the .mlir position, so `loc: error: ...` lines keep their shape; `notes()` adds the
    source lines an editor can jump to."""

    __slots__ = ("source", "op_path")

    def __init__(
        self,
        file: str,
        line: int = 0,
        col: int = 0,
        source: SourceLoc | None = None,
        op_path: str = "",
    ) -> None:
        super().__init__(file, line, col)
        self.source = source
        self.op_path = op_path

    def _fields(self) -> tuple[object, ...]:
        return (self.file, self.line, self.col, self.source, self.op_path)

    def notes(self) -> list[str]:
        where = self.source or SourceLoc(self.file, self.line, self.col)
        return [f"{where}: note: in {self.op_path}" if self.op_path else f"{where}: note: here"]


def downcast(location: ir.Location) -> ir.Location:
    """`location` as its own kind (NameLoc, FusedLoc, ...): diagnostics and `op.location` hand
    out the base class."""
    if type(location) is not ir.Location:
        return location
    with location.context:
        return ir.Location.from_attr(location.attr)


MARK_PREFIX = "convcanon.mark."  # a name convcanon wraps a location in (`graph` numbers input ops)


def _unmarked(location: ir.Location) -> ir.Location:
    """`location` past the names convcanon wraps it in: they are not the user's."""
    for _ in range(64):  # a bound keeps a hostile tree cheap
        if not (isinstance(location, ir.NameLoc) and location.name_str.startswith(MARK_PREFIX)):
            break
        location = downcast(location.child_loc)
    return location


def _debug_origin(
    location: ir.Location, input_names: tuple[str, ...]
) -> tuple[ir.FileLineColLoc | None, ir.FileLineColLoc | None, str]:
    """The op's position in the input (a part of a FusedLoc that names the input file, as
    `--input-hlo` writes them), the innermost other file position and the outermost name of a
    NameLoc/CallSiteLoc/FusedLoc tree, as JAX writes them: `name(callsite(frame(file:line:col)
    at caller))`."""
    name = ""
    current: ir.Location | None = location
    for _ in range(64):  # location trees are shallow; a bound keeps a hostile one cheap
        if isinstance(current, ir.NameLoc):
            if not current.name_str.startswith(MARK_PREFIX):
                name = name or current.name_str
            current = _unmarked(downcast(current.child_loc))
        elif isinstance(current, ir.CallSiteLoc):
            current = current.callee
        elif isinstance(current, ir.FusedLoc):
            here: ir.FileLineColLoc | None = None
            found: ir.FileLineColLoc | None = None
            for part in current.locations:
                if isinstance(part, ir.FileLineColLoc) and part.filename in input_names:
                    here = here or part
                    continue
                part_here, file_loc, part_name = _debug_origin(part, input_names)  # pyright: ignore[reportArgumentType]
                here = here or part_here
                name = name or part_name
                found = found or file_loc
            return here, found, name
        elif isinstance(current, ir.FileLineColLoc):
            return None, current, name
        else:
            break
    return None, None, name


def source_loc(
    location: ir.Location | str,
    filename: str,
    line_offset: int = 0,
    position: tuple[int, int] | None = None,
) -> SourceLoc:
    """Map an MLIR location to the user's file (parsed text is named "-" by the bindings).

    A location a debug-info export carries (another file, a name, a call stack) becomes an
    `HloLoc`: the op's position in the input (its location's part that names the input file,
    else the .mlir `position` of the op when the caller knows it), plus the user's source.
    A position in the parsed text (the buffer "-", or `position`) is moved down by the lines of
    the file before a split chunk (`text_starts_at_line`); a location the text writes is not."""
    if isinstance(location, str):
        match = re.search(_LOC_RE, location)
        if match is None:
            return SourceLoc(filename)
        buffer = match["file"] in ("-", "")
        file = filename if buffer else match["file"]
        line, col = _moved(int(match["line"]), int(match["col"]), line_offset, buffer)
        return SourceLoc(file, line, col)
    location = _unmarked(downcast(location))
    input_names = ("-", "", filename)
    if isinstance(location, ir.FileLineColLoc) and location.filename in input_names:
        return SourceLoc(filename, *_input_position(location, line_offset))
    here, file_loc, name = _debug_origin(location, input_names)
    if here is not None:
        line, col = _input_position(here, line_offset) if here.start_line else (0, 0)
    else:
        line, col = in_file(*position) if position else (0, 0)
    if file_loc is None and not name:
        return SourceLoc(filename, line, col)
    source = None
    if file_loc is not None:
        source = SourceLoc(file_loc.filename, file_loc.start_line, file_loc.start_col)
    return HloLoc(filename, line, col, source, name)


def _input_position(loc: ir.FileLineColLoc, line_offset: int) -> tuple[int, int]:
    """(line, col) of a location in the input: the parser's buffer "-" is the chunk's text."""
    buffer = loc.filename in ("-", "")
    return _moved(loc.start_line, loc.start_col, line_offset, buffer)


def _moved(line: int, col: int, line_offset: int, buffer: bool) -> tuple[int, int]:
    """A position MLIR names: one in its buffer "-" (the text parsed, a split chunk) is placed
    in the file (`in_file`); one the text writes is where it says."""
    if buffer and line:
        line, col = in_file(line, col)
    return line + line_offset, col


_OP_TOKEN = r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[A-Za-z_][\w.$]*|\n'


def op_positions(text: str, op_name: str) -> list[tuple[int, int]]:
    """(line, col) of every `op_name` op in `text`, in textual order (= MLIR's pre-order walk):
    the pretty `%0 = op_name` or the generic `"op_name"(`, not comments or other strings."""
    quoted = f'"{op_name}"'
    found: list[tuple[int, int]] = []
    line, line_start = 1, 0
    for match in re.finditer(_OP_TOKEN, text):
        token = match[0]
        if token == "\n":
            line, line_start = line + 1, match.end()
        elif token == op_name or token == quoted:
            found.append((line, match.start() - line_start + 1))
    return found


# -- the `check` dialect of the StableHLO interpreter tests --------------------------------------
# `check.expect_eq_const %x, dense<...> : tensor<...>` has a custom syntax that no registered
# dialect parses; we rewrite it to the generic form of an unregistered op, keeping line numbers.

_CHECK_RE = r"\bcheck\.(expect_[a-z_]+)\s+(%[\w#.$-]+)\s*,\s*"


def _balanced_end(text: str, start: int) -> int:
    """Index just past the `<...>` group whose `<` is at or after `start`."""
    depth = 0
    i = text.index("<", start)
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = text.index('"', i + 1)
        elif ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced '<'")


def desugar_check_ops(text: str) -> str:
    """Rewrite custom-syntax `check.expect_*` ops into generic form (same line count)."""
    if "check.expect_" not in text:
        return text
    out: list[str] = []
    pos = 0
    for match in re.finditer(_CHECK_RE, text):
        if match.start() < pos or text[match.start() - 1] in '@"':
            continue  # inside a previous rewrite, or a custom_call target / generic name
        try:
            attr_end = _balanced_end(text, match.end())
            colon = re.compile(r"\s*:\s*").match(text, attr_end)
            if colon is None:
                continue
            type_end = _balanced_end(text, colon.end())
        except ValueError:
            continue
        attr = text[match.end() : type_end]
        value_type = text[colon.end() : type_end]
        newlines = text.count("\n", match.start(), type_end)
        generic = f'"check.{match[1]}"({match[2]}) {{value = {attr}}} : ({value_type}) -> ()'
        out.append(text[pos : match.start()])
        out.append(generic.replace("\n", " ") + "\n" * newlines)
        pos = type_end
    out.append(text[pos:])
    return "".join(out)


def parse_module(text: str, filename: str, context: ir.Context | None = None) -> ir.Module:
    """Parse (which verifies) MLIR text; errors become `ConvcanonError` at `file:line:col`."""
    check_unicode(text, filename)
    if nesting_may_exceed(text):
        check_nesting(text, filename)  # the exact check, with the location
    check_number_digits(text, filename)  # MLIR reads a long integer in quadratic time
    check_integer_widths(text, filename)  # and holds each value of a wide type in its width
    check_conv_dimension_indices(text, filename)  # a vector sized by the largest index
    if "{-#" in text:  # MLIR's parser crashes on a resource section cut in a string
        from convcanon.hlo.resources import check_resource_section  # its reader: only then

        check_resource_section(text, filename)
    has_check_ops = "check.expect_" in text
    if context is None:
        context = make_context(allow_unregistered=has_check_ops or None)
    elif has_check_ops:
        context.allow_unregistered_dialects = True
    source = desugar_check_ops(text)
    try:
        module = ir.Module.parse(source, context)
    except ir.MLIRError as err:
        error = error_from_mlir(err, filename, "cannot parse")
        if isinstance(error.loc, HloLoc) and not error.loc.line:
            error.loc = _with_text_position(error.loc, source, error.message)
        raise error from None
    except ValueError as err:  # LLVM limits, e.g. a shape whose size overflows a SmallVector
        first = str(err).strip().splitlines()[0] if str(err).strip() else "invalid input"
        raise ConvcanonError(f"cannot parse: {first}", SourceLoc(filename)) from None
    return module  # parsing verifies (MLIR's verifyAfterParse); no second walk


_LOC_TOKEN = r'(?m)"(?:[^"\\\n]|\\.)*"|//[^\n]*|^#[\w.$-]+\s*=\s*(?=loc\()|\bloc\('


def _without_locations(text: str) -> str:
    """`text` with every `loc(...)` and `#locN = ` blanked to spaces (lines and columns kept), so
    the parser gives each op the position it is written at."""
    out = list(text)
    for match in re.finditer(_LOC_TOKEN, text):
        token = match[0]
        if token.startswith(('"', "//")):
            continue
        end = match.end()
        if token == "loc(":
            depth = 1
            while end < len(text) and depth:
                if text[end] == '"':
                    closing = re.compile(r'(?:[^"\\\n]|\\.)*"').match(text, end + 1)
                    end = closing.end() if closing else end + 1
                    continue
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
        for i in range(match.start(), end):
            if out[i] != "\n":
                out[i] = " "
    return "".join(out)


def _with_text_position(loc: HloLoc, source: str, message: str) -> HloLoc:
    """The same error found again in the text without locations: the op's .mlir line:col (only
    on the error path of a debug-info file, so the second parse costs nothing otherwise)."""
    try:
        context = make_context(allow_unregistered="check.expect_" in source or None)
        ir.Module.parse(_without_locations(source), context)
    except ir.MLIRError as err:
        again = error_from_mlir(err, loc.file, "cannot parse")
        where = again.loc
        if where is not None and where.line and again.message == message:
            return HloLoc(loc.file, where.line, where.col, loc.source, loc.op_path)
    except ValueError:
        pass
    return loc


def error_from_mlir(err: ir.MLIRError, filename: str, what: str) -> ConvcanonError:
    """The error diagnostics of an MLIR error, each at its location with its notes (`what: err`
    if it has none): the first, carrying the others when there are several, as mlir-opt prints
    every op its verifier refuses."""
    diagnostics = list(err.error_diagnostics)
    if not diagnostics:
        return ConvcanonError(f"{what}: {err}", SourceLoc(filename))
    first, *more = (_diagnostic_error(d, filename) for d in diagnostics)
    return MlirErrors(first, more) if more else first


class MlirErrors(ConvcanonError):
    """Several error diagnostics of one MLIR failure: this error is the first of `errors`."""

    def __init__(self, first: ConvcanonError, more: list[ConvcanonError]) -> None:
        super().__init__(first.message, first.loc, first.code, first.notes)
        self.more = more

    @property
    def errors(self) -> list[ConvcanonError]:
        return [self, *self.more]

    def render(self) -> str:
        return "\n".join([super().render(), *(error.render() for error in self.more)])


def _diagnostic_error(diagnostic: ir.DiagnosticInfo, filename: str) -> ConvcanonError:
    # verifier messages may end in a dump of the whole op ("(see current operation: ...)")
    message = diagnostic.message.split(" (see current operation:", 1)[0].strip().splitlines()[0]
    notes: list[tuple[SourceLoc | None, str]] = []
    for n in diagnostic.notes:
        text = str(n.message)
        if text.startswith("see current operation"):  # the op, over lines when it has regions
            if PRINT_OP_ON_DIAGNOSTIC.get():
                notes.append((source_loc(n.location, filename), text.rstrip()))
        elif text.strip() and not _dropped_note(text):
            notes.append((source_loc(n.location, filename), text.splitlines()[0]))
    return ConvcanonError(message, source_loc(diagnostic.location, filename), notes=notes)


def op_notes(op: ir.Operation | ir.OpView, loc: SourceLoc) -> list[tuple[SourceLoc | None, str]]:
    """The note an error at `op` carries under `--mlir-print-op-on-diagnostic`: the op as MLIR
    prints it into a diagnostic (generic form, its own value names, large elements elided, on
    a line of its own when it spans several); none otherwise."""
    if not PRINT_OP_ON_DIAGNOSTIC.get():
        return []
    text = op.operation.get_asm(
        print_generic_op_form=True,
        use_local_scope=True,
        large_elements_limit=16,
        assume_verified=True,
    )
    text = str(text).rstrip("\n")
    newline = "\n" if "\n" in text else ""
    return [(loc, f"see current operation: {newline}{text}")]


def _dropped_note(text: str) -> bool:
    """A note of MLIR's that says nothing about the input: how to load a dialect (mlir-opt's
    flags, not ours), or the bytecode version being read."""
    return "for more info on dialect" in text or text.startswith("in bytecode version")


def print_module(
    module: ir.Module,
    debug_info: bool = False,
    generic: bool = False,
    large_elements_limit: int | None = None,
    flags: AsmFlags = PLAIN_ASM,
) -> str:
    """Print like `mlir-opt`: pretty (or generic) form, debug locations only if asked, elements
    attributes past `large_elements_limit` elements elided, and as `flags` ask."""
    # Parsing and every pass verify, so the printer need not verify again. The printer hands
    # Python one chunk per token; bytes chunks cost ~20% less than str chunks, then one decode.
    asm = module.operation.get_asm(
        binary=True,
        enable_debug_info=debug_info,
        print_generic_op_form=generic,
        assume_verified=True,
        large_elements_limit=large_elements_limit,
        use_local_scope=flags.local_scope,
        use_name_loc_as_prefix=flags.nameloc_prefix,
        large_resource_limit=flags.elide_resources,
        skip_regions=flags.skip_regions,
        pretty_debug_info=flags.pretty_locations,
    )
    text = asm.decode() if isinstance(asm, bytes) else str(asm)
    return text if text.endswith("\n") else text + "\n"
