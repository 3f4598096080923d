"""Dense element literals (`dense<...> : tensor<...>`) as numpy arrays.

The emitter folds constants with it and the interpreters read literals with it, so it sits with
the element types, below both.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType

from convcanon.migraphx.shaped_type import numpy_dtype


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    ty = attr.get_type()
    assert isinstance(ty, TensorType)
    shape = tuple(ty.get_shape())
    dtype = np.dtype(np.int64) if ty.element_type.name == "index" else numpy_dtype(ty.element_type)
    if dtype.kind == "f" or dtype.kind == "V":  # read the bits: a NaN's payload survives
        raw = attr.data.data
        count = math.prod(shape)
        if len(raw) == count * dtype.itemsize:
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if len(raw) == dtype.itemsize:
            return np.full(shape, np.frombuffer(raw, dtype=dtype)[0], dtype=dtype)
    values = list(attr.get_values())
    if len(values) == 1 and math.prod(shape) != 1:
        return np.full(shape, values[0], dtype=dtype)
    return np.asarray(values, dtype=dtype).reshape(shape)
