"""Sub-byte integer buffers (i2, i4, ui2, ui4) at IREE's function boundary.

IREE's runtime takes and gives such tensors packed densely, 8 / bits elements a byte with the
first in the lowest bits, in a buffer view labelled with the HAL element type (`i4` is
0x10000004, `ui4` 0x12000004); its Python API maps only byte-sized numpy dtypes, so an int4
array went in as an si8 view and the call failed its element type check. The layout below is
what IREE (llvm-cpu) computes with, checked on every pair of codes against XLA.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# HAL numerical types (the element type's top byte): signless (StableHLO's iN), unsigned
_HAL_INTEGER = 0x10
_HAL_UNSIGNED = 0x12


def sub_byte_bits(dtype: np.dtype) -> int:
    """The width of an ml_dtypes sub-byte integer type (0: not one)."""
    from convcanon.verify.judge import is_narrow_int

    if not is_narrow_int(dtype):
        return 0
    import ml_dtypes

    return int(ml_dtypes.iinfo(dtype).bits)


def hal_input(device: Any, x: np.ndarray) -> Any:
    """`x` as IREE takes it: a packed buffer view for a sub-byte integer array, else itself."""
    import iree.runtime as ireert

    bits = sub_byte_bits(x.dtype)
    if not bits:
        return np.asarray(x, order="C")
    numerical = _HAL_UNSIGNED if x.dtype.name.startswith("uint") else _HAL_INTEGER
    buffer = device.allocator.allocate_buffer_copy(
        memory_type=ireert.MemoryType.DEVICE_LOCAL,
        allowed_usage=ireert.BufferUsage.DEFAULT,
        device=device,
        buffer=pack_bits(x.astype(np.int64), bits),
    )
    return ireert.HalBufferView(buffer, list(x.shape), (numerical << 24) | bits)


def host_output(out: Any) -> np.ndarray:
    """An IREE result on the host; a sub-byte integer one unpacked into a byte per element
    (int8, uint8: where the reference interpreter keeps them)."""
    view = getattr(out, "_buffer_view", None)  # DeviceArray keeps no public handle on it
    if view is not None and (view.element_type & 0xFF) < 8:
        element = int(view.element_type)
        bits, numerical = element & 0xFF, element >> 24
        raw = view.map().asarray([view.byte_length], np.dtype(np.uint8))
        count = int(np.prod(view.shape, dtype=np.int64))
        values = unpack_bits(np.array(raw), bits, count, signed=numerical != _HAL_UNSIGNED)
        return values.reshape(view.shape)
    return np.asarray(out.to_host() if hasattr(out, "to_host") else out)


def pack_bits(values: np.ndarray, bits: int) -> np.ndarray:
    """Integers (two's complement, low `bits` kept) packed 8 / bits to a byte, the first in the
    lowest bits; a last byte not filled is padded with zeros."""
    per_byte = 8 // bits
    codes = (np.ascontiguousarray(values).reshape(-1) & ((1 << bits) - 1)).astype(np.uint8)
    codes = np.concatenate([codes, np.zeros(-codes.size % per_byte, np.uint8)])
    shifts = (bits * np.arange(per_byte)).astype(np.uint8)
    return np.bitwise_or.reduce(codes.reshape(-1, per_byte) << shifts, axis=1).astype(np.uint8)


def unpack_bits(raw: np.ndarray, bits: int, count: int, signed: bool) -> np.ndarray:
    """The first `count` `bits`-wide integers packed in bytes `raw` (int8 if `signed`, else
    uint8), the inverse of `pack_bits`."""
    shifts = (bits * np.arange(8 // bits)).astype(np.uint8)
    codes = ((raw.reshape(-1, 1) >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count]
    if not signed:
        return codes.astype(np.uint8)
    wide = codes.astype(np.int16)
    return np.where(wide >= 1 << (bits - 1), wide - (1 << bits), wide).astype(np.int8)
