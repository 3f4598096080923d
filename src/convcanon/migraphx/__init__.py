"""Half B: the `migraphx` dialect on xDSL, MIGraphX program import, lowering to TOSA.

The API (`import_program`, `lower_to_tosa`, `print_module`, `parse_module`) is loaded on first
use from `convcanon.migraphx_api`, so `import convcanon.migraphx` stays light (no xDSL until a
function is called), and importing a dialect module (`convcanon.migraphx.ops`) loads nothing
above the dialect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convcanon.migraphx_api import import_program, lower_to_tosa, parse_module, print_module

__all__ = ["import_program", "lower_to_tosa", "parse_module", "print_module"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from convcanon import migraphx_api

        return getattr(migraphx_api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
