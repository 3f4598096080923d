"""`dense_resource` weights, both ways, on the module text.

torch-mlir writes every weight as `dense_resource<name>` with the bytes in the file's trailing
`{-# dialect_resources: { builtin: { name: "0x<alignment><bytes>" } } #-}` section. XLA's
StableHLO import refuses them ("Only dense elements attr are supported"), so the bench inlines them
back into `dense<"0x<bytes>">` for XLA. A blob's hex starts with its alignment as a little-endian
uint32 (8 hex digits); the rest is the same little-endian element bytes as a hex `dense` attribute.
"""

from __future__ import annotations

import re

_HEX_CONSTANT = re.compile(r'stablehlo\.constant dense<"0x([0-9A-Fa-f]+)"> : tensor<([^>]*)>')
_RESOURCES = re.compile(r"\{-#\s*dialect_resources:\s*\{\s*builtin:\s*\{(.*?)\}\s*\}\s*#-\}", re.S)
_BLOB = re.compile(r'([\w.$-]+|"[^"]*")\s*:\s*"0x([0-9A-Fa-f]*)"')
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


def inline_dense_resources(text: str) -> str:
    """`dense_resource<name>` -> `dense<"0x...">` and the resource section dropped, for XLA."""
    section = _RESOURCES.search(text)
    if section is None:
        return text
    blobs = {name.strip('"'): hexdata[8:] for name, hexdata in _BLOB.findall(section[1])}
    body = text[: section.start()] + text[section.end() :]

    def replace(match: re.Match[str]) -> str:
        return f'dense<"0x{blobs[match[1].strip(chr(34))]}">'

    return re.sub(r'dense_resource<([\w.$-]+|"[^"]*")>', replace, body)
