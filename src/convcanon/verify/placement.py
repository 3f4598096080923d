"""Engine messages placed in the user's file: one rule for every engine and severity.

An engine names positions in the text it was given: IREE reads it from stdin (`<stdin>:L:C`),
XLA's parser calls its buffer `-` (`-:L:C`). Ops we reprinted keep the locations our own parse
gave them, which print as `loc("-":L:C)`: positions in the user's file. So `-:L:C` is always a
place in the user's file, and `<stdin>:L:C` is one only when the engine was given the file's own
text. A message is printed as `file:L:C: severity: message` (or `file: severity: message` when
its position is in text the user never saw); every other line an engine prints (op dumps, source
snippets, notes about IREE's own pipeline) is dropped, and each message is said once.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Iterator
from contextvars import ContextVar

from convcanon.diagnostics import ConvcanonError, SourceLoc

_POSITIONED = re.compile(
    r"(?P<file><stdin>|-):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning|remark|note): "
    r"(?P<message>.*)"
)
_UNPOSITIONED = re.compile(r"(?P<severity>error|warning|remark): (?P<message>.*)")
_OP_DUMP = ": %"  # MLIR appends the failing op's text, in the engine's own locations
_SAID: ContextVar[set[str] | None] = ContextVar("engine_messages_said", default=None)


def placed(file: str, line: int, col: int, filename: str, is_the_file: bool) -> SourceLoc:
    """Where a position an engine names is in the user's file (`file` is `<stdin>` or `-`)."""
    if file == "-" or is_the_file:
        return SourceLoc(filename, line, col)
    return SourceLoc(filename)


def place_line(line: str, filename: str, is_the_file: bool) -> str | None:
    """One engine output line as `loc: severity: message` in the user's file; None to drop it
    (not a diagnostic, or a note: notes point into the engine's own pipeline)."""
    text = line.strip()
    match = _POSITIONED.search(text)
    if match is not None:
        if match["severity"] == "note":
            return None
        loc = placed(match["file"], int(match["line"]), int(match["col"]), filename, is_the_file)
        return f"{loc}: {match['severity']}: {match['message'].split(_OP_DUMP, 1)[0]}"
    match = _UNPOSITIONED.match(text)
    if match is not None:
        return f"{SourceLoc(filename)}: {match['severity']}: {match['message']}"
    return None


@contextlib.contextmanager
def one_report() -> Iterator[None]:
    """Inside, each engine message is said once: a verify run compiles BEFORE and AFTER (and
    each conv), which repeat the engine's warnings. The next run says them again."""
    token = _SAID.set(set())
    try:
        yield
    finally:
        _SAID.reset(token)


def say_engine_output(output: str, filename: str, is_the_file: bool) -> None:
    """Print what an engine printed beside a success (warnings), placed, each message once in
    this run (`one_report`), or in this output outside one."""
    said = _SAID.get()
    if said is None:
        said = set()
    for line in output.splitlines():
        message = place_line(line, filename, is_the_file)
        if message is not None and message not in said:
            said.add(message)
            print(message, file=sys.stderr)


@contextlib.contextmanager
def engine_output_placed(filename: str, is_the_file: bool) -> Iterator[None]:
    """What an engine's Python package writes to stderr inside (IREE's compiler prints its
    warnings there after a success) is printed placed instead; on an error it is the error's."""
    output = io.StringIO()
    with contextlib.redirect_stderr(output):
        yield
    say_engine_output(output.getvalue(), filename, is_the_file)


def place_error(error: ConvcanonError, filename: str, is_the_file: bool) -> ConvcanonError:
    """`error` (an engine's refusal, `ENGINE rejected the module: ...`) at the position its
    message names, the position cut from the message; unplaced errors go to the file."""
    match = _POSITIONED.search(error.message)
    message = error.message
    if match is not None and match["severity"] == "error":
        error.loc = placed(
            match["file"], int(match["line"]), int(match["col"]), filename, is_the_file
        )
        head = re.sub(r"(?:[A-Z_]+: )+$", "", message[: match.start()])  # XLA's `UNKNOWN: `
        message = head + match["message"]
    elif error.loc is None:
        error.loc = SourceLoc(filename)
    error.message = message.split(_OP_DUMP, 1)[0]
    return error
