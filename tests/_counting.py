"""Counts for tests of a bound: what a command hands an inner step (calls, their arguments) and
the bytes a process reads from one file. A bound is proven by a count the limit determines, never
by wall-clock time, which a loaded machine stretches and a fast one hides."""

from __future__ import annotations

import builtins
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a child process imports this module too: it needs no pytest
    import pytest


class Reached(BaseException):
    """A step that a limit must keep unreached was called. It is raised instead of running the
    step, so a regression fails at once rather than allocating what the limit guards; a
    BaseException, so no `except Exception` in the code under test turns it into a diagnostic."""


def record_calls(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, *, refuse: bool = False
) -> list[tuple[Any, ...]]:
    """Wrap `owner.name` (a key when `owner` is a dict) to record each call's positional
    arguments in the returned list, then run it; with `refuse`, raise `Reached` instead."""
    table = owner if isinstance(owner, dict) else None
    original: Callable[..., Any] = table[name] if table is not None else getattr(owner, name)
    calls: list[tuple[Any, ...]] = []
    what = getattr(original, "__qualname__", name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        if refuse:
            raise Reached(f"{what} was reached (call {len(calls)}), past the limit guarding it")
        return original(*args, **kwargs)

    if table is not None:
        monkeypatch.setitem(table, name, recording)
    else:
        monkeypatch.setattr(owner, name, recording)
    return calls


def count_reads_into(path: str, report: str) -> None:
    """In a child process: count the opens of `path` through `open` and the bytes read from
    them; the file `report` holds `OPENS BYTES` after each (convcanon-opt ends in `os._exit`,
    which runs no exit handler)."""
    opens = [0]
    read = [0]
    real_open = builtins.open

    class CountedFile(io.FileIO):
        def read(self, size: int | None = -1) -> bytes | None:
            data = super().read(size)
            counted(0, len(data or b""))
            return data

        def readall(self) -> bytes:
            data = super().readall()
            counted(0, len(data))
            return data

        def readinto(self, buffer: Any) -> int | None:
            count = super().readinto(buffer)
            counted(0, count or 0)
            return count

    def counted(opened: int, bytes_read: int) -> None:
        opens[0] += opened
        read[0] += bytes_read
        with real_open(report, "w") as handle:
            handle.write(f"{opens[0]} {read[0]}")

    def counting_open(file: Any, mode: str = "r", buffering: int = -1, *args: Any, **kw: Any):
        if file != path:
            return real_open(file, mode, buffering, *args, **kw)
        if mode != "rb" or buffering != 0 or args or kw:  # how fileio reads: a raw file
            raise AssertionError(f"{path} opened as {mode!r}, {buffering}: not counted")
        counted(1, 0)
        return CountedFile(file, "r")

    counted(0, 0)
    builtins.open = counting_open
