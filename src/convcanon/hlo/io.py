"""An HLO input file as the passes see it: the parsed module plus what printing it back needs."""

from __future__ import annotations

from dataclasses import dataclass

from convcanon.hlo.context import ir, parse_module, print_module


@dataclass
class HloFile:
    """A parsed module, the name its diagnostics use, and whether to print locations back."""

    module: ir.Module
    filename: str
    debug_info: bool


def parse_file_text(text: str, filename: str) -> HloFile:
    return HloFile(parse_module(text, filename), filename, debug_info="loc(" in text)


def print_file(parsed: HloFile) -> str:
    return print_module(parsed.module, debug_info=parsed.debug_info)
