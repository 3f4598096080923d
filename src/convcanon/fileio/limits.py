"""How much a command may read, and how long it may wait: one limit per command context."""

from __future__ import annotations

import re
from contextvars import ContextVar

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError

DEFAULT_MAX_INPUT_SIZE = 1 << 30
MAX_INPUT_SIZE_HELP = (
    "refuse input files (and npz contents) larger than this, before reading them "
    "(default 1GiB; e.g. 64MiB, 4GiB or a byte count)"
)

_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 10**6, "gb": 10**9, "kib": 1 << 10, "mib": 1 << 20}
_UNITS |= {"gib": 1 << 30, "tib": 1 << 40, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


INT64_MAX = (1 << 63) - 1  # the largest limit or count handed to native code (setrlimit, MLIR)


def parse_byte_size(text: str | int, what: str) -> int:
    """`4GiB`, `512MiB`, `1.5GiB`, `1000000` (bytes) -> bytes, exactly (a float lost the last
    digits of a count over 2^53 and overflowed past 1e308); anything else, under one byte (a
    limit of 0 would silently mean the default, or nothing could run) or over int64 is a usage
    error."""
    if isinstance(text, int):
        size = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
        if match is None or match[2].lower() not in _UNITS:
            raise UsageError(f"bad {what} {text!r} (use e.g. 4GiB, 512MiB or a byte count)")
        whole, _, fraction = match[1].partition(".")
        whole, fraction = whole.lstrip("0")[:20], fraction[:20]  # 20 digits: past int64 already
        size = int(whole + fraction or "0") * _UNITS[match[2].lower()] // 10 ** len(fraction)
    if size < 1:
        raise UsageError(f"bad {what} {text!r}: it must be at least one byte")
    if size > INT64_MAX:
        raise UsageError(f"bad {what} {text!r}: it must be at most {INT64_MAX} bytes")
    return size


MAX_TIMEOUT = 1e6  # seconds (11 days): past it a wait's milliseconds overflow


def check_timeout(seconds: float) -> float:
    """A `--timeout` in seconds; nan or inf would leave the wait unbounded."""
    if not (0 < seconds <= MAX_TIMEOUT):
        raise UsageError(
            f"--timeout must be a number of seconds > 0 and <= {MAX_TIMEOUT:g}, not {seconds:g}"
        )
    return seconds


_input_limit: ContextVar[int] = ContextVar("max_input_size", default=DEFAULT_MAX_INPUT_SIZE)


def set_max_input_size(limit: str | int) -> int:
    """From now on in this context every reader refuses inputs over `limit` bytes.

    The CLI runs each command in a copy of the context, so the setting ends with the command.
    """
    size = parse_byte_size(limit, "input size limit")
    _input_limit.set(size)
    return size


def input_limit(given: int | None = None) -> int:
    """`given`, or the limit set for this context (`--max-input-size`)."""
    return _input_limit.get() if given is None else given


def over_limit(loc: SourceLoc, limit: int, size: int | None = None) -> ConvcanonError:
    """The one message every reader gives for an input over the limit (`size` when known)."""
    known = f"is {size} bytes, " if size is not None else ""
    return ConvcanonError(
        f"input {known}over the input size limit of {limit} bytes (--max-input-size)", loc
    )
