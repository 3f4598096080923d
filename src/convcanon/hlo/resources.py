"""`dense_resource` constants: the one reader of a module's resource blobs.

torch-mlir writes every weight as `dense_resource<name> : tensor<...>` with the bytes in the file's
trailing `{-# dialect_resources: { builtin: { name: "0x<alignment><bytes>" } } #-}` section. XLA's
StableHLO import refuses them, the Python bindings do not expose a blob's bytes, and the f64 copy
cannot re-encode one, so every consumer gets the same module with each blob written back as the
equivalent hex `dense<"0x...">` (same little-endian element bytes, one byte per i1).

The text is read as MLIR's lexer reads it: a `{-#` or a `dense_resource<` inside a string literal
or a `//` comment is not one. The scan is linear: strings and comments are skipped with one regex
match each, blobs are sliced, not copied through a regex, and each reference is read at its own
position. Every command (convcanon-opt, run, verify) reads sections with this one reader, which
also refuses what MLIR's parser would throw on or crash at (an alignment word that is not a power
of two, a section cut inside a string), with a location. Lines are kept, so diagnostics on the
rewritten text point at the user's file.
"""

from __future__ import annotations

import re

from convcanon.diagnostics import ConvcanonError, offset_loc
from convcanon.records import NamedTuple

_REFERENCE = "dense_resource<"
_ALIGNMENT_HEX_DIGITS = 8  # a blob starts with its alignment, a little-endian uint32
MAX_BLOB_ALIGNMENT = 1 << 16  # MLIR allocates blobs at their alignment: 2^31 is out of memory
_MAX_SECTION_NESTING = 8  # `dialect_resources: { builtin: { name: "..." } }` nests 3 deep
_SPACE = re.compile(r"(?:\s++|//[^\n]*+)*+")
# what the scan stops at in code: a string, a comment, a section or a reference
_LANDMARK = re.compile(r'"|//|\{-#|dense_resource<')
# a string's characters up to a quote, an escape or a newline
_STRING_RUN = re.compile(r'[^"\\\n\v\f]*+')
_BARE_NAME = re.compile(r"[\w.$-]+")
_TENSOR_TYPE = re.compile(r"\s*:\s*tensor<((?:\d+x)*+)([A-Za-z]\w*+(?:<\w++>)?)>")
_INT_TYPE = re.compile(r"(?:i|si|ui)(\d+)")
F8_FLOATS = frozenset(
    ["f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "f8E4M3", "f8E3M4"]
)
_ELEMENT_BYTES = {
    "f64": 8,
    "f32": 4,
    "f16": 2,
    "bf16": 2,
    "complex<f32>": 8,
    "complex<f64>": 16,
    **dict.fromkeys(F8_FLOATS, 1),
}


class _Blob(NamedTuple):
    """A blob's element bytes as a span of hex digits in the text (alignment prefix skipped)."""

    start: int
    end: int
    at: int  # offset of the blob's name, for diagnostics

    @property
    def size(self) -> int:
        return (self.end - self.start) // 2


class _Section(NamedTuple):
    start: int  # offset of `{-#`
    end: int  # offset just after `#-}`
    blobs: dict[str, _Blob]
    only_builtin: bool  # nothing but builtin blobs: the section can be dropped


class _Scan(NamedTuple):
    """What the text holds outside strings and comments: its sections and `dense_resource<`s."""

    sections: list[_Section]
    references: list[int]  # offsets of `dense_resource<` in code

    def blobs(self) -> dict[str, _Blob]:
        return {name: blob for section in self.sections for name, blob in section.blobs.items()}


def string_end(text: str, quote: int) -> int | None:
    """The offset after the string literal opening at `quote`, as MLIR's lexer ends it; None when
    a newline or the end of the file comes first (MLIR's `expected '"' in string literal`)."""
    pos = quote + 1
    while True:
        pos = _STRING_RUN.match(text, pos).end()  # pyright: ignore[reportOptionalMemberAccess]
        if pos >= len(text) or text[pos] in "\n\v\f":
            return None
        if text[pos] == '"':
            return pos + 1
        pos += 2  # a backslash and the character it escapes (`\"`, `\\`, a hex pair's first)


class _SectionReader:
    """A recursive-descent reader of `{-# key: value, ... #-}` (values: strings, words, `{...}`)."""

    def __init__(self, text: str, filename: str, start: int):
        self.text, self.filename, self.pos = text, filename, start

    def fail(self, message: str, offset: int | None = None) -> ConvcanonError:
        where = self.pos if offset is None else offset
        return ConvcanonError(
            f"dialect_resources section: {message}", offset_loc(self.text, where, self.filename)
        )

    def skip_space(self) -> None:
        match = _SPACE.match(self.text, self.pos)
        if match is not None:
            self.pos = match.end()

    def expect(self, token: str) -> None:
        self.skip_space()
        if not self.text.startswith(token, self.pos):
            found = self.text[self.pos : self.pos + 1]
            raise self.fail(
                f"expected '{token}', found {repr(found) if found else 'the end of the file'}"
            )
        self.pos += len(token)

    def string(self) -> tuple[int, int]:
        """The span of a string literal's contents (the reader is on its opening quote)."""
        start = self.pos + 1
        end = string_end(self.text, self.pos)
        if end is None:
            cut = self.text.find("\n", start)
            where = "its line" if cut >= 0 else "the file"
            raise self.fail(f"a string is not closed before the end of {where}")
        self.pos = end
        return start, end - 1

    def name(self) -> str:
        self.skip_space()
        if self.text.startswith('"', self.pos):
            start, end = self.string()
            return self.text[start:end]
        match = _BARE_NAME.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a name")
        self.pos = match.end()
        return match[0]

    def entries(self, close: str, depth: int) -> list[tuple[str, int, object]]:
        """`key: value` pairs up to `close`; a value is a string span, a word or nested entries."""
        if depth > _MAX_SECTION_NESTING:
            raise self.fail(f"nested deeper than {_MAX_SECTION_NESTING} levels")
        out: list[tuple[str, int, object]] = []
        while True:
            self.skip_space()
            if self.pos >= len(self.text):
                raise self.fail(f"the file ends before the closing '{close}'")
            if self.text.startswith(close, self.pos):
                self.pos += len(close)
                return out
            if out:
                self.expect(",")
                self.skip_space()
            at = self.pos
            key = self.name()
            self.expect(":")
            self.skip_space()
            value: object
            if self.text.startswith("{", self.pos):
                self.pos += 1
                value = self.entries("}", depth + 1)
            elif self.text.startswith('"', self.pos):
                value = self.string()
            else:
                value = self.name()
            out.append((key, at, value))


def _read_section(text: str, filename: str, start: int) -> _Section:
    """The `{-# ... #-}` section opening at `start` (a `{-#` in code)."""
    reader = _SectionReader(text, filename, start + 3)
    top = reader.entries("#-}", 1)
    blobs: dict[str, _Blob] = {}
    only_builtin = True
    for key, _, value in top:
        if key != "dialect_resources" or not isinstance(value, list):
            only_builtin = False
            continue
        for dialect, _, entries in value:
            if dialect != "builtin" or not isinstance(entries, list):
                only_builtin = False
                continue
            for name, name_at, blob in entries:
                if not isinstance(blob, tuple):
                    raise reader.fail(f"blob '{name}' is not a string", name_at)
                blobs[name] = _blob(text, filename, name, name_at, blob)
    return _Section(start, reader.pos, blobs, only_builtin)


def _scan(text: str, filename: str) -> _Scan:
    """Every section and `dense_resource<` outside strings and comments, in one pass."""
    sections: list[_Section] = []
    references: list[int] = []
    pos = 0
    while (landmark := _LANDMARK.search(text, pos)) is not None:
        found, at = landmark[0], landmark.start()
        if found == '"':
            end = string_end(text, at)
            pos = end if end is not None else at + 1  # MLIR's lexer reports it; scan on
        elif found == "//":
            newline = text.find("\n", at)
            pos = len(text) if newline < 0 else newline
        elif found == "{-#":
            sections.append(_read_section(text, filename, at))
            pos = sections[-1].end
        else:
            references.append(at)
            pos = landmark.end()
    return _Scan(sections, references)


def _blob(text: str, filename: str, name: str, at: int, span: tuple[int, int]) -> _Blob:
    start, end = span
    digits = end - start - 2
    if not text.startswith("0x", start) or digits < _ALIGNMENT_HEX_DIGITS or digits % 2:
        raise ConvcanonError(
            f"blob '{name}' is not '0x' then an 8-digit alignment and whole bytes of hex",
            offset_loc(text, at, filename),
        )
    try:
        bytes.fromhex(text[start + 2 : end])
    except ValueError:
        raise ConvcanonError(
            f"blob '{name}' has a character that is not a hex digit", offset_loc(text, at, filename)
        ) from None
    word = bytes.fromhex(text[start + 2 : start + 2 + _ALIGNMENT_HEX_DIGITS])
    alignment = int.from_bytes(word, "little")
    if alignment & (alignment - 1) or not 0 < alignment <= MAX_BLOB_ALIGNMENT:
        why = (
            "is not a power of two"
            if alignment & (alignment - 1) or not alignment
            else (f"is over the limit of {MAX_BLOB_ALIGNMENT}")
        )
        raise ConvcanonError(
            f"dialect_resources section: blob '{name}' starts with alignment {alignment}, which "
            f"{why} (the first 4 bytes are the blob's alignment, little-endian)",
            offset_loc(text, start - 1, filename),
        )
    return _Blob(start + 2 + _ALIGNMENT_HEX_DIGITS, end, at)


def check_resource_section(text: str, filename: str) -> None:
    """Refuse a malformed `{-# ... #-}` section before MLIR's parser sees it: its parser crashes
    (SIGSEGV) on a file that ends inside a string of that section, and throws (no location) on
    an alignment word of 0 or 2^31."""
    if "{-#" in text:
        _scan(text, filename)


def _element_bytes(element: str) -> int | None:
    """Bytes per element in a blob; None for types it does not hold whole bytes of."""
    if element in _ELEMENT_BYTES:
        return _ELEMENT_BYTES[element]
    match = _INT_TYPE.fullmatch(element)
    if match is None:
        return None
    bits = int(match[1])
    if bits == 1:
        return 1
    return bits // 8 if bits in (8, 16, 32, 64) else None


def inline_dense_resources(text: str, filename: str = "<stdin>") -> str:
    """Every `dense_resource<name>` written back as `dense<"0x...">`, the sections dropped.

    Each referenced blob must exist and hold exactly the tensor's bytes. A text without
    `dense_resource` is returned as is. A section is kept when it holds other resources; a dropped
    one leaves its newlines, so the lines after it keep their numbers.
    """
    if _REFERENCE not in text:
        return text
    scan = _scan(text, filename)
    blobs = scan.blobs()
    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement), in text order
    for at in scan.references:
        name, after = _reference_name(text, filename, at + len(_REFERENCE))
        blob = blobs.get(name)
        if blob is None:
            missing = "no such blob" if scan.sections else "no dialect_resources section"
            raise ConvcanonError(
                f"dense_resource<{name}>: the file has {missing}", offset_loc(text, at, filename)
            )
        why = _size_error(text, after, name, blob)
        if why is not None:
            raise ConvcanonError(why, offset_loc(text, at, filename))
        cuts.append((at, after, f'dense<"0x{text[blob.start : blob.end]}">'))
    dropped = [section for section in scan.sections if section.only_builtin]
    for section in dropped:
        cuts.append(
            (section.start, section.end, "\n" * text.count("\n", section.start, section.end))
        )
    pieces: list[str] = []
    done = 0
    for start, end, replacement in sorted(cuts):
        pieces += [text[done:start], replacement]
        done = end
    pieces.append(text[done:])
    inlined = "".join(pieces)
    return inlined.rstrip() + "\n" if dropped else inlined


def _reference_name(text: str, filename: str, pos: int) -> tuple[str, int]:
    """The blob name of `dense_resource<name>` starting at `pos`, and the offset after its `>`."""
    if text.startswith('"', pos):
        close = string_end(text, pos)
        name, end = (text[pos + 1 : close - 1], close) if close is not None else ("", -1)
    else:
        match = _BARE_NAME.match(text, pos)
        name, end = (match[0], match.end()) if match else ("", -1)
    if end < 0 or not text.startswith(">", end):
        raise ConvcanonError(
            "expected a blob name and '>' after 'dense_resource<'",
            offset_loc(text, pos - len(_REFERENCE), filename),
        )
    return name, end + 1


def _size_error(text: str, after: int, name: str, blob: _Blob) -> str | None:
    """Why the blob does not hold exactly element bytes x element count of the type written
    after it; None when it does."""
    match = _TENSOR_TYPE.match(text, after)
    if match is None:
        return (
            f"dense_resource<{name}>: expected ': tensor<...>' with a static shape and no "
            "encoding after it"
        )
    element = match[2]
    per_element = _element_bytes(element)
    if per_element is None:
        return (
            f"dense_resource<{name}>: blobs of {element} are not supported (supported: floats "
            "and complex of whole bytes, i1, and 8/16/32/64-bit integers)"
        )
    count = 1
    for dim in match[1].split("x")[:-1]:
        count *= int(dim)
    expected = count * per_element
    if blob.size != expected:
        shape = match[1] + element
        return (
            f"dense_resource<{name}>: the blob holds {blob.size} bytes, tensor<{shape}> needs "
            f"{expected}"
        )
    return None
