"""MIGraphX's convolution in numpy, shared by the float and the quantized migraphx kernels."""

from __future__ import annotations

import numpy as np

from convcanon.migraphx.op_base import ConvLikeOp, int_list, int_value
from convcanon.reference.kernels.contraction import ConvAttributes, conv_general


def migraphx_conv(op: ConvLikeOp, x: np.ndarray, w: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """MIGraphX's NC*/OI* convolution (float and quantized ops alike), computed in `dtype`."""
    spatial = tuple(range(2, x.ndim))
    begins, ends = op.explicit_padding()
    return conv_general(
        x,
        w,
        ConvAttributes(
            window_strides=int_list(op, "stride"),
            padding=list(zip(begins, ends, strict=True)),
            lhs_dilation=[1] * len(spatial),
            rhs_dilation=int_list(op, "dilation"),
            window_reversal=[False] * len(spatial),
            lhs_spec=(0, 1, spatial),
            rhs_spec=(1, 0, spatial),
            out_spec=(0, 1, spatial),
            feature_group_count=int_value(op, "group"),
            batch_group_count=1,
        ),
        preferred_dtype=dtype,
    )
