"""`--verify-diagnostics`: the diagnostics a run produces are checked against the
`expected-error`/`-warning`/`-remark`/`-note` comments of its input, as mlir-opt's
`SourceMgrDiagnosticVerifierHandler` reads them.

`// expected-error {{text}}` expects an error whose message contains `text` on the comment's own
line; `@+N`/`@-N` move it N lines down/up, `@above` to the last line without a designator before
it, `@below` to the next such line after it, `@unknown` to a diagnostic without a location.
`expected-error-re {{a {{[0-9]+}} b}}` matches the message against the text with each inner
`{{...}}` a POSIX extended regular expression, as mlir-opt's llvm::Regex reads it (matched in
linear time: a backtracking engine takes days on `(a|a)*Z`). A diagnostic
nothing expects is an `unexpected error: ...`; one that matches an expectation of another
severity is a near miss; an expectation that nothing matched is `expected error "..." was not
produced`. Each `--split-input-file` chunk is checked on its own expectations. Under
`--verify-diagnostics=only-expected` only the last kind is reported: a diagnostic nothing expects
passes unreported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from convcanon.diagnostics import ConvcanonError, SourceLoc, byte_column, collect_diagnostics
from convcanon.fileio.split_input import chunk_column
from convcanon.posix_regex import Regex, RegexError, escape

_EXPECTED = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))?"
    r" *\{\{(.*)\}\}$"
)


class Expected:
    """One `expected-*` comment: the diagnostic it expects, where, and whether one came."""

    __slots__ = ("kind", "line", "at", "text", "pattern", "matched")

    def __init__(self, kind: str, line: int | None, at: SourceLoc, text: str) -> None:
        self.kind = kind
        self.line = line  # the line the diagnostic must be on; None: an unknown location
        self.at = at  # where the comment's `expected-` starts
        self.text = text
        self.pattern: Regex | None = None
        self.matched = False

    def matches(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message)
        return self.text in message


def _regex(text: str) -> Regex:
    """`-re` text: literal outside `{{...}}`, a POSIX ERE inside; raises RegexError."""
    parts: list[str] = []
    pos = 0  # by index, as mlir-opt's StringRefs: a copy of the rest at each block was quadratic
    while (start := text.find("{{", pos)) >= 0:
        end = text.find("}}", start + 2)
        if end < 0:
            raise RegexError("found start of regex with no end '}}'")
        inner = text[start + 2 : end]
        Regex(inner)  # its own error names what is wrong
        parts += [escape(text[pos:start]), f"({inner})"]
        pos = end + 2
    return Regex("".join([*parts, escape(text[pos:])]))


def _lines(text: str) -> Iterator[str]:
    """The lines of `text` one at a time (`text.split("\\n")` as a list was 4x a file of short
    lines)."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def expectations(
    text: str, filename: str, first_line: int = 1
) -> tuple[list[Expected], list[ConvcanonError]]:
    """The `expected-*` comments of `text` (which starts at `first_line` of its file), and the
    errors of those that cannot be read (a bad `-re` pattern)."""
    found: list[Expected] = []
    problems: list[ConvcanonError] = []
    last_line = text.count("\n")  # the index of the last line
    last_plain = 0  # index of the last line without a designator
    waiting: list[Expected] = []  # @below: for the next line without one
    for index, raw in enumerate(_lines(text)):
        line = raw.rstrip()
        # only a line ending in `}}` can match: searched, each `expected-` on a line without one
        # scanned the rest of the line (a 200 KB line of them took 18 s)
        match = _EXPECTED.search(line) if line.endswith("}}") else None
        number = first_line + index
        if match is None:
            for expected in waiting:
                expected.line = number
            waiting, last_plain = [], index
            continue
        # a chunk's first line starts at its column of the file (after its marker)
        column = byte_column(line, 0, match.start()) + (chunk_column(text) - 1 if not index else 0)
        at = SourceLoc(filename, number, column)
        expected = Expected(match[1], number, at, match[5])
        if match[2]:
            try:
                expected.pattern = _regex(match[5])
            except RegexError as err:
                problems.append(ConvcanonError(f"invalid regex: {err}", at))
                continue
        where = match[4]
        if where == "unknown":
            expected.line = None
        elif where == "above":
            expected.line = first_line + last_plain
        elif where == "below":
            expected.line = first_line + last_line  # if no line follows
            waiting.append(expected)
        elif where:
            expected.line = number + int(where)
        found.append(expected)
    return found, problems


class Checker:
    """Checks one chunk's diagnostics as they come, then what never came."""

    def __init__(self, expected: list[Expected], filename: str, only_expected: bool) -> None:
        self.expected = expected
        self.filename = filename
        self.only_expected = only_expected  # a diagnostic nothing expects is let through
        self.failures: list[ConvcanonError] = []

    def see(self, kind: str, loc: SourceLoc | None, message: str) -> None:
        known = loc is not None and loc.line > 0
        if known and loc is not None and loc.file != self.filename:
            candidates: list[Expected] = []
        else:
            line = loc.line if known and loc is not None else None
            candidates = [e for e in self.expected if e.line == line]
        near: Expected | None = None
        for expected in candidates:
            if expected.matches(message):
                if expected.kind == kind:
                    expected.matched = True
                    return
                near = expected
        if self.only_expected:
            return
        if near is not None:
            self.failures.append(
                ConvcanonError(
                    f"'{kind}' diagnostic emitted when expecting a '{near.kind}'",
                    near.at,
                )
            )
        else:
            self.failures.append(ConvcanonError(f"unexpected {kind}: {message}", loc))

    def finish(self) -> list[ConvcanonError]:
        for expected in self.expected:
            if not expected.matched:
                self.failures.append(
                    ConvcanonError(
                        f'expected {expected.kind} "{expected.text}" was not produced',
                        expected.at,
                        span=len(expected.text),
                    )
                )
        return self.failures


class DiagnosticMismatches(ConvcanonError):
    """Every mismatch of every chunk, reported together."""

    def __init__(self, failures: list[ConvcanonError]) -> None:
        super().__init__(failures[0].message, failures[0].loc)
        self.failures = failures

    def render(self) -> str:
        return "\n".join(failure.render() for failure in self.failures)


def verify_chunks(
    chunks: list[tuple[int, str]],
    filename: str,
    transform: Callable[[str, int], str | bytes],
    only_expected: bool = False,
) -> list[str | bytes]:
    """Run `transform(chunk, first_line)` on each chunk under the checker; returns each chunk's
    output ("" where it failed, as expected) or raises every mismatch (with `only_expected`,
    only the expected diagnostics that never came)."""
    outputs: list[str | bytes] = []
    failures: list[ConvcanonError] = []
    for first_line, chunk in chunks:
        expected, problems = expectations(chunk, filename, first_line)
        checker = Checker(expected, filename, only_expected)
        checker.failures += problems
        output: str | bytes = ""
        with collect_diagnostics(checker.see):
            try:
                output = transform(chunk, first_line)
            except ConvcanonError as err:
                for error in getattr(err, "errors", [err]):
                    code = f"{error.code}: " if error.code else ""
                    checker.see("error", error.loc, code + error.message)
                    for loc, note in error.notes:
                        checker.see("note", loc, note)
        failures += checker.finish()
        outputs.append(output)
    if failures:
        raise DiagnosticMismatches(failures)
    return outputs
