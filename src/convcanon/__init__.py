"""convcanon: exact conv canonicalization (StableHLO/MHLO) and stride-faithful MIGraphX lowering.

The public API (`canonicalize_conv`, `from_jax`; `migraphx.import_program`, `lower_to_tosa`)
is imported lazily so that `import convcanon` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["CanonicalizeResult", "JaxCanonicalizeResult", "canonicalize_conv", "from_jax"]

if TYPE_CHECKING:
    from convcanon.api import CanonicalizeResult, JaxCanonicalizeResult, canonicalize_conv, from_jax


def __getattr__(name: str) -> Any:
    if name in __all__:
        from convcanon import api

        return getattr(api, name)
    raise AttributeError(f"module 'convcanon' has no attribute {name!r}")
