"""Ops that run a body over elements: reduce, reduce_window, scatter, select_and_scatter, sort,
map (a body that is one binary op runs as that numpy function)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from convcanon.reference.hlo.attributes import dims_attr, int_attr, ints, optional_attr, single_op
from convcanon.reference.hlo.elementwise import BINARY
from convcanon.reference.hlo.machine import Handler, Machine
from convcanon.reference.hlo.values import TensorType, normalize
from convcanon.reference.kernels import indexing, reduction, sort


def _combiner(it: Machine, region: ir.Region, types: Sequence[TensorType]) -> Any:
    """An update computation on whole arrays, its results rounded to the operands' types
    (a region that is one binary op runs as that numpy function, without the block walk)."""
    body = it.region_fn_multi(region)
    kind = single_op(region)
    if len(types) == 1 and kind in BINARY:
        binary = BINARY[kind]
        body = lambda a, b: [binary(a, b)]  # noqa: E731

    def combine(*arrays: np.ndarray) -> list[np.ndarray]:
        return [
            normalize(v, TensorType((), t.element), batched=True)
            for v, t in zip(body(*arrays), types, strict=True)
        ]

    return combine


def _reduce(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    half = len(args) // 2
    dims = ints(op.attributes["dimensions"])
    if half != 1:
        return _reduce_variadic(it, op, args, dims)
    body = it.region_fn(op.regions[0])
    x, init = args
    return [reduction.reduce(x, init, dims, body, it.env.ordered)]


def _reduce_variadic(it: Machine, op: ir.Operation, args: list[np.ndarray], dims):
    """Variadic reduce (argmax-style): sequential over the reduced elements, whole arrays each."""
    half = len(args) // 2
    xs, inits = args[:half], args[half:]
    flats = [reduction.reduced_last(x, dims) for x in xs]
    accs = [np.broadcast_to(i, flats[0].shape[:-1]).copy() for i in inits]
    return reduction.fold_in_order(flats, accs, it.region_fn_multi(op.regions[0]))


def _reduce_window(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    half = len(args) // 2
    rank = args[0].ndim
    padding = ints(optional_attr(op, "padding"), [0] * (2 * rank))
    return reduction.reduce_window(
        args[:half],
        args[half:],
        window_dimensions=ints(op.attributes["window_dimensions"]),
        window_strides=ints(optional_attr(op, "window_strides"), [1] * rank),
        base_dilations=ints(optional_attr(op, "base_dilations"), [1] * rank),
        window_dilations=ints(optional_attr(op, "window_dilations"), [1] * rank),
        padding=[(padding[2 * i], padding[2 * i + 1]) for i in range(rank)],
        body=_combiner(it, op.regions[0], rt),
    )


def _scatter(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    dims = dims_attr(op, "scatter_dimension_numbers", "ScatterDimensionNumbers")
    count = (len(args) - 1) // 2
    region = op.regions[0]
    return indexing.scatter(
        args[:count],
        args[count],
        args[count + 1 :],
        update_window_dims=list(dims.update_window_dims),
        inserted_window_dims=list(dims.inserted_window_dims),
        input_batching_dims=list(dims.input_batching_dims),
        scatter_indices_batching_dims=list(dims.scatter_indices_batching_dims),
        scatter_dims_to_operand_dims=list(dims.scattered_dims_to_operand_dims),
        index_vector_dim=dims.index_vector_dim,
        combine=_combiner(it, region, rt[:count]),
        add=single_op(region) == "add",
    )


def _select_and_scatter(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    operand, source, init = args
    rank = operand.ndim
    padding = ints(optional_attr(op, "padding"), [0] * (2 * rank))
    select = it.region_fn_multi(op.regions[0])
    return [
        indexing.select_and_scatter(
            operand,
            source,
            init,
            window_dimensions=ints(optional_attr(op, "window_dimensions"), [1] * rank),
            window_strides=ints(optional_attr(op, "window_strides"), [1] * rank),
            padding=[(padding[2 * i], padding[2 * i + 1]) for i in range(rank)],
            select=lambda a, b: select(a, b)[0],
            combine=_combiner(it, op.regions[1], rt),
            add=single_op(op.regions[1]) == "add",
        )
    ]


def _sort(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    dimension = int_attr(op, "dimension", -1)
    if dimension < 0:
        dimension += args[0].ndim
    less = it.region_fn_multi(op.regions[0])
    return sort.sort(args, dimension, lambda *pairs: less(*pairs)[0])


def _map(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    return it.region_fn_multi(op.regions[0])(*args)


HANDLERS: dict[str, Handler] = {
    "reduce": _reduce,
    "reduce_window": _reduce_window,
    "scatter": _scatter,
    "select_and_scatter": _select_and_scatter,
    "sort": _sort,
    "map": _map,
}
