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

# The marker mlir-opt's `--split-input-file` cuts a file at, and puts between the chunks' outputs.
SPLIT_MARKER = "// -----"

MIN_MARKER = 3  # mlir-opt cuts at all but the last 2 characters: on an empty rest it never ends
_CHECKED = 2  # the characters after the cut that make it a marker


def check_marker(marker: str) -> None:
    """Refuse a `--split-input-file=MARKER` mlir-opt cannot split at (a shorter one loops)."""
    if marker and len(marker) < MIN_MARKER:
        raise UsageError(
            f"--split-input-file={marker}: a marker needs at least {MIN_MARKER} characters"
            f" (mlir-opt cuts at all but its last {_CHECKED}, and never ends on a shorter one)"
        )


def _cuts(text: str, marker: str) -> Iterator[tuple[bool, int, int]]:
    """In order, (True, start, end) of each chunk and (False, offset, offset) of each near miss
    (the offset after its cut): one pass, holding no list of them (a 1 GiB file of markers)."""
    prefix, suffix = marker[:-_CHECKED], marker[-_CHECKED:]
    kept_start = kept_end = 0  # the chunk growing; empty: nothing kept yet
    begin = 0
    while True:
        at = text.find(prefix, begin)
        end = len(text) if at == -1 else at
        if kept_start == kept_end:  # nothing kept yet (or an empty chunk): this piece starts anew
            kept_start, kept_end = begin, end
        elif (
            text.startswith(suffix, begin)
            and end - begin > _CHECKED
            and text[begin + _CHECKED] != "0"
        ):
            yield True, kept_start, kept_end
            kept_start, kept_end = begin + _CHECKED, end
        else:
            yield False, begin, begin
            kept_end = end
        if at == -1:
            break
        begin = at + len(prefix)
    if kept_start != kept_end:
        yield True, kept_start, kept_end


class _Places:
    """(lines before, UTF-8 bytes of its line before) of increasing offsets into one text, each
    found from the one before: linear in the text however many offsets are asked."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.line, self.column = text, 0, 0, 0

    def of(self, offset: int) -> tuple[int, int]:
        newline = self.text.rfind("\n", self.at, offset)
        if newline == -1:
            self.column += len(self.text[self.at : offset].encode())
        else:
            self.line += self.text.count("\n", self.at, offset)
            self.column = len(self.text[newline + 1 : offset].encode())
        self.at = offset
        return self.line, self.column


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


def split_input_file(
    text: str, marker: str = SPLIT_MARKER, filename: str | None = None
) -> Iterator[tuple[int, str]]:
    """(lines before the chunk, chunk) pairs, one at a time, so a caller holds one chunk's
    module at once. A chunk that starts inside a line knows its column (`chunk_column`): read
    under `text_starts_at_line(line + 1, chunk_column(chunk))`, its positions are the file's,
    and mlir-opt locates its implicit module there. It is not indented by what precedes it on
    its line: a line of thousands of markers made that quadratic. With a `filename`, each near
    miss is first reported as a warning at its place, as mlir-opt prints them."""
    check_marker(marker)
    if filename is not None:
        places = _Places(text)
        for _, offset, _ in (cut for cut in _cuts(text, marker) if not cut[0]):
            line, column = places.of(offset)
            where = SourceLoc(filename, line + 1, column + 1)
            report("warning", where, "near miss with file split marker")
    places = _Places(text)
    for _, start, end in (cut for cut in _cuts(text, marker) if cut[0]):
        line, column = places.of(start)
        yield line, ChunkText(text[start:end], column + 1)
