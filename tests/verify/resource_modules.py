"""Modules whose constant is written two ways: as torch-mlir writes weights (a `dense_resource` blob
in the trailing `dialect_resources` section) and as an element list `dense<[...]>` that MLIR parses
itself, so a reader that gets the blob's bytes wrong gives a different result."""

from __future__ import annotations

import numpy as np

ELEMENT_TYPES = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}


def element_dtype(element: str) -> np.dtype:
    if element == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return ELEMENT_TYPES[element]


def tensor_type(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def blob_hex(values: np.ndarray) -> str:
    """A builtin blob: alignment (the element size) as a little-endian uint32, then the bytes."""
    alignment = values.dtype.itemsize.to_bytes(4, "little")
    return "0x" + (alignment + np.ascontiguousarray(values).tobytes()).hex().upper()


def resource_section(blobs: dict[str, str]) -> str:
    entries = ",\n".join(f'      {name}: "{hexdata}"' for name, hexdata in blobs.items())
    return "{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}\n"


def _token(value: np.ndarray) -> str:
    """One element as MLIR writes it in a list: floats by their bit pattern, so every value
    (NaN payloads, -0, subnormals) is exact."""
    if value.dtype == np.bool_:
        return "true" if bool(value) else "false"
    if value.dtype.kind in "iu":
        return str(int(value))
    bits = value.view(f"u{value.dtype.itemsize}")
    return f"0x{int(bits):0{2 * value.dtype.itemsize}X}"


def element_list(values: np.ndarray) -> str:
    """The elements as nested lists (`dense<>` is MLIR's only spelling of an empty tensor)."""
    if values.size == 0:
        return ""
    if values.ndim == 0:
        return _token(values)
    return "[" + ", ".join(element_list(part) for part in values) + "]"


def add_constant_module(literal: str, ttype: str) -> str:
    """`x + constant`: the constant written as `literal`."""
    return f"""func.func @main(%x: {ttype}) -> {ttype} {{
  %w = stablehlo.constant {literal} : {ttype}
  %y = stablehlo.add %x, %w : {ttype}
  return %y : {ttype}
}}
"""


def add_constant_pair(values: np.ndarray, element: str) -> tuple[str, str]:
    """(the module with `values` as a dense_resource blob, the same module as a dense list)."""
    ttype = tensor_type(values.shape, element)
    resource = add_constant_module("dense_resource<weight>", ttype)
    resource += "\n" + resource_section({"weight": blob_hex(values)})
    dense = add_constant_module(f"dense<{element_list(values)}>", ttype)
    return resource, dense
