"""One parse per module text for a command that reads the same module many times.

`verify` reads BEFORE for its signature, its memory plan, the local check and every trial's run
on the reference interpreter (and AFTER and both f64 copies as often); `run` reads a module for
its random inputs (and a migraphx module for its npz headers), then runs it. Inside
`each_text_parsed_once`, every such reader shares the first parse of a text, StableHLO's
(`read_only_file`) and migraphx/TOSA's (`read_only_xdsl_module`). The modules are shared, so
only readers take them: a pass or a widening changes its module and parses its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from jaxlib.mlir import ir
    from xdsl.dialects.builtin import ModuleOp

    from convcanon.hlo.io import HloFile

_Parsed = TypeVar("_Parsed")

# (parser, kind of text, text, file name, lines and columns of the file before it) -> its
# parse; None outside `each_text_parsed_once`
_PARSED: ContextVar[dict[tuple[Callable, type, str, str, int, int], Any] | None] = ContextVar(
    "parsed_modules", default=None
)


@contextlib.contextmanager
def each_text_parsed_once() -> Iterator[None]:
    """Readers inside share one parse of each (text, file name); all are freed on the way out."""
    token = _PARSED.set({})
    try:
        yield
    finally:
        _PARSED.reset(token)


def _shared(parse: Callable[[str, str], _Parsed], text: str, filename: str) -> _Parsed:
    """`parse(text, filename)`, shared inside `each_text_parsed_once`. A text that does not
    parse is parsed (and refused) each time."""
    from convcanon.diagnostics import lines_before, start_column

    parsed = _PARSED.get()
    if parsed is None:
        return parse(text, filename)
    # text read from bytecode prints differently; a chunk's ops are placed after the lines
    # and columns before it
    key = (parse, type(text), text, filename, lines_before(), start_column())
    found = parsed.get(key)
    if found is None:
        found = parsed[key] = parse(text, filename)
    return found


def read_only_file(text: str, filename: str) -> HloFile:
    """`hlo.io.parse_file_text(text, filename)`, shared inside `each_text_parsed_once`: the
    caller must not change the module."""
    from convcanon.hlo.io import parse_file_text

    return _shared(parse_file_text, text, filename)


def read_only_module(text: str, filename: str) -> ir.Module:
    """The module of `read_only_file`: not to be changed."""
    return read_only_file(text, filename).module


def read_only_xdsl_module(text: str, filename: str) -> ModuleOp:
    """`xdsl_io.parse_file_text(text, filename)` (a migraphx/TOSA module), shared inside
    `each_text_parsed_once`: the caller must not change the module, but for the interpreter's
    `reconcile_strides`, which retypes only intermediates and is a no-op the second time."""
    from convcanon.xdsl_io import parse_file_text

    return _shared(parse_file_text, text, filename)
