"""Storage of the element types outside TOSA 1.0's profiles, as `migraphx-to-tosa{types=conformant}`
passes them: each value is its storage integer, the buffers are MIGraphX's.

fp8 FNUZ (f8E4M3FNUZ, f8E5M2FNUZ) and e8m0 (f8E8M0FNU) values are one byte each, their code;
fp4 (f4E2M1FN) and int4 (si4/ui4) values are packed two to a byte, element 2j in the low nibble
of byte j and element 2j+1 in the high one (an odd count leaves the last high nibble 0). A
function argument or result of such a type is `tensor<Bxi8>` (B bytes) carrying the attributes
`convcanon.element` (the element type) and `convcanon.elements` (the element count), so a caller
can pack and unpack its buffers without the migraphx source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Float4E2M1FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E8M0FNUType,
    IntegerType,
)
from xdsl.ir import Attribute

ELEMENT_ATTR = "convcanon.element"
COUNT_ATTR = "convcanon.elements"

_FOREIGN_FLOATS = (Float8E4M3FNUZType, Float8E5M2FNUZType, Float8E8M0FNUType, Float4E2M1FNType)


def is_foreign(element_type: Attribute) -> bool:
    """Whether IREE's TOSA 1.0 profiles refuse tensors of this element type (the OCP fp8
    types f8E4M3FN and f8E5M2 are in the fp8 extensions, f16/bf16/f32 in the float profile)."""
    return isinstance(element_type, _FOREIGN_FLOATS) or is_int4(element_type)


def is_int4(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type.width.data == 4


def is_packed(element_type: Attribute) -> bool:
    """4-bit types: two values per byte."""
    return is_int4(element_type) or isinstance(element_type, Float4E2M1FNType)


def storage_bytes(element_type: Attribute, count: int) -> int:
    return (count + 1) // 2 if is_packed(element_type) else count


_NIBBLE_TYPES = ("f4E2M1FN", "si4", "ui4", "i4")

# -- numpy buffers ---------------------------------------------------------------------------------


def _nibble_codes(values: np.ndarray) -> np.ndarray:
    """4-bit values (ml_dtypes int4/uint4/float4_e2m1fn, or plain integers) as their codes 0..15."""
    if values.dtype.name == "float4_e2m1fn":
        return values.view(np.uint8) & 15
    return values.astype(np.int64).astype(np.uint8) & 15


def to_storage(values: np.ndarray, element: str) -> np.ndarray:
    """A flat buffer of `element` values (numpy/ml_dtypes) as the int8 bytes of its storage."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if element in _NIBBLE_TYPES:
        codes = _nibble_codes(flat)
        if codes.size % 2:
            codes = np.concatenate([codes, np.zeros(1, np.uint8)])
        pairs = codes.reshape(-1, 2)
        return (pairs[:, 0] | (pairs[:, 1] << 4)).astype(np.uint8).view(np.int8)
    return flat.view(np.uint8).view(np.int8)


def from_storage(data: np.ndarray, element: str, count: int) -> np.ndarray:
    """The int8 bytes of a storage buffer as `count` values of `element` (ml_dtypes dtypes)."""
    import ml_dtypes

    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if element in _NIBBLE_TYPES:
        codes = np.stack([raw & 15, raw >> 4], axis=1).reshape(-1)[:count]
        if element == "f4E2M1FN":
            return codes.view(ml_dtypes.float4_e2m1fn)
        if element == "ui4":
            return codes.astype(ml_dtypes.uint4)
        return np.where(codes >= 8, codes.astype(np.int16) - 16, codes).astype(ml_dtypes.int4)
    dtype = {
        "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
        "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
        "f8E8M0FNU": ml_dtypes.float8_e8m0fnu,
    }[element]
    return raw[:count].view(dtype)


# -- the boundary of a lowered function ------------------------------------------------------------

Storage = tuple[str, int] | None


def _storage_of(attrs: object) -> Storage:
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr

    if not isinstance(attrs, DictionaryAttr):
        return None
    element, count = attrs.data.get(ELEMENT_ATTR), attrs.data.get(COUNT_ATTR)
    if element is None or not isinstance(count, IntegerAttr):
        return None
    return element_name(getattr(element, "type", element)), count.value.data


def element_name(element_type: Attribute) -> str:
    """`f4E2M1FN`, `si4`, ...: the element type as MLIR spells it."""
    return str(element_type)


def boundary_storage(function: func.FuncOp) -> tuple[list[Storage], list[Storage]]:
    """For each argument and result of `function`: its (element, count) if it is a storage
    buffer (it carries `convcanon.element`), else None."""
    n_in = len(function.function_type.inputs.data)
    n_out = len(function.function_type.outputs.data)
    arg_attrs = function.arg_attrs.data if function.arg_attrs is not None else [None] * n_in
    res_attrs = function.res_attrs.data if function.res_attrs is not None else [None] * n_out
    return [_storage_of(a) for a in arg_attrs], [_storage_of(a) for a in res_attrs]


def value_dtype(element: str) -> np.dtype:
    """The numpy (ml_dtypes) dtype of a storage buffer's values."""
    import ml_dtypes

    return np.dtype(
        {
            "f4E2M1FN": ml_dtypes.float4_e2m1fn,
            "si4": ml_dtypes.int4,
            "i4": ml_dtypes.int4,
            "ui4": ml_dtypes.uint4,
            "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
            "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
            "f8E8M0FNU": ml_dtypes.float8_e8m0fnu,
        }[element]
    )


def pack_inputs(inputs: Sequence[np.ndarray], storage: Sequence[Storage]) -> list[np.ndarray]:
    """Inputs given as values packed into the storage buffers the function takes: arrays of the
    element's ml_dtypes dtype, or for int4 integer arrays of one element per value (npz has no
    4-bit dtype); anything else (int8 bytes in storage form) passes unchanged."""
    packed = []
    for i, x in enumerate(inputs):
        kind = storage[i] if i < len(storage) else None
        packed.append(x if kind is None or not _holds_values(x, kind) else to_storage(x, kind[0]))
    return packed


def _holds_values(x: np.ndarray, kind: tuple[str, int]) -> bool:
    element, count = kind
    if x.dtype == value_dtype(element):
        return True
    nbytes = (count + 1) // 2
    return element in ("si4", "ui4", "i4") and x.dtype.kind in "iu" and x.size == count != nbytes


def pack_named_inputs(
    inputs: Mapping[str, np.ndarray], storage: Sequence[Storage]
) -> dict[str, np.ndarray]:
    """`pack_inputs` for inputs named arg0..argN (an npz, verify's feed)."""
    packed = dict(inputs)
    for index, kind in enumerate(storage):
        key = f"arg{index}"
        if kind is not None and key in packed:
            (packed[key],) = pack_inputs([np.asarray(packed[key])], [kind])
    return packed


def unpack_outputs(outputs: Sequence[np.ndarray], storage: Sequence[Storage]) -> list[np.ndarray]:
    """Storage buffers a function returned as their values (ml_dtypes); outputs that are values
    already pass unchanged."""
    result = []
    for i, x in enumerate(outputs):
        kind = storage[i] if i < len(storage) else None
        unpacked = kind is None or (x.dtype == value_dtype(kind[0]) and x.size == kind[1])
        result.append(x if unpacked or kind is None else from_storage(x, kind[0], kind[1]))
    return result
