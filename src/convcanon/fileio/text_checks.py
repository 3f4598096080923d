"""The cheap checks that refuse hostile text before a parser sees it.

MLIR's parsers recurse on brackets, size vectors by the indices and widths a text spells, and
read numbers of any length: a few kilobytes can ask them for gigabytes or minutes. Each check
here scans the text once, in bounded memory, and refuses what would cost without bound with a
located `ConvcanonError`.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator
from typing import Any

from convcanon.diagnostics import ConvcanonError, offset_loc


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
# Aliases nest through each other as deep as brackets (a JAX export's call-site locations two
# levels a frame); MLIR's printer survived 10k levels and died at 30k here.
MAX_ALIAS_NESTING = 1024


# Characters scanned at once: the scan's arrays are a few times a chunk, whatever the text's size
# (over the whole text they were 11 bytes a character: 2.2 GB for a 200 MB file).
NESTING_CHUNK = 1 << 22

# MLIR's string literal and `//` comment (neither spans lines; an unterminated string ends where
# MLIR's lexer refuses it): text that holds no bracket the parser recurses on.
_STRING_OR_COMMENT_START = re.compile(rb'"|//')


def _string_body_end(data: bytes, body: int) -> int:
    """Where the body of a string literal that starts at `body` ends: at its closing quote, at
    a newline, or before a backslash that escapes nothing (a newline, the end of `data`); each
    backslash pair is an escaped backslash. Found with `bytes.find`: a regex over the body ran
    0.2 us a character (9 s for a 40 MB hex blob, read on every parse)."""
    newline = data.find(b"\n", body)
    line_end = len(data) if newline < 0 else newline  # a string never spans lines
    at = body
    while True:
        quote = data.find(b'"', at, line_end)
        stop = line_end if quote < 0 else quote
        escape = stop
        while escape > body and data[escape - 1] == 0x5C:  # backslash
            escape -= 1
        if (stop - escape) % 2 == 0:
            return stop
        if stop == quote:  # an escaped quote is part of the body
            at = stop + 1
            continue
        return stop - 1  # a backslash before a newline or the end escapes nothing


_OPENERS, _CLOSERS = b"[{(<", b"]})>"
_BRACKETS = bytes.maketrans(_OPENERS + _CLOSERS, b"((((" + b"))))")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in _OPENERS + _CLOSERS)

# Where a chunk of text ends, for the lexer that masks strings and comments chunk by chunk.
_CODE, _STRING, _STRING_ESCAPE, _COMMENT, _CODE_SLASH = range(5)


def nesting_may_exceed(text: str, limit: int = MAX_NESTING) -> bool:
    """Whether `check_nesting` may refuse `text`, in C-speed passes over its bytes without numpy
    (a bound: real modules take ~10 passes): strings and comments blanked, the brackets kept and
    adjacent `()` pairs peeled, one level per pass (unmatched openers add their count); a run
    of more than `limit` unary minus signs; or aliases that nest deeper through each other."""
    code = _code_of(text)
    if b"-" * (limit + 1) in code.translate(None, b" \t\r\n"):
        return True
    if _bracket_bound(code, limit) > limit:
        return True
    return _deep_alias(text, limit * MAX_ALIAS_NESTING // MAX_NESTING, code) is not None


def _code_of(text: str) -> bytes:
    """`text` as bytes with its strings and comments blanked and each `->` made `==` (no bracket,
    and a breaker of minus runs as the arrow is)."""
    # a space, not nothing: "-" and ">" on either side of a string make no arrow
    data = text.encode(errors="surrogatepass")
    parts: list[bytes] = []
    done = 0
    for start in _starts_of_strings_and_comments(data):
        if start < done:  # inside the string or comment before
            continue
        parts += (data[done:start], b" ")
        if data.startswith(b"//", start):
            done = data.find(b"\n", start)
            done = len(data) if done < 0 else done
        else:  # a string, with its closing quote if it has one
            done = _string_body_end(data, start + 1)
            done += data.startswith(b'"', done)
    parts.append(data[done:])
    return b"".join(parts).replace(b"->", b"==")


def _starts_of_strings_and_comments(data: bytes) -> Iterator[int]:
    """Every `"` and `//` of `data`, in order, found by C-speed `find`s (a regex tried at every
    character costs ~7 ns a character; real modules hold a few strings and comments)."""
    quote, slashes = data.find(b'"'), data.find(b"//")
    while quote >= 0 or slashes >= 0:
        if slashes < 0 or 0 <= quote < slashes:
            yield quote
            quote = data.find(b'"', quote + 1)
        else:
            yield slashes
            slashes = data.find(b"//", slashes + 1)


def _bracket_bound(code: bytes, limit: int) -> int:
    """An upper bound of the bracket depth of `code` (see `nesting_may_exceed`), or limit + 1."""
    rest = code.translate(_BRACKETS, _NOT_BRACKETS)
    for passes in range(limit + 1):
        peeled = rest.replace(b"()", b"")
        if len(peeled) == len(rest):
            return passes + rest.count(b"(")
        rest = peeled
    return limit + 1


# `#name = ...` and `!name = ...`: an attribute or type alias, which later text names
_ALIAS_DEFINITION_TEXT = r"(?m)^[ \t]*([#!][A-Za-z_][\w.$-]*)[ \t]*="
_ALIAS_DEFINITION = re.compile(_ALIAS_DEFINITION_TEXT.encode())
_ALIAS_NAME = re.compile(rb"[#!][A-Za-z_][\w.$-]*")


def _deep_alias(text: str, limit: int, code: bytes | None = None) -> tuple[int, str] | None:
    """(offset, name) of the first alias whose value nests deeper than `limit` through the
    aliases it names (`!t2 = tuple<!t1>`, `#l2 = loc(callsite(#l1 at #l0))`): a chain of 30k
    such aliases nests as deep as 30k brackets, where MLIR's printer and location handling
    recurse, though no line holds a bracket more. Each alias's depth is its value's bracket
    bound plus the deepest alias it names (`code`: the text as `_code_of` gives it)."""
    if "#" not in text and "!" not in text or not re.search(_ALIAS_DEFINITION_TEXT, text):
        return None  # (the `in`s: C-speed scans, where the pattern costs ~6 ns a character)
    code = _code_of(text) if code is None else code
    definitions = list(_ALIAS_DEFINITION.finditer(code))
    depths: dict[bytes, int] = {}
    for index, definition in enumerate(definitions):
        end = definitions[index + 1].start() if index + 1 < len(definitions) else len(code)
        value = code[definition.end() : end]
        named = (depths.get(name, 0) for name in set(_ALIAS_NAME.findall(value)))
        depth = _bracket_bound(value, limit) + max(named, default=0)
        if depth > limit:  # where it is in the text (blanking strings moved the offsets)
            name = definition[1].decode(errors="replace")
            in_text = itertools.islice(re.finditer(_ALIAS_DEFINITION_TEXT, text), index, None)
            return next(in_text).start(1), name
        depths.setdefault(definition[1], depth)
    return None


def _string_end(data: bytes, body: int) -> tuple[int, int]:
    """The end of a string literal whose body starts at `body`, and the lexer's state there:
    _CODE past its quote or at a newline, _STRING or _STRING_ESCAPE at the chunk's end."""
    end = _string_body_end(data, body)
    if end == len(data):
        return end, _STRING
    if data[end] == ord('"'):
        return end + 1, _CODE
    if end == len(data) - 1 and data[end] == ord("\\"):  # escaping the next chunk's first
        return len(data), _STRING_ESCAPE
    return end, _CODE  # a newline: MLIR's lexer refuses the string there


def _strings_and_comments(data: bytes, state: int) -> tuple[list[tuple[int, int, bool]], int]:
    """The (start, end, is a comment) of each string literal and comment in a chunk that starts
    in `state`, and the state at its end: a lexer resumed chunk by chunk, so a line longer than a
    chunk costs no more memory."""
    spans: list[tuple[int, int, bool]] = []
    pos = 0
    if state == _CODE_SLASH:
        state = _COMMENT if data.startswith(b"/") else _CODE
    if state == _COMMENT:
        pos = data.find(b"\n")
        if pos < 0:
            return [(0, len(data), True)], _COMMENT
        spans.append((0, pos, True))
    elif state in (_STRING, _STRING_ESCAPE):
        if state == _STRING_ESCAPE and data.startswith(b"\n"):
            state = _CODE  # a backslash before a newline: the string ended there
        else:
            pos, state = _string_end(data, 1 if state == _STRING_ESCAPE else 0)
            spans.append((0, pos, False))
            if state != _CODE:
                return spans, state
    while (token := _STRING_OR_COMMENT_START.search(data, pos)) is not None:
        if token[0] == b"//":
            pos = data.find(b"\n", token.start())
            if pos < 0:
                spans.append((token.start(), len(data), True))
                return spans, _COMMENT
            spans.append((token.start(), pos, True))
        else:
            pos, state = _string_end(data, token.end())
            spans.append((token.start(), pos, False))
            if state != _CODE:
                return spans, state
    return spans, _CODE_SLASH if data.endswith(b"/") else _CODE


def check_nesting(text: str, filename: str, limit: int = MAX_NESTING) -> None:
    """Refuse input nested deeper than `limit` brackets before a recursive parser sees it.

    MLIR's C++ parser recurses per `[`, `{`, `(` and `<` (types and attributes such as
    `tuple<tuple<...>>`) and per unary minus in an affine expression; a hostile file nested 100k
    deep overflows the stack and kills the process. Real modules nest a few dozen levels at
    most. Brackets in string literals and comments are no nesting, and a closer with nothing
    open closes nothing (the parser stops there): counting them, a comment of 100k `)` let a
    100k-deep nest through, a string `")"` beside each `[` of one, and a comment of 300 `(`
    refused a valid module. The `>` of `->` closes nothing.
    """
    scan = _NestingScan(text, filename, limit)
    for start in range(0, len(text), NESTING_CHUNK):
        scan.chunk(start)
    scan.finish()
    alias_limit = limit * MAX_ALIAS_NESTING // MAX_NESTING
    if (deep := _deep_alias(text, alias_limit)) is not None:
        raise ConvcanonError(
            f"alias {deep[1]} nests deeper than {alias_limit} levels through the aliases it names",
            offset_loc(text, deep[0], filename),
        )


class _NestingScan:
    """`check_nesting` one chunk at a time (its arrays are a few times a chunk), with what it
    carries from one chunk to the next."""

    def __init__(self, text: str, filename: str, limit: int) -> None:
        import numpy as np

        self.text, self.filename, self.limit = text, filename, limit
        self.step = np.zeros(256, dtype=np.int8)
        self.step[list(_OPENERS)] = 1
        self.step[list(_CLOSERS)] = -1
        self.space = np.zeros(256, dtype=bool)
        self.space[list(b" \t\r\n")] = True
        self.depth = self.deepest = self.where = 0  # bracket depth; the first deepest bracket
        self.run = 0  # unary minus signs in a row
        self.run_before_last = 0  # the run before the last byte (a "/" that may open a comment)
        self.state = _CODE  # the lexer's
        self.ends_in_dash = self.ends_in_minus = False  # maybe an arrow's "-", cut from its ">"

    def chunk(self, start: int) -> None:
        import numpy as np

        data = self.text[start : start + NESTING_CHUNK].encode(errors="surrogatepass")
        chunk = np.frombuffer(data, dtype=np.uint8)
        steps = self.step[chunk]
        minus = chunk == ord("-")
        arrow = (chunk[1:] == ord(">")) & minus[:-1]
        steps[1:][arrow] = 0
        minus[:-1][arrow] = False
        if self.ends_in_dash and chunk[0] == ord(">"):
            steps[0] = 0
            self.run = 0 if self.ends_in_minus else self.run  # an arrow breaks the run
        elif self.ends_in_minus and self.run > self.limit:
            self._too_many_minus_signs(start - 1)
        if self.state == _CODE_SLASH and data.startswith(b"/"):
            self.run = self.run_before_last  # the "/" ending the last chunk opened a comment
        spans, self.state = _strings_and_comments(data, self.state)
        quiet = self.space[chunk]  # what continues a run of minus signs: whitespace, comments
        for begin, end, comment in spans:
            steps[begin:end] = 0
            minus[begin:end] = False
            quiet[begin:end] = comment
        self._brackets(steps, data, start)
        self._minus_signs(minus, quiet, data, start)
        self.ends_in_dash = data.endswith(b"-")
        self.ends_in_minus = bool(minus[-1])

    def _brackets(self, steps: Any, data: bytes, start: int) -> None:
        import numpy as np

        running = np.cumsum(steps, dtype=np.int32)
        running += self.depth
        floor = np.minimum.accumulate(running)
        np.minimum(floor, 0, out=floor)
        running -= floor  # a closer with nothing open closes nothing
        top = int(np.argmax(running))
        if int(running[top]) > self.deepest:  # a bracket is one byte: the bytes before decode
            self.deepest = int(running[top])
            self.where = start + len(data[:top].decode(errors="surrogatepass"))
        self.depth = int(running[-1])

    def _minus_signs(self, minus: Any, quiet: Any, data: bytes, start: int) -> None:
        import numpy as np

        signs = np.cumsum(minus, dtype=np.int32)
        signs += self.run
        signs -= np.maximum.accumulate(np.where(~minus & ~quiet, signs, 0))
        settled = signs[:-1] if minus[-1] else signs  # a last "-" may be an arrow's
        if settled.size and int(settled.max()) > self.limit:
            first = int(np.argmax(settled > self.limit))
            self._too_many_minus_signs(start + len(data[:first].decode(errors="surrogatepass")))
        self.run_before_last = int(signs[-2]) if len(signs) > 1 else self.run
        self.run = int(signs[-1])

    def _too_many_minus_signs(self, at: int) -> None:
        raise ConvcanonError(
            f"input nests deeper than {self.limit} levels of unary minus signs",
            offset_loc(self.text, at, self.filename),
        )

    def finish(self) -> None:
        if self.ends_in_minus and self.run > self.limit:
            self._too_many_minus_signs(len(self.text) - 1)
        if self.deepest > self.limit:
            raise ConvcanonError(
                f"input nests deeper than {self.limit} levels of brackets",
                offset_loc(self.text, self.where, self.filename),
            )


MAX_INTEGER_WIDTH = 16777215  # MLIR's IntegerType::kMaxWidth
MAX_READ_INTEGER_WIDTH = 4096  # the widest read: our dialects use 64 bits at most
# an integer type token (`i32`, `si8`, `ui4`, the element of `4xi8`) of 4 or more digits, not
# part of a name
_WIDE_INTEGER = r"(?:(?<=[\d?]x)|(?<![\w$.%@#!-]))[su]?i(\d{4,})(?![\w.$-])"


def check_integer_widths(text: str, filename: str) -> None:
    """Refuse an integer type wider than MAX_READ_INTEGER_WIDTH before a parser reads it: xDSL
    computes the type's value range, `1 << width`, so a 14-byte `: i99999999999` would take the
    machine's memory, and MLIR holds each value of it in `width` bits, so 300 attributes
    `N : i16777215` (7 KB of text) took 735 MB. Past MLIR's own limit the message is its own.

    The text is scanned for the literal `i` and 4 digits, and the whole pattern tried only where
    that occurs: its lookbehinds, tried at every character, cost ~50 ns a character. A line
    with a hit is lexed once for its strings and its comment, where a width is no type."""
    wide = re.compile(_WIDE_INTEGER)
    code = _CodeLines(text)
    for hint in re.finditer(r"i\d{4}", text):
        at = hint.start()
        sign = at - 1 if at and text[at - 1] in "su" else at
        match = wide.match(text, sign) or wide.match(text, at)
        if match is None:
            continue
        digits = match[1]
        beyond_mlir = len(digits) > len(str(MAX_INTEGER_WIDTH)) or int(digits) > MAX_INTEGER_WIDTH
        if not beyond_mlir and int(digits) <= MAX_READ_INTEGER_WIDTH:
            continue
        if code.holds(match.start()):
            message = (
                "invalid integer width"
                if beyond_mlir
                else f"integer type of {int(digits)} bits: at most {MAX_READ_INTEGER_WIDTH} are"
                " read (each value of it would take that many bits)"
            )
            raise ConvcanonError(message, offset_loc(text, match.start(), filename))


# A conv's dimension numbers (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`): StableHLO's and MHLO's
# parser sizes a vector by the largest index in them, so `[b, 2000000000, 1, f]` (a 400-byte
# file) took 15.7 GB. No conv has this many dimensions.
MAX_CONV_DIMENSION_INDEX = 4095
_CONV_DIMENSIONS = re.compile(
    r"\s*(?:=\s*)?(\[[^\]\n]{0,400}\]\s*x\s*\[[^\]\n]{0,400}\]\s*->\s*\[[^\]\n]{0,400}\])"
)


def check_conv_dimension_indices(text: str, filename: str) -> None:
    """Refuse a conv dimension index past MAX_CONV_DIMENSION_INDEX (after `dim_numbers =` or in
    a `#stablehlo.conv<...>` / `#mhlo.conv<...>` attribute) before MLIR's parser allocates by
    it. Found by `str.find`s for the two spellings, the brackets read only there."""
    code = _CodeLines(text)
    for opener in ("dim_numbers", ".conv<"):
        at = text.find(opener)
        while at >= 0:
            after = at + len(opener)
            lists = _CONV_DIMENSIONS.match(text, after)
            if lists is not None and code.holds(at):
                for index in re.finditer(r"\d+", lists[1]):
                    if len(index[0]) > 4 or int(index[0]) > MAX_CONV_DIMENSION_INDEX:
                        raise ConvcanonError(
                            f"conv dimension index {index[0]}: at most"
                            f" {MAX_CONV_DIMENSION_INDEX} (no conv has more dimensions)",
                            offset_loc(text, lists.start(1) + index.start(), filename),
                        )
            at = text.find(opener, after)


class _CodeLines:
    """Whether a character of `text` is code (not in a string literal or a `//` comment): its
    line lexed on first need and kept, for a scan whose hits come in order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_start, self.line_end = 0, -1  # the line lexed last
        self.strings: list[tuple[int, int]] = []
        self.comment = 0

    def holds(self, offset: int) -> bool:
        text = self.text
        if offset > self.line_end:
            self.line_start = text.rfind("\n", 0, offset) + 1
            line_end = text.find("\n", offset)
            self.line_end = len(text) if line_end < 0 else line_end
            self.strings, self.comment = lex_line(text[self.line_start : self.line_end])
        column = offset - self.line_start
        inside = bisect.bisect_right(self.strings, (column, len(text))) - 1  # the last before
        return column < self.comment and not (inside >= 0 and column < self.strings[inside][1])


# The digits of 2^4096: every value of an integer type up to 4096 bits (our dialects use 64).
MAX_NUMBER_DIGITS = 1234
_DIGITS_ONLY = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))  # "0" or " "


def check_number_digits(text: str, filename: str) -> None:
    """Refuse a number of more than MAX_NUMBER_DIGITS digits before MLIR parses it: its parser
    reads a decimal integer in time that grows with the square of its digits or worse (1,300
    digits 0.03 s, 4,300 0.4 s, 40,000 67 s: a 40 KB file). Strings (a hex blob of zeros) and
    comments hold no number. Long runs of digits are found by C-speed passes over the bytes;
    only a line that has one is lexed."""
    if len(text) <= MAX_NUMBER_DIGITS:
        return
    data = text.encode(errors="surrogatepass")
    digits = data.translate(_DIGITS_ONLY)
    long_run = b"0" * (MAX_NUMBER_DIGITS + 1)
    ascii_only = len(data) == len(text)
    code = _CodeLines(text)
    decoded = start = 0  # the bytes decoded so far, and the characters they are
    at = digits.find(long_run)
    while at >= 0:
        end = digits.find(b" ", at)
        end = len(digits) if end < 0 else end
        if ascii_only:
            start = at
        else:  # a run starts a character; decoding on from the last keeps the scan linear
            start += len(data[decoded:at].decode(errors="surrogatepass"))
            decoded = at
        if code.holds(start):
            raise ConvcanonError(
                f"a number of {end - at} digits: at most {MAX_NUMBER_DIGITS} are read (every"
                " integer up to 4096 bits has fewer; MLIR reads one in time quadratic in them)",
                offset_loc(text, start, filename),
            )
        at = digits.find(long_run, end)


def lex_line(line: str) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) of each string literal of a line of MLIR, and where its `//` comment
    starts (its length if none): the parts that hold no ops or types. A quote that no
    unescaped quote closes on the line opens no string, nor does any after it. Found with
    `str.find`, not a regex over the string bodies: that ran 0.2 us a character (9 s for a
    40 MB hex blob)."""
    strings: list[tuple[int, int]] = []
    at = 0
    while True:
        quote, slashes = line.find('"', at), line.find("//", at)
        if slashes >= 0 and (quote < 0 or slashes < quote):
            return strings, slashes
        if quote < 0:
            return strings, len(line)
        close = _closing_quote(line, quote + 1)
        if close < 0:  # no quote after it closes one (each is escaped as it was for it)
            comment = line.find("//", quote + 1)
            return strings, len(line) if comment < 0 else comment
        strings.append((quote, close + 1))
        at = close + 1


def _closing_quote(line: str, body: int) -> int:
    """The quote that ends a string literal whose body starts at `body`: the first one after
    an even run of backslashes (each pair an escaped backslash); -1 if none."""
    at = body
    while (quote := line.find('"', at)) >= 0:
        escape = quote
        while escape > body and line[escape - 1] == "\\":
            escape -= 1
        if (quote - escape) % 2 == 0:
            return quote
        at = quote + 1
    return -1
