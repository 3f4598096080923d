"""Explicit pad (DESIGN 2.3): conv padding and lhs dilation become a `pad` of the lhs.

`conv(x, w, padding=P, lhs_dilation=L)` -> `conv(pad(x, 0, lo=P.lo, hi=P.hi, interior=L-1), w,
padding=0, lhs_dilation=1)`. Conv semantics dilate then pad, and `pad` applies interior padding
before edge padding, so this is exact, negative (cropping) padding included. With
`negative-padding=slice` the negative parts become a `slice` after a pad of the positive parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.hlo import build
from convcanon.hlo.dialects import Dialect, padding_attr
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
    conv: build.AnyOp,
    p: ConvParams,
    dialect: Dialect,
    mode: NegativePadding,
    loc: SourceLoc,
) -> ir.Operation:
    """Rewrite `conv`; returns the rebuilt conv (the old one is erased)."""
    plan = plan_pad(p, mode)
    lhs = conv.operands[0]
    if plan.has_pad:
        element = ir.ShapedType(lhs.type).element_type
        zero = build.zero_constant(dialect, element, conv, euet001(p, loc))
        lhs = build.pad(dialect, lhs, zero, plan.low, plan.high, plan.interior, conv)
    if plan.crop is not None:
        start, limit = plan.crop
        lhs = build.slice_(dialect, lhs, start, limit, (1,) * len(start), conv)
    n = p.num_spatial
    overrides = {"padding": padding_attr(((0, 0),) * n)}
    if "lhs_dilation" in conv.attributes:
        overrides["lhs_dilation"] = dialect.i64_list((1,) * n)
    new = build.rebuild_conv(conv, lhs, conv.operands[1], overrides)
    conv.results[0].replace_all_uses_with(new.results[0])
    conv.erase()
    return new
