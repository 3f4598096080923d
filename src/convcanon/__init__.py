"""convcanon: exact conv canonicalization (StableHLO/MHLO) and stride-faithful MIGraphX lowering.

Functions (the CLI's jobs, for code that already works in Python):

- `canonicalize_conv(module_or_text, dialect="stablehlo", **options)`: make every eligible
  convolution zero-padding and unit-stride (explicit `pad`, exact polyphase `slice`s); text in
  gives a `CanonicalizeResult` (`.text`, `.stats`), bytes in (MLIR bytecode or a portable
  artifact) one whose `.serialized` is in that format, an `ir.Module` in is rewritten in place,
  a `jax.export.Exported` in gives a new `Exported`.
  Options are the pass options with `_` for `-` (`gate="general"`, `negative_padding="slice"`).
- `from_jax(fn, *example_args, compare=False, **options)`: lower `fn` with JAX and canonicalize
  it; `compare=True` also runs both modules on XLA (`JaxCanonicalizeResult.max_abs_error`).
  Needs `pip install 'convcanon[xla]'`.
- `canonicalize_exported(exported, **options)`: a `jax.export.Exported` (also shape-polymorphic)
  whose module is canonical; it serializes, deserializes and `.call`s like the original.
- `verify_convs(before, after=None, pipeline=None, engine="reference")`: every rewritten conv
  judged on its own (the conv alone in f64 is the truth), one `ConvVerdict` each.
- `import_program(text)`, `lower_to_tosa(module)`, `print_module(module)`,
  `parse_module(text)`: MIGraphX printed programs to the migraphx dialect, that to TOSA, and
  either as MLIR text (xDSL; no JAX).
- `convcanon.examples.small_cnn`: the README's flax CNN (needs `convcanon[examples]`).

Everything is imported on first use, so `import convcanon` stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "CanonicalizeResult",
    "ConvVerdict",
    "JaxCanonicalizeResult",
    "canonicalize_conv",
    "canonicalize_exported",
    "from_jax",
    "import_program",
    "lower_to_tosa",
    "parse_module",
    "print_module",
    "verify_convs",
]
_HALF_B = frozenset({"import_program", "lower_to_tosa", "parse_module", "print_module"})

if TYPE_CHECKING:
    from convcanon.api import (
        CanonicalizeResult,
        JaxCanonicalizeResult,
        canonicalize_conv,
        canonicalize_exported,
        from_jax,
        verify_convs,
    )
    from convcanon.migraphx_api import import_program, lower_to_tosa, parse_module, print_module
    from convcanon.verify.local import ConvVerdict


def __getattr__(name: str) -> Any:
    """Load the API on first use (`convcanon.api` imports jaxlib's MLIR, `migraphx_api` xDSL)."""
    if name in _HALF_B:
        from convcanon import migraphx_api

        return getattr(migraphx_api, name)
    if name in __all__:
        from convcanon import api

        return getattr(api, name)
    raise AttributeError(f"module 'convcanon' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy API names too, so `dir()`, completion and `help()` list them."""
    return sorted({*globals(), *__all__})
