"""The diagnostics of a command's stderr, with the input line and caret the CLI prints under a
located one set aside: tests of what a diagnostic says compare these lines, and the snippets are
checked against iree-opt's in tests/cli/test_diagnostics_show_the_source_line.py."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):\d+: (?:error|warning|remark|note): ")
_CARET = re.compile(r" *\^+~*")


def diagnostic_lines(stderr: str, sources: Mapping[str, bytes] | None = None) -> list[str]:
    """The lines of `stderr` without the input line and caret printed under a located
    diagnostic: a line after `file:line:col: ...` that is line `line` of that file (read from
    `sources` by name, else from disk), tabs expanded, and the caret line after it; for a file
    that reads otherwise now (a FIFO), any line followed by a caret line."""
    lines = stderr.split("\n")  # not splitlines: a shown line may hold U+2028
    kept: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        kept.append(line)
        at += 1
        located = _LOCATED.match(line)
        if located is None or at >= len(lines):
            continue
        source = _input_line(located["file"], int(located["line"]), sources or {})
        caret = at + 1 < len(lines) and _CARET.fullmatch(lines[at + 1]) is not None
        if source is not None and lines[at] == source:
            at += 1 + caret
        elif caret:  # a file read as other bytes than these (a FIFO fed twice)
            at += 2
    return kept


def _input_line(name: str, number: int, sources: Mapping[str, bytes]) -> str | None:
    data = sources.get(name)
    if data is None:
        path = Path(name)
        if not path.is_file():
            return None
        data = path.read_bytes()
    text = data.decode(errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    return lines[number - 1].expandtabs(8) if number <= len(lines) else None


def without_source_lines(stderr: str, sources: Mapping[str, bytes] | None = None) -> str:
    """`stderr` as it reads without the snippets."""
    return "\n".join(diagnostic_lines(stderr, sources))
