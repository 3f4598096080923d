"""The lowering of `migraphx.pooling` to TOSA 1.0's `max_pool2d` / `avg_pool2d` (its own module:
`lowerings.py` is full), in the conv's channels-last frame, so an NHWC-stored input needs no
transpose.

Exact where TOSA computes what MIGraphX does: 2 spatial dims, no dilation, floats of at most
32 bits (fp8 arrives as f32: the function lowering runs it so), max or average, and every
window reading at least one element MIGraphX counts (else MIGraphX yields its type's lowest
value or 0, which TOSA's ERROR_IF on a pad at least the kernel forbids). The rest is refused at
the op. MIGraphX's max folds std::max from its type's lowest value (a NaN skipped, nothing below
lowest): `max_pool2d` skipping NaN, then a `maximum` with lowest.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import Emitter, View, materialize, shape_of
from convcanon.conversion.migraphx_to_tosa.op_lowering import (
    LoweringContext,
    LoweringTable,
    channels_last,
    lowers,
)
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    lowering_error,
    result_element,
    result_type,
)
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.pool_ops import PoolingOp
from convcanon.migraphx.shaped_type import lowest_value, numpy_dtype
from convcanon.tosa import ops as tosa

PoolProps = dict[str, Attribute]

# The lowerings of this family, each registered against its op class by `@lowers`.
POOL_LOWERINGS: LoweringTable = {}


@lowers(POOL_LOWERINGS, PoolingOp)
def _pooling(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Max, and average without count_include_pad, pad with what TOSA never reads or counts:
    TOSA's pads are MIGraphX's begin pad and whatever end pad the last window reaches (a
    ceil_mode window past the declared end pad included), the input cut where no window reads.
    With count_include_pad MIGraphX counts zeros from the begin pad to the input's end plus the
    BEGIN pad: those zeros are an explicit `tosa.pad`, TOSA's own pads only what is past them."""
    assert isinstance(op, PoolingOp)
    em = lw.em
    (x,) = args
    window = op.window()
    _refuse_inexact(op, window, x)
    frame = channels_last(2)
    xt = materialize(em, x, frame)  # [N, H, W, C]
    counts_padding = window.count_include_pad and window.mode == "average"
    keep, low, high, pad = list(shape_of(xt)), [0] * 4, [0] * 4, []
    for i, (n, k, s, b, o) in enumerate(
        zip(
            x.lens[2:],
            window.lengths,
            window.stride,
            window.begins,
            window.out_spatial,
            strict=True,
        )
    ):
        reach = (o - 1) * s - b + k  # past the last position a window reads
        if counts_padding:
            low[1 + i], high[1 + i] = b, min(max(reach - n, 0), b)
        keep[1 + i] = min(n + low[1 + i] + high[1 + i], reach + low[1 + i])
        pad += [b - low[1 + i], max(0, reach - n - high[1 + i])]
    xt = em.slice(em.pad_zero(xt, low, high), [0] * 4, keep)
    out_lens = result_type(op).lens
    out = TensorType(x.element_type, [out_lens[0], *out_lens[2:], out_lens[1]])
    props = tosa.pool_properties(window.lengths, window.stride, pad)
    if window.mode == "max":
        y = _max_pool(em, op, xt, out, props)
    else:
        zp = em.zero_point(x.element_type)
        y = em.add(tosa.AvgPool2DOp([xt, zp, zp], out, {**props, "acc_type": f32}))
    return View(y, frame, out_lens)


def _max_pool(
    em: Emitter, op: Operation, xt: SSAValue, out: TensorType[Attribute], props: PoolProps
) -> SSAValue:
    """MIGraphX folds std::max from its type's lowest value: a NaN is skipped (and a window of
    NaNs alone, like one of -inf, gives lowest), nothing is below lowest. TOSA's nan_mode IGNORE
    skips the NaNs; a maximum with lowest, skipping NaN too, does the rest."""
    ignore: PoolProps = {"nan_mode": tosa.NanModeAttr("IGNORE")}
    y = em.add(tosa.MaxPool2DOp([xt], out, {**props, **ignore}))
    floor = em.scalar(out.element_type, lowest_value(numpy_dtype(result_element(op))), 4)
    return em.add(tosa.MaximumOp([y, floor], out, ignore))


def _refuse_inexact(op: Operation, window: rules.PoolWindow, x: View) -> None:
    """What TOSA's two pooling ops cannot compute as MIGraphX does is an error at the op."""
    reason = _inexact(window, x, result_element(op))
    if reason is not None:
        raise lowering_error(op, f"has no exact TOSA lowering: {reason}")


def _inexact(window: rules.PoolWindow, x: View, element: Attribute) -> str | None:
    if window.mode == "lpnorm":
        return "lpnorm pooling (TOSA pools by max or average only)"
    if len(x.lens) != 4:
        return f"{len(x.lens) - 2} spatial dims (TOSA pools 2: max_pool2d, avg_pool2d)"
    if any(d != 1 for d in window.dilations):
        return f"dilations {list(window.dilations)} (TOSA's pooling windows are dense)"
    if not isinstance(x.element_type, Float32Type | Float16Type | BFloat16Type):
        return f"pooling on {element} (lowered for f32, f16 and bf16)"
    empty = _empty_window(window, x.lens[2:])
    if empty is not None:
        return empty
    return None


def _empty_window(window: rules.PoolWindow, extents: Sequence[int]) -> str | None:
    """A window none of whose taps MIGraphX counts (its result: the type's lowest value for
    max, 0 for average) has no TOSA form: TOSA's windows each read one input element."""
    clips = window.clip_ends(extents)
    counted_from_zero = not (window.count_include_pad and window.mode == "average")
    for dim, (k, s, b, o, clip) in enumerate(
        zip(window.lengths, window.stride, window.begins, window.out_spatial, clips, strict=True)
    ):
        first_empty = counted_from_zero and b >= k
        if first_empty or (o - 1) * s - b >= clip:
            return (
                f"a window of spatial dim {dim} lies wholly in padding MIGraphX does not count "
                "(it yields the type's lowest value or 0 there)"
            )
    return None
