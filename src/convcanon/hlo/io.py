"""An HLO input file as the passes see it: the parsed module plus what printing it back needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from convcanon.hlo.context import ir, parse_module, print_module


@dataclass
class HloFile:
    """A parsed module, the name its diagnostics use, and how to print it back: with locations
    and/or in generic form when the input was, so an unchanged module prints back unchanged."""

    module: ir.Module
    filename: str
    debug_info: bool
    generic: bool = False


# The first op of a generic-form file is quoted: `"builtin.module"() ...` or `"func.func"() ...`
# (after any `#loc` alias lines and comments).
_GENERIC_START = re.compile(r'\A(?:\s*(?://[^\n]*|#[\w.$-]+\s*=[^\n]*))*\s*"[\w.]+"\(')


def parse_file_text(text: str, filename: str) -> HloFile:
    generic = _GENERIC_START.match(text) is not None
    return HloFile(parse_module(text, filename), filename, "loc(" in text, generic)


def print_file(parsed: HloFile) -> str:
    return print_module(parsed.module, debug_info=parsed.debug_info, generic=parsed.generic)
