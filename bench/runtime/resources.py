"""`dense_resource` weights, both ways, on the module text.

torch-mlir writes every weight as `dense_resource<name>` with the bytes in the file's trailing
`{-# dialect_resources: { builtin: { name: "0x<alignment><bytes>" } } #-}` section. XLA's
StableHLO import refuses them ("Only dense elements attr are supported"), so the bench inlines them
back into `dense<"0x<bytes>">` for XLA with the product's reader (re-exported here). A blob's hex
starts with its alignment as a little-endian uint32 (8 hex digits); the rest is the same
little-endian element bytes as a hex `dense` attribute.
"""

from __future__ import annotations

import re

from convcanon.hlo.resources import inline_dense_resources

__all__ = ["inline_dense_resources", "to_dense_resource"]

_HEX_CONSTANT = re.compile(r'stablehlo\.constant dense<"0x([0-9A-Fa-f]+)"> : tensor<([^>]*)>')
_ALIGNMENT = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2}


def _alignment_hex(tensor_type: str) -> str:
    element = tensor_type.rsplit("x", 1)[-1]
    return _ALIGNMENT.get(element, 1).to_bytes(4, "little").hex().upper()


def to_dense_resource(text: str) -> str:
    """Every hex-printed (i.e. not tiny, not splat) `stablehlo.constant` becomes a blob."""
    blobs: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = f"weight_{len(blobs)}_{match[2].replace('x', '_')}"
        blobs.append(f'      {name}: "0x{_alignment_hex(match[2])}{match[1]}"')
        return f"stablehlo.constant dense_resource<{name}> : tensor<{match[2]}>"

    body = _HEX_CONSTANT.sub(replace, text)
    if not blobs:
        return text
    section = ",\n".join(blobs)
    head = "{-#\n  dialect_resources: {\n    builtin: {\n"
    return f"{body.rstrip()}\n\n{head}{section}\n    }}\n  }}\n#-}}\n"
