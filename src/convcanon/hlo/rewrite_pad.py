"""Explicit pad: conv padding (and, in interior-pad mode, lhs dilation) becomes a `pad` of the lhs.

`conv(x, w, padding=P, lhs_dilation=L)` -> `conv(pad(x, 0, lo=P.lo, hi=P.hi, interior=L-1), w,
padding=0, lhs_dilation=1)`. Conv semantics dilate then pad, and `pad` applies interior padding
before edge padding, so this is exact, negative (cropping) padding included. With
`negative-padding=slice` the negative parts become a `slice` after a pad of the positive parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.hlo import build
from convcanon.hlo.gate import NegativePadding
from convcanon.hlo.params import ConvParams


@dataclass(frozen=True)
class PadPlan:
    """Full-rank pad amounts for the lhs, and the crop (start, limit) that follows, if any."""

    low: tuple[int, ...]
    high: tuple[int, ...]
    interior: tuple[int, ...]
    crop: tuple[tuple[int, ...], tuple[int, ...]] | None

    @property
    def has_pad(self) -> bool:
        return any(self.low) or any(self.high) or any(self.interior)

    @property
    def ops_added(self) -> list[str]:
        ops = ["constant", "pad"] if self.has_pad else []
        return ops + (["slice"] if self.crop is not None else [])


def plan_pad(p: ConvParams, mode: NegativePadding) -> PadPlan:
    """Where the conv's padding and lhs dilation go, per lhs dimension (0 on batch/feature)."""
    rank = len(p.lhs_shape)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    for axis, (lo, hi), dil in zip(p.dims.lhs_spatial, p.padding, p.lhs_dilation, strict=True):
        low[axis], high[axis], interior[axis] = lo, hi, dil - 1
    if mode == "pad" or all(v >= 0 for v in low + high):
        return PadPlan(tuple(low), tuple(high), tuple(interior), None)
    pos_low = [max(v, 0) for v in low]
    pos_high = [max(v, 0) for v in high]
    padded = [
        (h - 1) * (i + 1) + 1 + lo + hi if h > 0 else lo + hi
        for h, i, lo, hi in zip(p.lhs_shape, interior, pos_low, pos_high, strict=True)
    ]
    start = tuple(-min(v, 0) for v in low)
    limit = tuple(e + min(v, 0) for e, v in zip(padded, high, strict=True))
    return PadPlan(tuple(pos_low), tuple(pos_high), tuple(interior), (start, limit))


def euet001(p: ConvParams, loc: SourceLoc) -> ConvcanonError:
    return ConvcanonError(
        f"element type {p.element_type} of the convolution's lhs cannot be zero-padded",
        loc,
        code="EUET001",
    )


def explicit_pad(
    b: build.Builder,
    lhs: ir.Value,
    element: ir.Type,
    p: ConvParams,
    mode: NegativePadding,
    zero: Callable[[], ir.Value],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[ir.Value, tuple[int, ...]]:
    """Pad (and crop) the conv's lhs; returns it and its shape. `zero()` gives the pad value."""
    plan = plan_pad(p, mode)
    shape = p.lhs_shape
    if plan.has_pad:
        lhs, shape = b.pad(lhs, shape, element, zero(), plan.low, plan.high, plan.interior, ip, loc)
    if plan.crop is not None:
        start, limit = plan.crop
        lhs, shape = b.slice_(lhs, element, start, limit, (1,) * len(start), ip, loc)
    return lhs, shape


def pad_overrides(
    b: build.Builder, p: ConvParams, has_lhs_dilation: bool
) -> dict[str, ir.Attribute]:
    """The conv attributes explicit pad resets: zero padding and (if present) unit lhs dilation."""
    n = p.num_spatial
    overrides = {"padding": b.padding(((0, 0),) * n)}
    if has_lhs_dilation:
        overrides["lhs_dilation"] = b.i64_list((1,) * n)
    return overrides
