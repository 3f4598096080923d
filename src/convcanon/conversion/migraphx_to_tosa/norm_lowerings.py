"""The lowering of `migraphx.batch_norm_inference` to TOSA's elementwise ops, in f32 for floats
narrower than 32 bits (f64 stays) and rounded once to the element type, in the dim order that
moves the fewest elements (none for an NHWC input and result):

    (x - mean) * scale * rsqrt(variance + epsilon) + bias

each parameter reshaped to [1, C, 1, ...] (spatial) or [1, *x.lens[1:]] (per_activation) and
broadcast by TOSA. MIGraphX's reference rounds `scale * (x - mean)` to the element type and
divides in double: the two differ by the last bits of the type, as its GPU kernels do.
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32
from xdsl.ir import Operation

from convcanon.conversion.migraphx_to_tosa.emitter import (
    View,
    elementwise_views,
    logical,
    unary_view,
)
from convcanon.conversion.migraphx_to_tosa.op_lowering import (
    LoweringContext,
    LoweringTable,
    declared_frame,
    lowers,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import result_type
from convcanon.migraphx.norm_ops import BatchNormInferenceOp
from convcanon.migraphx.shaped_type import numpy_dtype
from convcanon.tosa import ops as tosa

# The lowerings of this family, each registered against its op class by `@lowers`.
NORM_LOWERINGS: LoweringTable = {}


@lowers(NORM_LOWERINGS, BatchNormInferenceOp)
def _batch_norm(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    assert isinstance(op, BatchNormInferenceOp)
    em = lw.em
    et = args[0].element_type
    wide = f32 if numpy_dtype(et).itemsize < 4 else et
    lens, plens, hint = result_type(op).lens, op.parameter_lens(), declared_frame(op)
    x, scale, bias, mean, variance = (
        v if v.element_type == wide else unary_view(em, tosa.CastOp, v, wide) for v in args
    )
    scale, bias, mean, variance = (
        View.plain(em.reshape(logical(em, p), plens)) for p in (scale, bias, mean, variance)
    )
    epsilon = View.plain(em.scalar(wide, op.epsilon_value(), len(plens)))
    shifted = elementwise_views(em, tosa.AddOp, [variance, epsilon], plens)
    factor = elementwise_views(
        em, tosa.MulOp, [scale, unary_view(em, tosa.RsqrtOp, shifted)], plens
    )
    centered = elementwise_views(em, tosa.SubOp, [x, mean], lens, hint=hint)
    scaled = elementwise_views(em, tosa.MulOp, [centered, factor], lens, hint=hint)
    out = elementwise_views(em, tosa.AddOp, [scaled, bias], lens, hint=hint)
    return out if wide == et else unary_view(em, tosa.CastOp, out, et)
