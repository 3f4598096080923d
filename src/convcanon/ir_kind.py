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


_OPS = {"hlo": "StableHLO/MHLO", "xdsl": "migraphx/TOSA"}
_TAKEN_BY = {"hlo": "stablehlo-canonicalize-conv or canonicalize-conv", "xdsl": "migraphx-to-tosa"}


def with_other_half_hint(message: str, text: str, framework: str) -> str:
    """A parse error under `framework`'s passes, saying so when the module is the other half's
    and which pass takes it (MLIR's advice to allow unregistered dialects dropped: wrong here)."""
    found = sniff_framework(text, default=framework)
    if found == framework:
        return message
    message = message.split(". If this is intended", 1)[0]
    return f"{message} (this module holds {_OPS[found]} ops: {_TAKEN_BY[found]} takes them)"
