"""Reading a file or stdin whole, bounded.

A file over the input size limit, or a device that never ends (`/dev/zero`), is refused before it
is read whole; a stream is refused as soon as it has sent more than the limit.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from typing import BinaryIO

from convcanon.diagnostics import (
    ConvcanonError,
    SourceLoc,
    UsageError,
    path_named,
    remember_source,
)
from convcanon.fileio.limits import input_limit, over_limit

READ_CHUNK = 1 << 20  # what a stream is read in, so a refusal never waits for the whole input

MLIR_BYTECODE_MAGIC = b"ML\xefR"  # the first bytes of MLIR bytecode


def _read_bounded(handle: BinaryIO, loc: SourceLoc, limit: int, first: int = READ_CHUNK) -> bytes:
    """Read chunks until EOF, refusing as soon as more than `limit` bytes came, so `cat
    /dev/zero |` stops at the limit. NUL bytes are read as any other: MLIR's lexer takes one as
    whitespace (in a string or a comment, as part of it), from a file and from stdin alike.
    `first` sizes the first read (a regular file's size: one read, no join)."""
    chunks: list[bytes] = []
    total = 0
    size = max(first, 1)
    while True:
        chunk = handle.read(min(size, limit + 1 - total))
        size = READ_CHUNK
        if not chunk:
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise over_limit(loc, limit)


def refuse_stdin_twice(inputs: dict[str, str | None]) -> None:
    """A usage error when two of a command's inputs (by the name its usage gives them) are
    stdin (`-`, or a name of descriptor 0 such as `/dev/stdin`): stdin is read once, and the
    second would read nothing (a `.npz` that was "no zip header")."""
    from convcanon.fileio.output_file import descriptor_named

    named = [
        name
        for name, path in inputs.items()
        if path is not None and (path == "-" or descriptor_named(path) == 0)
    ]
    if len(named) > 1:
        raise UsageError(f"{' and '.join(named)} cannot both be stdin (-): stdin is read once")


def _os_error(err: OSError, loc: SourceLoc) -> ConvcanonError:
    if isinstance(err, FileNotFoundError):
        return ConvcanonError("no such file", loc)
    if isinstance(err, IsADirectoryError):
        return ConvcanonError("is a directory, expected a file", loc)
    return ConvcanonError(err.strerror or str(err), loc)


def read_input_bytes(path: str, limit: int | None = None) -> tuple[str, bytes]:
    """Read a file (`-` is stdin) whole, bounded; returns (display name, bytes).

    Regular files over the limit are refused from their size alone; pipes, FIFOs and terminals
    are read in chunks up to the limit; other devices (`/dev/zero`, `/dev/urandom`, disks) are
    refused unless they are empty, like `/dev/null`. The bytes are the same from a file and from
    a pipe: whatever they hold is the parser's to judge.
    """
    limit = input_limit(limit)
    name = "<stdin>" if path == "-" else path_named(path)
    data = _read_path(path, SourceLoc(name), limit)
    if not data.startswith(MLIR_BYTECODE_MAGIC):  # no line of it is ever shown
        remember_source(name, data)
    return name, data


def _read_path(path: str, loc: SourceLoc, limit: int) -> bytes:
    try:
        if path == "-":
            stdin = sys.stdin
            if stdin is None:
                raise ConvcanonError("no stdin to read", loc)
            if not hasattr(stdin, "buffer"):  # a text stream put in place by a caller (tests)
                data = stdin.read(limit + 1).encode()
                if len(data) > limit:
                    raise over_limit(loc, limit)
                return data
            return _read_from(stdin.buffer, loc, limit)
        with open(path, "rb", buffering=0) as raw:
            return _read_from(raw, loc, limit)
    except OSError as err:
        raise _os_error(err, loc) from None


def _read_from(handle: BinaryIO, loc: SourceLoc, limit: int) -> bytes:
    try:
        mode = os.fstat(handle.fileno()).st_mode
    except (OSError, io.UnsupportedOperation):
        mode = stat.S_IFIFO  # no descriptor: a stream, read it bounded
    if stat.S_ISDIR(mode):
        raise ConvcanonError("is a directory, expected a file", loc)
    if stat.S_ISREG(mode):
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise over_limit(loc, limit, size)
        return _read_bounded(handle, loc, limit, first=size + 1)
    elif (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and not os.isatty(handle.fileno()):
        if handle.read(1):
            kind = "character" if stat.S_ISCHR(mode) else "block"
            raise ConvcanonError(
                f"is a {kind} device, not a file (a device like /dev/zero never ends)", loc
            )
        return b""
    return _read_bounded(handle, loc, limit)


class NotUtf8Error(ConvcanonError):
    """Input that is not UTF-8 text, at its first bad byte (`offset` in the file)."""

    def __init__(self, offset: int, loc: SourceLoc, in_string: int | None = None) -> None:
        message = f"not UTF-8 text (byte {offset})"
        if in_string is not None:  # mlir-opt keeps it; our parsers hold text, not bytes
            message += f" in a string literal: write the byte as the escape \\{in_string:02X}"
        super().__init__(message, loc)
        self.offset = offset
        self.in_string = in_string is not None


def read_input(path: str, limit: int | None = None) -> tuple[str, str]:
    """Read a text input (`-` is stdin), bounded; returns (display name, text).

    `\\r\\n` line ends read as `\\n`; lines are counted at `\\n` alone, as MLIR counts them.
    """
    name, data = read_input_bytes(path, limit)
    return name, decoded(name, data)


def decoded(name: str, data: bytes) -> str:
    """UTF-8 `data` as text, `\\r\\n` ends as `\\n`, or `NotUtf8Error` at the first bad byte
    outside a `//` comment. A lone `\\r` stays: MLIR reads it as a space, so lines are counted
    at `\\n` alone, as mlir-opt counts them (and a string literal keeps its carriage return)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = _comment_bytes_replaced(name, data)
    return text.replace("\r\n", "\n") if "\r\n" in text else text


# A bad byte decoded with `surrogateescape`, and what a line holds before its `//` comment: code
# and whole string literals (escapes included), matched without backtracking.
_BAD_BYTE = re.compile("[\udc80-\udcff]")
_STRING_BODY = r'"(?:[^"\\\n]++|\\.)*+'
_CODE_AND_STRINGS = re.compile(rf'(?:[^"/\n]++|/(?!/)|{_STRING_BODY}")*+')
_BEFORE_COMMENT = re.compile(rf'(?:[^"/\n]++|/(?!/)|{_STRING_BODY}"?)*+(?=//)')


def _comment_bytes_replaced(name: str, data: bytes) -> str:
    """The text with each byte that is not UTF-8 inside a `//` comment as `?` (one byte for one,
    so columns stay), as mlir-opt reads a comment's bytes unseen (a Latin-1 `é` in a
    hand-written file); `NotUtf8Error` at the first bad byte elsewhere."""
    text = data.decode("utf-8", "surrogateescape")
    line_end, comment_at = -1, -1
    for bad in _BAD_BYTE.finditer(text):
        at = bad.start()
        if at > line_end:  # the first bad byte of its line: each line is scanned once
            before = _BEFORE_COMMENT.match(text, text.rfind("\n", 0, at) + 1)
            comment_at = before.end() if before else -1
            line_end = text.find("\n", at) % (len(text) + 1)  # no newline: the text's end
        if comment_at < 0 or at < comment_at:
            offset = len(text[:at].encode("utf-8", "surrogateescape"))
            line_offset = data.rfind(b"\n", 0, offset) + 1
            where = SourceLoc(name, data.count(b"\n", 0, offset) + 1, offset - line_offset + 1)
            # cut at the bad byte, a string around it cannot close: the code stops at its quote
            code = _CODE_AND_STRINGS.match(text, text.rfind("\n", 0, at) + 1, at)
            in_string = code is not None and text.startswith('"', code.end()) and code.end() < at
            raise NotUtf8Error(offset, where, data[offset] if in_string else None)
    return _BAD_BYTE.sub("?", text)
