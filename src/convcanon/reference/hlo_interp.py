"""The HLO interpreter's import path for callers (the package `convcanon.reference.hlo` holds
it, split by concern: values, attributes, the loop, the handlers by op family)."""

from __future__ import annotations

from convcanon.reference.hlo.attributes import conv_dims, dot_dims
from convcanon.reference.hlo.loop import Interpreter, check_planned_peaks
from convcanon.reference.hlo.machine import DEFAULT_MAX_LOOP_ITERATIONS, Env
from convcanon.reference.hlo.values import (
    DEFAULT_MEMORY_LIMIT,
    TensorType,
    dense_value,
    normalize,
    parse_dense_text,
    tensor_type,
)

__all__ = [
    "DEFAULT_MAX_LOOP_ITERATIONS",
    "DEFAULT_MEMORY_LIMIT",
    "Env",
    "Interpreter",
    "TensorType",
    "check_planned_peaks",
    "conv_dims",
    "dense_value",
    "dot_dims",
    "normalize",
    "parse_dense_text",
    "tensor_type",
]
