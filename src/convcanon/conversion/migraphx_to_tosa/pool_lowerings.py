"""The lowering of `migraphx.pooling` to TOSA 1.0's `max_pool2d` / `avg_pool2d` (its own module:
`lowerings.py` is full), in the conv's channels-last frame, so an NHWC-stored input needs no
transpose.

Exact where TOSA computes what MIGraphX does: 1 or 2 spatial dims, no dilation, floats of at most
32 bits (fp8 arrives as f32: the function lowering runs it so), max or average, and every
window reading at least one element MIGraphX counts (else MIGraphX yields its type's lowest
value or 0, which TOSA's ERROR_IF on a pad at least the kernel forbids). The rest is refused at
the op. MIGraphX's max folds std::max from its type's lowest value (a NaN skipped, nothing below
lowest): `max_pool2d` skipping NaN, then a `maximum` with lowest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    element_type_of,
    materialize,
    shape_of,
)
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
    """A 2-D pooling in TOSA's [N, H, W, C]; a 1-D one ([N, C, W]: audio, sequences) as the
    2-D pooling of a height-1 image, which reads exactly its windows."""
    assert isinstance(op, PoolingOp)
    em = lw.em
    (x,) = args
    window = op.window()
    _refuse_inexact(op, window, x)
    out_lens = result_type(op).lens
    if len(x.lens) == 4:
        frame = channels_last(2)
        y = _pool2d(em, window, materialize(em, x, frame), x.lens[2:], op)
        return View(y, frame, out_lens)
    frame = channels_last(1)
    n, c, w = x.lens
    xt = em.reshape(materialize(em, x, frame), [n, 1, w, c])
    y = _pool2d(em, _with_unit_height(window), xt, (1, w), op)
    return View(em.reshape(y, [n, out_lens[2], c]), frame, out_lens)


def _with_unit_height(window: rules.PoolWindow) -> rules.PoolWindow:
    """A 1-D window as the 2-D window of a height-1 image: one tap, no stride or pad over H."""
    return dataclasses.replace(
        window,
        lengths=(1, *window.lengths),
        stride=(1, *window.stride),
        dilations=(1, *window.dilations),
        begins=(0, *window.begins),
        ends=(0, *window.ends),
        out_spatial=(1, *window.out_spatial),
    )


def _pool2d(
    em: Emitter, window: rules.PoolWindow, xt: SSAValue, spatial: Sequence[int], op: Operation
) -> SSAValue:
    """[N, H, W, C] pooled to [N, OH, OW, C]. Max, and average without count_include_pad, pad
    with what TOSA never reads or counts: TOSA's pads are MIGraphX's begin pad and whatever end
    pad the last window reaches (a ceil_mode window past the declared end pad included), the
    input cut where no window reads. With count_include_pad MIGraphX counts zeros from the
    begin pad to the input's end plus the BEGIN pad: those zeros are an explicit `tosa.pad`,
    TOSA's own pads only what is past them."""
    counts_padding = window.count_include_pad and window.mode == "average"
    keep, low, high, pad = list(shape_of(xt)), [0] * 4, [0] * 4, []
    for i, (n, k, s, b, o) in enumerate(
        zip(spatial, window.lengths, window.stride, window.begins, window.out_spatial, strict=True)
    ):
        reach = (o - 1) * s - b + k  # past the last position a window reads
        if counts_padding:
            low[1 + i], high[1 + i] = b, min(max(reach - n, 0), b)
        keep[1 + i] = min(n + low[1 + i] + high[1 + i], reach + low[1 + i])
        pad += [b - low[1 + i], max(0, reach - n - high[1 + i])]
    xt = em.slice(em.pad_zero(xt, low, high), [0] * 4, keep)
    element = element_type_of(xt)
    batch, channels = shape_of(xt)[0], shape_of(xt)[3]
    out = TensorType(element, [batch, *window.out_spatial, channels])
    props = tosa.pool_properties(window.lengths, window.stride, pad)
    if window.mode == "max":
        return _max_pool(em, op, xt, out, props)
    zp = em.zero_point(element)
    return em.add(tosa.AvgPool2DOp([xt, zp, zp], out, {**props, "acc_type": f32}))


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
    if len(x.lens) not in (3, 4):
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
