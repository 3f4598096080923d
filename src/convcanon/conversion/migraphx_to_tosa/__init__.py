"""`migraphx-to-tosa`: type conversion at the boundary, per-op lowerings, the TOSA emitter.

The pass is imported on first use, so the registry can read `options` without loading xDSL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["migraphx_to_tosa"]

if TYPE_CHECKING:
    from convcanon.conversion.migraphx_to_tosa.function_lowering import migraphx_to_tosa


def __getattr__(name: str) -> Any:
    if name == "migraphx_to_tosa":
        from convcanon.conversion.migraphx_to_tosa.function_lowering import migraphx_to_tosa

        return migraphx_to_tosa
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
