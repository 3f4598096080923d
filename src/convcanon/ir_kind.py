"""Which IR framework a file needs, from its text alone (before any parser is imported)."""

from __future__ import annotations


def sniff_framework(text: str, default: str = "hlo") -> str:
    """A file with migraphx or tosa ops is half B's (xDSL), one with HLO ops is jaxlib's; a
    module with neither (a lowered squeeze is a bare `func.return`) gets `default`."""
    if "migraphx." in text or "tosa." in text or "!migraphx" in text:
        return "xdsl"
    if "stablehlo." in text or "mhlo." in text or "chlo." in text:
        return "hlo"
    return default
