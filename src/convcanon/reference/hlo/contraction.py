"""Contractions: dot, dot_general, convolution and dynamic_conv (the kernels accumulate wide)."""

from __future__ import annotations

import math

import numpy as np
from jaxlib.mlir import ir

from convcanon.reference.hlo.attributes import conv_dims, dot_dims, int_attr, ints, optional_attr
from convcanon.reference.hlo.elementwise import compute_dtype
from convcanon.reference.hlo.machine import Handler, Machine
from convcanon.reference.hlo.values import TensorType
from convcanon.reference.kernels import contraction


def _dot_general(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    dims = dot_dims(op.attributes["dot_dimension_numbers"])
    return [
        contraction.dot_general(
            compute_dtype(args[0]),
            compute_dtype(args[1]),
            lhs_batch=list(dims.lhs_batching_dimensions),
            rhs_batch=list(dims.rhs_batching_dimensions),
            lhs_contracting=list(dims.lhs_contracting_dimensions),
            rhs_contracting=list(dims.rhs_contracting_dimensions),
            preferred_dtype=rt[0].dtype,
            ordered=it.env.ordered,
        )
    ]


def _dot(it: Machine, op: ir.Operation, args: list[np.ndarray], rt: list[TensorType]):
    lhs, rhs = (compute_dtype(a) for a in args)
    return [
        contraction.dot_general(
            lhs,
            rhs,
            lhs_batch=[],
            rhs_batch=[],
            lhs_contracting=[lhs.ndim - 1],
            rhs_contracting=[0],
            preferred_dtype=rt[0].dtype,
            ordered=it.env.ordered,
        )
    ]


def _conv_impl(
    it: Machine,
    op: ir.Operation,
    lhs: np.ndarray,
    rhs: np.ndarray,
    padding_rows: list[int],
    rt: TensorType,
) -> np.ndarray:
    if not math.prod(rt.shape):  # as XLA: no window fits (padding cropping past the input, a
        return np.zeros(rt.shape, rt.dtype)  # dilated window wider than int64), nothing to do
    conv = _conv_attributes(op, padding_rows)
    return contraction.conv_general(
        compute_dtype(lhs), compute_dtype(rhs), conv, rt.dtype, ordered=it.env.ordered
    )


def _conv_attributes(op: ir.Operation, padding_rows: list[int]) -> contraction.ConvAttributes:
    """A convolution's (or dynamic_conv's, with its padding operand's rows) attributes."""
    dims = conv_dims(op.attributes["dimension_numbers"])
    nsp = len(dims.input_spatial_dimensions)
    return contraction.ConvAttributes(
        window_strides=ints(optional_attr(op, "window_strides"), [1] * nsp),
        padding=[(padding_rows[2 * i], padding_rows[2 * i + 1]) for i in range(nsp)],
        lhs_dilation=ints(optional_attr(op, "lhs_dilation"), [1] * nsp),
        rhs_dilation=ints(optional_attr(op, "rhs_dilation"), [1] * nsp),
        window_reversal=[bool(v) for v in ints(optional_attr(op, "window_reversal"), [0] * nsp)],
        lhs_spec=(
            dims.input_batch_dimension,
            dims.input_feature_dimension,
            tuple(dims.input_spatial_dimensions),
        ),
        rhs_spec=(
            dims.kernel_input_feature_dimension,
            dims.kernel_output_feature_dimension,
            tuple(dims.kernel_spatial_dimensions),
        ),
        out_spec=(
            dims.output_batch_dimension,
            dims.output_feature_dimension,
            tuple(dims.output_spatial_dimensions),
        ),
        feature_group_count=int_attr(op, "feature_group_count", 1),
        batch_group_count=int_attr(op, "batch_group_count", 1),
    )


def _convolution(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    padding = ints(optional_attr(op, "padding"), [])
    nsp = len(rt[0].shape) - 2
    return [_conv_impl(it, op, args[0], args[1], padding or [0] * (2 * nsp), rt[0])]


def _dynamic_conv(it: Machine, op: ir.Operation, args: list[np.ndarray], rt):
    spatial = len(conv_dims(op.attributes["dimension_numbers"]).input_spatial_dimensions)
    amounts = np.asarray(args[2])
    integer = amounts.dtype.name.startswith(("int", "uint"))  # ml_dtypes' int4 too, not bool
    if amounts.shape != (spatial, 2) or not integer:  # MHLO's verifier does not check them
        shape = f"{amounts.dtype}{list(amounts.shape)}"
        raise ValueError(f"padding {shape}, expected integers of shape [{spatial}, 2]")
    padding = [int(v) for v in amounts.ravel()]
    return [_conv_impl(it, op, args[0], args[1], padding, rt[0])]


HANDLERS: dict[str, Handler] = {
    "dot_general": _dot_general,
    "dot": _dot,
    "convolution": _convolution,
    "dynamic_conv": _dynamic_conv,
}
