"""Element types, `TensorType` and dense literals: how the interpreter stores a value."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.reference.kernels import budget, precision

DEFAULT_MEMORY_LIMIT = 4 << 30


_DTYPES: dict[str, Any] = {
    "i1": np.bool_,
    "i2": np.int8,
    "i4": np.int8,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui2": np.uint8,
    "ui4": np.uint8,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "f8E4M3B11FNUZ": ml_dtypes.float8_e4m3b11fnuz,
    "complex<f32>": np.complex64,
    "complex<f64>": np.complex128,
}


NARROW = {"i2": (2, True), "i4": (4, True), "ui2": (2, False), "ui4": (4, False)}


@dataclass(frozen=True)
class TensorType:
    """Shape and element type of a ranked tensor, with the numpy dtype that stores it."""

    shape: tuple[int, ...]
    element: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_DTYPES[self.element])

    @property
    def declared_dtype(self) -> np.dtype:
        """The element type as XLA holds it and as random values are drawn for it: a sub-byte
        integer's own type (`dtype` is the byte the interpreter keeps it in)."""
        if self.element not in NARROW:
            return self.dtype
        bits, signed = NARROW[self.element]
        return np.dtype(getattr(ml_dtypes, f"{'' if signed else 'u'}int{bits}"))

    @property
    def nbytes(self) -> int:
        if self.element == TUPLE:
            return 0
        return math.prod(self.shape) * self.dtype.itemsize


def element_name(t: ir.Type) -> str:
    return str(t)


TUPLE = "tuple"  # the element name of a tuple value's `TensorType` (no storage dtype)


def tensor_type(t: ir.Type, loc: SourceLoc | None = None) -> TensorType:
    """The `TensorType` of an MLIR type (scalars are rank-0 tensors); unsupported types error."""
    if isinstance(t, ir.TupleType):
        return TensorType((), TUPLE)
    if isinstance(t, ir.RankedTensorType):
        ranked = ir.RankedTensorType(t)
        if not ranked.has_static_shape:
            raise ConvcanonError(f"dynamic shape {t} is not supported by the interpreter", loc)
        shape, element = tuple(ranked.shape), element_name(ranked.element_type)
    else:
        shape, element = (), element_name(t)
    if element not in _DTYPES:
        raise ConvcanonError(f"element type {element} is not supported by the interpreter", loc)
    return TensorType(shape, element)


def normalize(x: np.ndarray | Any, tt: TensorType, batched: bool = False) -> np.ndarray:
    """Cast to the storage dtype, wrap sub-byte integers, check the shape.

    `batched`: a reducer body evaluated on whole arrays of its scalar arguments at once; values
    then carry a leading batch shape and only the element type is enforced.
    """
    if tt.element == TUPLE:
        return x
    arr = np.asarray(x)
    if arr.dtype != tt.dtype:
        with np.errstate(all="ignore"):
            arr = arr.astype(tt.dtype)
    if tt.element in NARROW:
        arr = precision.wrap_integer(arr, *NARROW[tt.element])
    if arr.shape != tt.shape and not batched:
        if arr.ndim:
            raise ValueError(f"computed shape {list(arr.shape)}, declared {list(tt.shape)}")
        arr = np.broadcast_to(arr, tt.shape).copy()
    return arr


_TOKEN_RE = re.compile(
    r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)|(0x[0-9A-Fa-f]+)|(true|false)|([-+]?[0-9.]+(?:[eE][-+]?\d+)?|[-+]?inf|nan)"
)


def _scalar_token(token: str, tt: TensorType) -> Any:
    """One literal: decimal, true/false, or a hex bit pattern of a float element."""
    if token in ("true", "false"):
        return token == "true"
    if token.startswith("0x"):
        bits = int(token, 16)
        dtype = tt.dtype
        if dtype.kind in "fcV":
            base = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
            store = base if dtype.kind == "c" else dtype
            return np.array(bits, dtype=f"u{store.itemsize}").view(store)[()]
        return bits
    return float(token) if tt.dtype.kind in "fcV" or "." in token or "e" in token else int(token)


def parse_dense_text(text: str, tt: TensorType) -> np.ndarray:
    """Parse the `dense<...>` literal that MLIR prints (hex blobs, splats, nested lists)."""
    check_literal_size(tt)
    if "dense<" not in text:  # dense_resource<...>: the bindings do not expose a blob's bytes
        kind = text.split("<", 1)[0]
        raise ValueError(
            f"{kind} constants are read only once inlined "
            "(convcanon.hlo.resources.inline_dense_resources)"
        )
    start = text.index("dense<") + len("dense<")
    body = text[start : _matching_angle(text, start - 1)]
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        arr = np.frombuffer(raw, dtype=tt.dtype)
        n = math.prod(tt.shape)
        return normalize(arr if arr.size == n else arr[:1].reshape(()), tt)
    values: list[Any] = []
    for m in _TOKEN_RE.finditer(body):
        if m[1] is not None:
            part = TensorType((), "f64")
            values.append(complex(_scalar_token(m[1], part), _scalar_token(m[2], part)))
        else:
            values.append(_scalar_token(m[0], tt))
    dtype = tt.dtype
    if dtype.kind in "iub":
        arr = np.array(values, dtype=object).astype(np.int64 if dtype.kind != "u" else np.uint64)
    elif dtype.kind == "c":
        arr = np.array(values, dtype=np.complex128)
    else:
        # Built in the element type itself: a hex token keeps its bits (through f64 a signalling
        # NaN is quieted and a bf16 NaN loses its payload), a decimal rounds once.
        with np.errstate(all="ignore"):
            arr = np.array(values, dtype=dtype)
    if arr.size == 1 and tt.shape != (1,) * len(tt.shape):
        arr = arr.reshape(())
    else:
        arr = arr.reshape(tt.shape)
    return normalize(arr, tt)


def _matching_angle(text: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(text)):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced dense literal")


def check_literal_size(tt: TensorType) -> None:
    """A literal is expanded only within the memory limit (a splat of 4e11 elements is 4 bytes of
    IR): the limit in force, else the default, also for callers outside the interpreter."""
    limit = budget.current_limit() or DEFAULT_MEMORY_LIMIT
    if tt.nbytes > limit:
        raise ConvcanonError(
            f"a {tt.element} literal of shape {list(tt.shape)} needs {tt.nbytes} bytes, over the "
            f"memory limit of {limit}"
        )


def dense_value(attr: ir.Attribute, tt: TensorType) -> np.ndarray:
    """The array of a dense elements attribute: buffer protocol when numpy can, text otherwise."""
    check_literal_size(tt)
    if isinstance(attr, ir.DenseElementsAttr) and not ir.DenseElementsAttr(attr).is_splat:
        try:
            return normalize(np.array(attr), tt)
        except (TypeError, ValueError):
            pass
    return parse_dense_text(str(attr), tt)


def value_attr(op: ir.Operation, tt: TensorType) -> np.ndarray:
    """The array of an op's `value` attribute."""
    try:
        attr = op.attributes["value"]
    except TypeError:  # complex and other element types the bindings cannot downcast
        return parse_dense_text(str(op), tt)
    return dense_value(attr, tt)
