"""Errors users see, and the cheap checks that refuse hostile text before a parser sees it.

Every failure that comes from the input (not from a bug) is a `ConvcanonError`: the CLI prints it as
`file:line:col: error: message` and exits 1. Bad usage (unknown pass, bad option) is a `UsageError`,
exit 2. Anything else is a bug and keeps its traceback. Reading inputs and writing outputs live in
`convcanon.fileio`.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


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


_lines_before: ContextVar[int] = ContextVar("lines_before", default=0)


@contextmanager
def text_starts_at_line(line: int) -> Iterator[None]:
    """Within it, the text being read is a `--split-input-file` chunk that starts at `line` of
    its file: every position counted in the chunk (`offset_loc`, a parsed op's location) is
    reported at its line in the whole file. The chunk is not padded with newlines to get there,
    which made each chunk cost as much as the whole file before it."""
    token = _lines_before.set(line - 1)
    try:
        yield
    finally:
        _lines_before.reset(token)


def lines_before() -> int:
    """How many lines of the file come before the text being read (see `text_starts_at_line`)."""
    return _lines_before.get()


def byte_column(text: str, line_start: int, offset: int) -> int:
    """The 1-based column of character `offset` of `text`, whose line starts at `line_start`,
    counted in UTF-8 bytes as MLIR counts it (jaxlib's parser, mlir-opt): a column counted in
    characters pointed left of the place on a line with non-ASCII text before it."""
    before = text[line_start:offset]
    return (len(before) if before.isascii() else len(before.encode("utf-8", "surrogatepass"))) + 1


def offset_loc(text: str, offset: int, filename: str) -> SourceLoc:
    """The 1-based line and (byte) column of character `offset` of `text` (computed on error
    only: counting lines is linear in the offset)."""
    line = text.count("\n", 0, offset) + 1 + _lines_before.get()
    return SourceLoc(filename, line, byte_column(text, text.rfind("\n", 0, offset) + 1, offset))


class ConvcanonError(Exception):
    """Bad input: printed as `loc: error: message`, exit code 1."""

    exit_code = 1

    def __init__(self, message: str, loc: SourceLoc | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.code = code

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        code = f"{self.code}: " if self.code else ""
        return f"{where}error: {code}{self.message}"


# `loc: severity: message` diagnostics that do not stop a run (remarks, warnings) go through
# `report`: to stderr, or to whoever collects them (`--verify-diagnostics`).
DiagnosticSink = Callable[[str, "SourceLoc | None", str], None]
_diagnostic_sink: ContextVar[DiagnosticSink | None] = ContextVar("diagnostic_sink", default=None)


def report(severity: str, loc: SourceLoc | None, message: str) -> None:
    """A `remark` or `warning` for the user, on stderr (with the notes its location carries:
    the user's source, for debug info), or to the collector `collect_diagnostics` installs."""
    sink = _diagnostic_sink.get()
    if sink is not None:
        sink(severity, loc, message)
        return
    notes: Callable[[], list[str]] | None = getattr(loc, "notes", None)
    where = f"{loc}: " if loc is not None else ""
    lines = [f"{where}{severity}: {message}", *(notes() if notes is not None else [])]
    print("\n".join(lines), file=sys.stderr)


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


def check_unicode(text: str, filename: str) -> None:
    """Refuse text no UTF-8 file can hold (a lone surrogate, which Python strings may carry)
    before a native parser's binding raises `UnicodeEncodeError` on it: the CLI's reader
    decodes strictly, so only text handed to the Python API can hold one."""
    if text.isascii():
        return
    try:
        text.encode()
    except UnicodeEncodeError as err:
        where = offset_loc(text, err.start, filename)
        code = ord(text[err.start])
        raise ConvcanonError(f"not UTF-8 text (a lone surrogate U+{code:04X})", where) from None


MAX_NESTING = 256
MAX_CALL_DEPTH = 64  # interpreters: calls nested deeper are recursion in practice


# Characters scanned at once: the scan's arrays are a few times a chunk, whatever the text's size
# (over the whole text they were 11 bytes a character: 2.2 GB for a 200 MB file).
NESTING_CHUNK = 1 << 22


def check_nesting(text: str, filename: str, limit: int = MAX_NESTING) -> None:
    """Refuse input nested deeper than `limit` brackets before a recursive parser sees it.

    MLIR's C++ parser recurses per `[`, `{`, `(` and `<` (types and attributes such as
    `tuple<tuple<...>>`); a hostile file nested 100k deep overflows the stack and kills the
    process. Real modules nest a few dozen levels at most. The `>` of `->` closes nothing.
    """
    import numpy as np

    step = np.zeros(256, dtype=np.int8)
    step[[ord("["), ord("{"), ord("("), ord("<")]] = 1
    step[[ord("]"), ord("}"), ord(")"), ord(">")]] = -1
    depth = 0  # at the start of the chunk
    after_dash = False  # the previous chunk ended in "-"
    deepest, where = 0, 0  # the first deepest bracket: its depth and its chunk's data
    for start in range(0, len(text), NESTING_CHUNK):
        chunk = text[start : start + NESTING_CHUNK]
        data = np.frombuffer(chunk.encode(errors="surrogatepass"), dtype=np.uint8)
        steps = step[data]
        if after_dash and data[0] == ord(">"):
            steps[0] = 0
        steps[1:][(data[1:] == ord(">")) & (data[:-1] == ord("-"))] = 0
        running = np.cumsum(steps, dtype=np.int32)  # |depth| within a chunk <= its 4M*4 bytes
        top = int(np.argmax(running))
        if depth + int(running[top]) > deepest:
            # a bracket is one byte: the bytes before it decode whole
            deepest = depth + int(running[top])
            where = start + len(data[:top].tobytes().decode(errors="surrogatepass"))
        depth += int(running[-1])
        after_dash = chunk.endswith("-")
    if deepest > limit:
        raise ConvcanonError(
            f"input nests deeper than {limit} levels of brackets", offset_loc(text, where, filename)
        )


MAX_SPLAT_ELEMENTS = 1 << 22  # a dense literal's elements past its text's size (half B)


MAX_INTEGER_WIDTH = 16777215  # MLIR's IntegerType::kMaxWidth
# an integer type token (`i32`, `si8`, `ui4`, the element of `4xi8`) of 8 or more digits, not
# part of a name
_WIDE_INTEGER = r"(?:(?<=[\d?]x)|(?<![\w$.%@#!-]))[su]?i(\d{8,})(?![\w.$-])"


def check_integer_widths(text: str, filename: str) -> None:
    """Refuse an integer type wider than MLIR's limit before xDSL parses it: its parser computes
    the type's value range, `1 << width`, so a 14-byte `: i99999999999` would take the
    machine's memory. MLIR's own parser refuses it with the same message.

    The text is scanned for the literal `i` and 8 digits, and the whole pattern tried only where
    that occurs: its lookbehinds, tried at every character, cost ~50 ns a character. A line
    with a hit is lexed once for its strings and its comment, where a width is no type."""
    wide = re.compile(_WIDE_INTEGER)
    line_start, line_end = 0, -1  # the line lexed last
    strings: list[tuple[int, int]] = []
    comment = 0
    for hint in re.finditer(r"i\d{8}", text):
        at = hint.start()
        sign = at - 1 if at and text[at - 1] in "su" else at
        match = wide.match(text, sign) or wide.match(text, at)
        if match is None:
            continue
        digits = match[1]
        if len(digits) <= len(str(MAX_INTEGER_WIDTH)) and int(digits) <= MAX_INTEGER_WIDTH:
            continue
        start = match.start()
        if start > line_end:
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", start)
            line_end = len(text) if line_end < 0 else line_end
            strings, comment = lex_line(text[line_start:line_end])
        column = start - line_start
        inside = bisect.bisect_right(strings, (column, len(text))) - 1  # the last string before
        if column >= comment or inside >= 0 and column < strings[inside][1]:
            continue
        raise ConvcanonError("invalid integer width", offset_loc(text, start, filename))


_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//')


def lex_line(line: str) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) of each string literal of a line of MLIR, and where its `//` comment
    starts (its length if none): the parts that hold no ops or types."""
    strings: list[tuple[int, int]] = []
    for token in _STRING_OR_COMMENT.finditer(line):
        if token[0] == "//":
            return strings, token.start()
        strings.append(token.span())
    return strings, len(line)
