"""`--split-input-file`: a file cut into chunks where mlir-opt cuts it.

mlir-opt finds every occurrence of the marker less its last two characters, anywhere in a line,
and cuts where those two follow (and a third character is there, not `0`); anywhere else it
warns "near miss with file split marker" and keeps the text whole. A chunk starts right after
its marker, on the marker's line; the same quirks hold (a file that starts with the marker keeps
the marker's last two characters in its first chunk, which then fails to parse).
"""

from __future__ import annotations

from collections.abc import Iterator

from convcanon.diagnostics import SourceLoc, UsageError, report
from convcanon.ir_kind import SPLIT_MARKER

MIN_MARKER = 3  # mlir-opt cuts at all but the last 2 characters: on an empty rest it never ends
_CHECKED = 2  # the characters after the cut that make it a marker


def check_marker(marker: str) -> str:
    """A `--split-input-file=MARKER` mlir-opt can split at (a shorter one makes it loop)."""
    if marker and len(marker) < MIN_MARKER:
        raise UsageError(
            f"--split-input-file={marker}: a marker needs at least {MIN_MARKER} characters"
            f" (mlir-opt cuts at all but its last {_CHECKED}, and never ends on a shorter one)"
        )
    return marker


def _cuts(text: str, marker: str) -> tuple[list[tuple[int, int]], list[int]]:
    """(start, end) of each chunk, and where each near miss is (the offset after the cut)."""
    prefix, suffix = marker[:-_CHECKED], marker[-_CHECKED:]
    pieces: list[tuple[int, int]] = []
    start, at = 0, text.find(prefix)
    while at != -1:
        pieces.append((start, at))
        start = at + len(prefix)
        at = text.find(prefix, start)
    pieces.append((start, len(text)))
    chunks: list[tuple[int, int]] = []
    near: list[int] = []
    prev = (0, 0)
    for begin, end in pieces:
        if prev[0] == prev[1]:  # nothing kept yet (or an empty chunk): this piece starts anew
            prev = (begin, end)
        elif (
            text.startswith(suffix, begin)
            and end - begin > _CHECKED
            and text[begin + _CHECKED] != "0"
        ):
            chunks.append(prev)
            prev = (begin + _CHECKED, end)
        else:
            near.append(begin)
            prev = (prev[0], end)
    if prev[0] != prev[1]:
        chunks.append(prev)
    return chunks, near


class ChunkText(str):
    """A chunk's text, knowing the column of its file where it starts (1: a line's start)."""

    column: int

    def __new__(cls, text: str, column: int) -> ChunkText:
        chunk = super().__new__(cls, text)
        chunk.column = column
        return chunk


def chunk_column(text: str) -> int:
    """The column of its file where `text` starts: a chunk's, else 1."""
    return text.column if isinstance(text, ChunkText) else 1


def _place(text: str, offset: int) -> tuple[int, int]:
    """(lines before `offset`, bytes of its line before it)."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset), len(text[line_start:offset].encode())


def split_input_file(
    text: str, marker: str = SPLIT_MARKER, filename: str | None = None
) -> Iterator[tuple[int, str]]:
    """(lines before the chunk, chunk) pairs, one at a time, so a caller holds one chunk's
    module at once. A chunk that starts inside a line is indented by what precedes it there, so
    its columns are the file's, and knows its column (`chunk_column`): mlir-opt locates its
    implicit module there. With a `filename`, each near miss is first reported as a warning
    at its place, as mlir-opt prints them."""
    chunks, near = _cuts(text, check_marker(marker))
    if filename is not None:
        for offset in near:
            line, column = _place(text, offset)
            where = SourceLoc(filename, line + 1, column + 1)
            report("warning", where, "near miss with file split marker")
    for start, end in chunks:
        line, column = _place(text, start)
        yield line, ChunkText(" " * column + text[start:end], column + 1)
