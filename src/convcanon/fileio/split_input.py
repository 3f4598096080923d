"""`--split-input-file`: a file cut into chunks where mlir-opt cuts it.

mlir-opt finds every occurrence of the marker less its last two bytes, anywhere in a line,
and cuts where those two follow (and a third character is there, not `0`); anywhere else it
warns "near miss with file split marker" and keeps the text whole. A chunk starts right after
its marker, on the marker's line; the same quirks hold (a file that starts with the marker keeps
the marker's last two characters in its first chunk, which then fails to parse).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import AnyStr

from convcanon.diagnostics import SourceLoc, UsageError, print_diagnostic

# The marker mlir-opt's `--split-input-file` cuts a file at, and puts between the chunks' outputs.
SPLIT_MARKER = "// -----"

MIN_MARKER = 3  # mlir-opt cuts at all but the last 2 characters: on an empty rest it never ends
_CHECKED = 2  # the bytes after the cut that make it a marker


def _marker_bytes(marker: str) -> bytes:
    """The marker as mlir-opt holds it: the bytes of its argument (undecodable ones kept)."""
    return marker.encode("utf-8", "surrogateescape")


def check_marker(marker: str) -> None:
    """Refuse a `--split-input-file=MARKER` mlir-opt cannot split at (a shorter one loops)."""
    if marker and len(_marker_bytes(marker)) < MIN_MARKER:
        raise UsageError(
            f"--split-input-file={marker}: a marker needs at least {MIN_MARKER} bytes"
            f" (mlir-opt cuts at all but its last {_CHECKED}, and never ends on a shorter one)"
        )


def _cuts(text: AnyStr, marker: AnyStr) -> Iterator[tuple[bool, int, int]]:
    """In order, (True, start, end) of each chunk and (False, offset, offset) of each near miss
    (the offset after its cut): one pass, holding no list of them (a 1 GiB file of markers).
    On bytes, as mlir-opt cuts, for a marker that is not ASCII (its last two bytes may be part
    of one character); on text (the same places, without a copy) for one that is."""
    prefix, suffix = marker[:-_CHECKED], marker[-_CHECKED:]
    kept_start = kept_end = 0  # the chunk growing; empty: nothing kept yet
    begin = 0
    while True:
        at = text.find(prefix, begin)  # pyright: ignore[reportArgumentType]
        end = len(text) if at == -1 else at
        if kept_start == kept_end:  # nothing kept yet (or an empty chunk): this piece starts anew
            kept_start, kept_end = begin, end
        elif (
            text.startswith(suffix, begin)  # pyright: ignore[reportArgumentType]
            and end - begin > _CHECKED
            and text[begin + _CHECKED : begin + _CHECKED + 1] not in ("0", b"0")
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

    def __init__(self, text: str | bytes) -> None:
        self.text, self.at, self.line, self.column = text, 0, 0, 0
        self.newline = "\n" if isinstance(text, str) else b"\n"

    def of(self, offset: int) -> tuple[int, int]:
        newline = self.text.rfind(self.newline, self.at, offset)  # pyright: ignore
        if newline == -1:
            self.column += _width(self.text[self.at : offset])
        else:
            self.line += self.text.count(self.newline, self.at, offset)  # pyright: ignore
            self.column = _width(self.text[newline + 1 : offset])
        self.at = offset
        return self.line, self.column


def _width(text: str | bytes) -> int:
    """Its UTF-8 bytes: MLIR's columns count bytes."""
    return len(text.encode() if isinstance(text, str) else text)


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
    if marker.isascii():
        yield from _split(text, marker, filename, str)
    else:  # cut at bytes, as mlir-opt cuts, and each chunk read back as text
        data = text.encode("utf-8", "surrogatepass")
        yield from _split(data, _marker_bytes(marker), filename, _decoded)


def _decoded(chunk: bytes) -> str:
    """A chunk cut from the file's bytes (a marker of undecodable bytes may cut a character)."""
    return chunk.decode("utf-8", "replace")


def _split(
    text: AnyStr, marker: AnyStr, filename: str | None, as_text: Callable[[AnyStr], str]
) -> Iterator[tuple[int, str]]:
    """`split_input_file` on text, or on the file's bytes for a marker that is not ASCII."""
    if filename is not None:
        places = _Places(text)
        for _, offset, _ in (cut for cut in _cuts(text, marker) if not cut[0]):
            line, column = places.of(offset)
            where = SourceLoc(filename, line + 1, column + 1)
            print_diagnostic("warning", where, "near miss with file split marker")
    places = _Places(text)
    for _, start, end in (cut for cut in _cuts(text, marker) if cut[0]):
        line, column = places.of(start)
        yield line, ChunkText(as_text(text[start:end]), column + 1)
