"""Errors users see, where they are, and how they are printed.

Every failure that comes from the input (not from a bug) is a `ConvcanonError`: the CLI prints it as
`file:line:col: error: message`, with the input's line and a caret under it as mlir-opt does, and
exits 1. Bad usage (unknown pass, bad option) is a `UsageError`, exit 2. Anything else is a bug
and keeps its traceback. Reading inputs and writing outputs live in `convcanon.fileio`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


class SourceLoc:
    """A position in an input file; line and col are 1-based, 0 means unknown.

    A slotted class compared by value, not a frozen dataclass: generating a dataclass's methods
    costs ~0.5 ms on every convcanon-opt start-up."""

    __slots__ = ("file", "line", "col")

    def __init__(self, file: str, line: int = 0, col: int = 0) -> None:
        self.file = file
        self.line = line
        self.col = col

    def _fields(self) -> tuple[object, ...]:
        return (self.file, self.line, self.col)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SourceLoc) or type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self._fields()!r}"

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{max(self.col, 1)}"


def path_named(path: str) -> str:
    """How a diagnostic names the file at `path`: an empty path (`-o ''`, `run ''`) as `''`,
    not as nothing before the `: error:`."""
    return path or "''"


_lines_before: ContextVar[int] = ContextVar("lines_before", default=0)
_start_column: ContextVar[int] = ContextVar("start_column", default=1)


@contextmanager
def text_starts_at_line(line: int, column: int = 1) -> Iterator[None]:
    """Within it, the text being read is a `--split-input-file` chunk that starts at `line` (and
    `column`) of its file: every position counted in the chunk (`offset_loc`, a parsed op's
    location) is reported at its line in the whole file. The chunk is not padded with newlines
    to get there, which made each chunk cost as much as the whole file before it."""
    with _set_within((_lines_before, line - 1), (_start_column, column)):
        yield


@contextmanager
def _set_within(*settings: tuple[ContextVar[Any], object]) -> Iterator[None]:
    """Within it, each context variable holds its value; after, what it held before."""
    tokens = [(variable, variable.set(value)) for variable, value in settings]
    try:
        yield
    finally:
        for variable, token in reversed(tokens):
            variable.reset(token)


def lines_before() -> int:
    """How many lines of the file come before the text being read (see `text_starts_at_line`)."""
    return _lines_before.get()


def start_column() -> int:
    """The column of its first line where the text being read starts (see
    `text_starts_at_line`): past 1 for a chunk that starts after its marker."""
    return _start_column.get()


def in_file(line: int, column: int) -> tuple[int, int]:
    """The (line, column) in its file of a position counted in the text being read (see
    `text_starts_at_line`): a chunk's lines follow the lines before it, and its first line the
    columns before it on that line. A chunk is not padded to get there either: a line of
    thousands of markers made each chunk as long as the line before it (quadratic). Line 0,
    unknown, stays unknown."""
    if not line:
        return line, column
    if line == 1:
        column += _start_column.get() - 1
    return line + _lines_before.get(), column


def byte_column(text: str, line_start: int, offset: int) -> int:
    """The 1-based column of character `offset` of `text`, whose line starts at `line_start`,
    counted in UTF-8 bytes as MLIR counts it (jaxlib's parser, mlir-opt): a column counted in
    characters pointed left of the place on a line with non-ASCII text before it."""
    before = text[line_start:offset]
    return (len(before) if before.isascii() else len(before.encode("utf-8", "surrogatepass"))) + 1


def offset_loc(text: str, offset: int, filename: str) -> SourceLoc:
    """The 1-based line and (byte) column of character `offset` of `text` (computed on error
    only: counting lines is linear in the offset)."""
    line = text.count("\n", 0, offset) + 1
    column = byte_column(text, text.rfind("\n", 0, offset) + 1, offset)
    return SourceLoc(filename, *in_file(line, column))


class ConvcanonError(Exception):
    """Bad input: printed as `loc: error: message`, exit code 1."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        loc: SourceLoc | None = None,
        code: str | None = None,
        notes: list[tuple[SourceLoc | None, str]] | None = None,
        span: int = 1,
    ):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.code = code
        self.span = span  # the columns from `loc` the error is about, underlined in a snippet
        # each note its own diagnostic at its own place, as MLIR attaches them to an error
        # ("previously defined here"): `--verify-diagnostics` matches them to expected-note
        self.notes = notes or []
        # what the command prints after the error, as mlir-opt prints its reports at exit
        # (`--mlir-timing`'s, also when parsing or a pass failed)
        self.trailer = ""

    def render(self) -> str:
        """The error line and, while the CLI shows sources, the input's line under it with a
        caret; then the notes its location carries (the user's source, for debug info) and its
        own, each on its own line as mlir-opt prints them: a note's source line only where it
        is not the one just shown (the op a `see current operation` note dumps is not)."""
        where = f"{self.loc}: " if self.loc is not None else ""
        code = f"{self.code}: " if self.code else ""
        located: Callable[[], list[str]] | None = getattr(self.loc, "notes", None)
        lines = [shown(f"{where}error: {code}{self.message}"), *snippet(self.loc, self.span)]
        lines += [shown(line) for line in (located() if located else [])]
        before = self.loc
        for loc, note in self.notes:
            lines.append(shown(f"{loc}: note: {note}" if loc else f"note: {note}"))
            lines += snippet(loc) if loc != before else []
            before = loc
        return "\n".join(lines)

    def folded_message(self) -> str:
        """The message with its notes' texts after it, for a single line (a child process's
        report)."""
        if not self.notes:
            return self.message
        return f"{self.message} ({'; '.join(note for _, note in self.notes)})"


# C0 controls but tab and newline, DEL and C1: a terminal acts on them (ESC starts a colour or
# moves the cursor, CR rewrites the line), and a message may quote what the input spells.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))}


def shown(text: str) -> str:
    """`text` as a diagnostic prints it: every control character a terminal would act on
    written as its `\\xNN` escape."""
    return text.translate(_CONTROLS)


# -- the source line under a diagnostic, as mlir-opt prints it ---------------------------------

# The inputs a command read, by the name its diagnostics give them: set while the CLI runs one.
_sources: ContextVar[dict[str, bytes] | None] = ContextVar("sources", default=None)
MAX_SHOWN_LINE = 1024  # bytes: a longer line (a hex constant, one-line hostile text) is not shown
_TAB_STOP = 8


@contextmanager
def sources_shown() -> Iterator[None]:
    """Within it, a diagnostic at a line of an input the one reader read prints that line and a
    caret under its column, as mlir-opt's source manager does."""
    token = _sources.set({})
    try:
        yield
    finally:
        _sources.reset(token)


def remember_source(name: str, data: bytes) -> None:
    """Keep an input's bytes for the snippets of diagnostics naming `name` (while shown)."""
    sources = _sources.get()
    if sources is not None:
        sources[name] = data


def snippet(loc: SourceLoc | None, span: int = 1) -> list[str]:
    """The input's line at `loc` and a caret under its column (`~` under the rest of `span`),
    tabs expanded as LLVM's `SMDiagnostic` does; a line that is not ASCII prints without the
    caret (its columns are not the terminal's). Nothing for an input not remembered, a line or
    column it does not have, a line over MAX_SHOWN_LINE bytes or one a terminal would act on."""
    sources = _sources.get()
    if not sources or loc is None or loc.line <= 0:
        return []
    data = sources.get(loc.file)
    line = None if data is None else _line_of(data, loc.line)
    column = max(loc.col, 1) - 1
    if line is None or column > len(line):
        return []
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return []
    if shown(text) != text:
        return []
    if not text.isascii():
        return [text.expandtabs(_TAB_STOP)]
    marks = [" "] * (len(text) + 1)
    for at in range(column + 1, min(column + span, len(text))):
        marks[at] = "~"
    marks[column] = "^"
    caret = "".join(marks).rstrip(" ")
    out: list[str] = []
    for mark, char in zip(caret, text + " ", strict=False):
        out.append(mark)
        if char == "\t":  # the mark fills the tab's columns
            while (len(out) % _TAB_STOP) != 0:
                out.append(mark)
    return [text.expandtabs(_TAB_STOP), "".join(out)]


def _line_of(data: bytes, number: int) -> bytes | None:
    """Line `number` (1-based) of `data` without its end, lines ending as the reader counts
    them (`\\n`, `\\r\\n`; a lone `\\r` is a space to MLIR); None past the last or over
    MAX_SHOWN_LINE bytes (never copied). Counted in blocks: one error in a 200 MB file costs a
    scan, not a Python step per line."""
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")
    start, before = 0, number - 1  # the newlines still to pass
    block = 1 << 16
    while before:
        end = min(len(data), start + block)
        found = data.count(b"\n", start, end)
        if found < before:
            if end == len(data):
                return None
            before, start = before - found, end
            continue
        for _ in range(before):
            start = data.index(b"\n", start) + 1
        before = 0
    end = data.find(b"\n", start)
    end = end if end >= 0 else len(data)
    return data[start:end] if end - start <= MAX_SHOWN_LINE else None


# `loc: severity: message` diagnostics that do not stop a run (remarks, warnings) go through
# `report`: to stderr, or to whoever collects them (`--verify-diagnostics`).
DiagnosticSink = Callable[[str, "SourceLoc | None", str], None]
_diagnostic_sink: ContextVar[DiagnosticSink | None] = ContextVar("diagnostic_sink", default=None)


# convcanon-opt's `--mlir-diagnostic-verbosity-level`: the severities `report` prints, as
# mlir-opt's filter lets them through (errors always; never under --verify-diagnostics).
_VERBOSITY = {
    "errors": frozenset(),
    "warnings": frozenset({"warning"}),
    "remarks": frozenset({"warning", "remark"}),
}
_printed_severities: ContextVar[frozenset[str]] = ContextVar(
    "printed_severities", default=_VERBOSITY["remarks"]
)
VERBOSITY_LEVELS = tuple(_VERBOSITY)

# `--mlir-print-op-on-diagnostic`: an error at an op carries the op, in generic form, as the note
# `see current operation: ...` MLIR attaches (the source line under the error shows it
# otherwise, so convcanon-opt leaves it out unless asked).
PRINT_OP_ON_DIAGNOSTIC: ContextVar[bool] = ContextVar("print_op_on_diagnostic", default=False)


@contextmanager
def diagnostics_printed(verbosity: str, print_op: bool) -> Iterator[None]:
    """Within it, `report` prints only the severities `verbosity` names, and errors at ops
    carry the op if `print_op`."""
    with _set_within(
        (_printed_severities, _VERBOSITY[verbosity]), (PRINT_OP_ON_DIAGNOSTIC, print_op)
    ):
        yield


def report(severity: str, loc: SourceLoc | None, message: str) -> None:
    """A `remark` or `warning` for the user: to the collector `collect_diagnostics` installs,
    else on stderr if the verbosity level lets it through."""
    sink = _diagnostic_sink.get()
    if sink is not None:
        sink(severity, loc, message)
    elif severity in _printed_severities.get():
        print_diagnostic(severity, loc, message)


def print_diagnostic(severity: str, loc: SourceLoc | None, message: str) -> None:
    """`loc: severity: message` on stderr, with the input's line under it and the notes its
    location carries (the user's source, for debug info): what mlir-opt's source manager
    prints itself, never filtered (a `--split-input-file` near miss)."""
    notes: Callable[[], list[str]] | None = getattr(loc, "notes", None)
    where = f"{loc}: " if loc is not None else ""
    lines = [f"{where}{severity}: {message}", *(notes() if notes is not None else [])]
    print("\n".join([shown(lines[0]), *snippet(loc), *map(shown, lines[1:])]), file=sys.stderr)


@contextmanager
def collect_diagnostics(sink: DiagnosticSink) -> Iterator[None]:
    """Within it, `report`ed diagnostics go to `sink(severity, loc, message)`, not stderr."""
    token = _diagnostic_sink.set(sink)
    try:
        yield
    finally:
        _diagnostic_sink.reset(token)


class UsageError(Exception):
    """Bad command line (unknown pass or option): exit code 2."""

    exit_code = 2


def check_argument(
    function: str,
    name: str,
    value: object,
    expected: type | tuple[type, ...],
    spelled: str | None = None,
) -> None:
    """A Python API call given the wrong kind of argument is the caller's bug, not bad input: a
    `TypeError` naming what was expected (`spelled`, or the types' import names), before the value
    reaches code that would fail on it deep inside (an `AttributeError` from xDSL, a regex on
    `None`)."""
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return
    names = spelled or " or ".join(
        "None" if kind is type(None) else f"{kind.__module__}.{kind.__qualname__}" for kind in kinds
    )
    names = names.replace("builtins.", "")
    raise TypeError(f"{function}: {name} must be {names}, not {type(value).__qualname__}")


MAX_CALL_DEPTH = 64  # interpreters: calls nested deeper are recursion in practice
# interpreters: steps one run may take, about a nanosecond each (bench/RESULTS_work.md)
DEFAULT_WORK_LIMIT = 2 * 10**11
MAX_SPLAT_ELEMENTS = 1 << 22  # a dense literal's elements past its text's size (half B)
