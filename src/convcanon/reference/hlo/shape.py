"""Ops that make, move or index values without arithmetic: constants, iota, layout changes, pads,
slices, tuples, gather."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from convcanon.reference.hlo.attributes import dims_attr, int_attr, ints, optional_attr
from convcanon.reference.hlo.machine import Handler, Machine
from convcanon.reference.hlo.values import NARROW, TensorType, value_attr
from convcanon.reference.kernels import budget, indexing, movement, precision


def _constant(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    """Read once per interpreter: a loop body's constants are not re-parsed every iteration
    (values are never written in place, so sharing the array is safe)."""
    value = it.constants.get(op)
    if value is None:
        value = it.constants[op] = value_attr(op, rt[0])
    return [value]


_IOTA_CHUNK = 1 << 16  # indices made in int64 at a time, then cast into the result's row


def _iota(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    """One row of the result's type, made a chunk at a time (an int64 `arange` of the whole row
    would be 8 bytes an element outside the plan), broadcast to the result's shape."""
    dim = int_attr(op, "iota_dimension", 0)
    tt = rt[0]
    shape = tt.shape
    length = shape[dim]
    chunk = min(length, _IOTA_CHUNK)
    budget.plan(op.name, length * tt.dtype.itemsize, 3 * chunk * 8)
    row = np.empty(length, tt.dtype)
    for start in range(0, length, _IOTA_CHUNK):
        indices = np.arange(start, min(length, start + _IOTA_CHUNK))
        if tt.element in NARROW:
            indices = precision.wrap_integer(indices, *NARROW[tt.element])
        with np.errstate(all="ignore"):
            row[start : start + len(indices)] = indices.astype(tt.dtype)
    view = [1] * len(shape)
    view[dim] = length
    return [np.broadcast_to(row.reshape(view), shape)]


def _reshape(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [args[0].reshape(rt[0].shape)]


def _transpose(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [movement.transpose(args[0], ints(op.attributes["permutation"]))]


def _broadcast_in_dim(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    dims = ints(op.attributes["broadcast_dimensions"])
    return [movement.broadcast_in_dim(args[0], rt[0].shape, dims)]


def _broadcast(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.broadcast_to(args[0], rt[0].shape)]


def _pad(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    low = ints(op.attributes["edge_padding_low"])
    high = ints(op.attributes["edge_padding_high"])
    interior = ints(op.attributes["interior_padding"])
    return [movement.pad(args[0], args[1], low, high, interior)]


def _slice(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    start = ints(op.attributes["start_indices"])
    limit = ints(op.attributes["limit_indices"])
    strides = ints(optional_attr(op, "strides"), [1] * len(start))
    return [movement.slice_(args[0], start, limit, strides)]


def _concatenate(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    return [np.concatenate(args, axis=int_attr(op, "dimension", 0))]


def _reverse(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    return [np.flip(args[0], tuple(ints(op.attributes["dimensions"])))]


def _get_dimension_size(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    return [np.int32(args[0].shape[int_attr(op, "dimension", 0)])]


def _tuple(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    return [tuple(args)]


def _get_tuple_element(it: Machine, op: ir.Operation, args: list[Any], rt):
    return [args[0][int_attr(op, "index", 0)]]


def _identity(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    """optimization_barrier and single-device sharding annotations: values pass through."""
    return list(args)


def _dynamic_slice(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    starts = _start_indices(args[1:])
    return [movement.dynamic_slice(args[0], starts, ints(op.attributes["slice_sizes"]))]


def _dynamic_update_slice(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    return [movement.dynamic_update_slice(args[0], args[1], _start_indices(args[2:]))]


def _start_indices(args: Sequence[np.ndarray]) -> list[int]:
    """Scalar start operands (MHLO's older form passes one 1-D tensor)."""
    return [int(v) for a in args for v in np.asarray(a).ravel()]


def _gather(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    dims = dims_attr(op, "dimension_numbers", "GatherDimensionNumbers")
    return [
        indexing.gather(
            args[0],
            args[1],
            offset_dims=list(dims.offset_dims),
            collapsed_slice_dims=list(dims.collapsed_slice_dims),
            operand_batching_dims=list(dims.operand_batching_dims),
            start_indices_batching_dims=list(dims.start_indices_batching_dims),
            start_index_map=list(dims.start_index_map),
            index_vector_dim=dims.index_vector_dim,
            slice_sizes=ints(op.attributes["slice_sizes"]),
        )
    ]


HANDLERS: dict[str, Handler] = {
    "constant": _constant,
    "arith.constant": _constant,  # torch-mlir writes BatchNorm's eps as one
    "iota": _iota,
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast_in_dim": _broadcast_in_dim,
    "broadcast": _broadcast,
    "pad": _pad,
    "slice": _slice,
    "concatenate": _concatenate,
    "reverse": _reverse,
    "get_dimension_size": _get_dimension_size,
    "tuple": _tuple,
    "get_tuple_element": _get_tuple_element,
    "optimization_barrier": _identity,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "gather": _gather,
}
