"""Which IR framework a file needs, from its text alone (before any parser is imported)."""

from __future__ import annotations


def sniff_framework(text: str) -> str:
    """A file with migraphx or tosa ops is half B's (xDSL); everything else is HLO (jaxlib)."""
    if "migraphx." in text or "tosa." in text or "!migraphx" in text:
        return "xdsl"
    return "hlo"
