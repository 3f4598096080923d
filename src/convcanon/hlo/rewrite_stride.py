"""Explicit stride, exact polyphase form (DESIGN 2.4).

For a zero-padded conv with stride s in a spatial dim, output o reads lhs `o*s + d*k` for tap k.
Taps whose offsets `d*k` agree mod s form a phase p: they read the lhs subsampled by s from
`d*k0`, with a kernel subsampled by `t = s/gcd(d, s)` and new dilation `d/gcd(d, s)`. Each phase
is a unit-stride conv of a lhs slice with a kernel slice; their sum is the original conv, with
the same multiply-adds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams


@dataclass(frozen=True)
class Phase:
    """One phase of one spatial dim: which lhs and kernel elements it reads."""

    taps: int  # n = |T_p|
    lhs_start: int
    lhs_stride: int
    lhs_length: int
    rhs_start: int
    rhs_stride: int

    @property
    def lhs_window(self) -> tuple[int, int, int]:
        """(start, stride, length) of the lhs slice in this dim."""
        return (self.lhs_start, self.lhs_stride, self.lhs_length)

    @property
    def rhs_window(self) -> tuple[int, int, int]:
        """(start, stride, length) of the kernel slice in this dim."""
        return (self.rhs_start, self.rhs_stride, self.taps)


@dataclass(frozen=True)
class DimPlan:
    phases: tuple[Phase, ...]
    rhs_dilation: int  # d' for every phase of this dim


def plan_dim(
    extent: int, kernel: int, dilation: int, stride: int, out: int, reversed_: bool
) -> DimPlan:
    """The phases of one spatial dim (`extent` is the padded lhs extent, `out` the result's)."""
    if stride == 1:
        return DimPlan((Phase(kernel, 0, 1, extent, 0, 1),), dilation)
    g = math.gcd(dilation, stride)
    step, new_dilation = stride // g, dilation // g
    phases = []
    for p in range(stride):
        taps = [k for k in range(kernel) if (dilation * k) % stride == p]
        if not taps:
            continue
        k0, n = taps[0], len(taps)
        rhs_start = kernel - 1 - k0 - (n - 1) * step if reversed_ else k0
        length = out + (n - 1) * new_dilation
        lhs_stride = stride if length > 1 else 1  # a single element needs no step
        phases.append(Phase(n, dilation * k0, lhs_stride, length, rhs_start, step if n > 1 else 1))
    return DimPlan(tuple(phases), new_dilation)


def plan_stride(p: ConvParams) -> tuple[DimPlan, ...]:
    """Per spatial dim plans of a conv whose padding is already explicit (zero)."""
    return tuple(
        plan_dim(h, k, d, s, o, r)
        for h, k, d, s, o, r in zip(
            p.padded_spatial,
            p.kernel_spatial,
            p.rhs_dilation,
            p.strides,
            p.out_spatial,
            p.reversal,
            strict=True,
        )
    )


def phase_count(plans: tuple[DimPlan, ...]) -> int:
    return math.prod(len(d.phases) for d in plans)


def ops_added(plans: tuple[DimPlan, ...], p: ConvParams) -> list[str]:
    """The ops one stride rewrite emits (the original conv is replaced by the partial convs)."""
    ops: list[str] = []
    for combo in itertools.product(*(d.phases for d in plans)):
        if not _identity([ph.lhs_window for ph in combo], p.padded_spatial):
            ops.append("slice")
        if not _identity([ph.rhs_window for ph in combo], p.kernel_spatial):
            ops.append("slice")
        ops.append("convolution")
    ops += ["add"] * (phase_count(plans) - 1)
    return ops


def _identity(windows: list[tuple[int, int, int]], extents: tuple[int, ...]) -> bool:
    """Whether slicing by `windows` would return the whole operand."""
    return all(w == (0, 1, e) for w, e in zip(windows, extents, strict=True))


def _slice_spatial(
    b: build.Builder,
    value: ir.Value,
    shape: tuple[int, ...],
    element: ir.Type,
    axes: tuple[int, ...],
    windows: list[tuple[int, int, int]],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """`value` (of `shape`) sliced by `windows` on `axes`, or `value` if that is all of it."""
    if _identity(windows, tuple(shape[a] for a in axes)):
        return value
    start, limit, step = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, (lo, s, n) in zip(axes, windows, strict=True):
        start[axis], step[axis], limit[axis] = lo, s, lo + (n - 1) * s + 1
    return b.slice_(value, element, start, limit, step, ip, loc)[0]


def explicit_stride(
    b: build.Builder,
    conv: build.AnyOp,
    lhs: ir.Value,
    lhs_shape: tuple[int, ...],
    types: tuple[ir.Type, ir.Type],
    p: ConvParams,
    overrides: dict[str, ir.Attribute],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """The phases of `conv` on its zero-padded `lhs` (of `lhs_shape`) and their sum.

    `types` are the lhs and rhs element types; `overrides` are attributes every partial conv
    resets besides stride and rhs dilation. Returns the partial convs and the sum's value."""
    plans = plan_stride(p)
    n = p.num_spatial
    overrides = {
        **overrides,
        "window_strides": b.i64_list((1,) * n),
        "rhs_dilation": b.i64_list(tuple(d.rhs_dilation for d in plans)),
    }
    rhs = conv.operands[1]
    lhs_element, rhs_element = types
    partials: list[ir.Operation] = []
    total: ir.Value | None = None
    for combo in itertools.product(*(d.phases for d in plans)):
        lhs_windows = [ph.lhs_window for ph in combo]
        rhs_windows = [ph.rhs_window for ph in combo]
        lhs_slice = _slice_spatial(
            b, lhs, lhs_shape, lhs_element, p.dims.lhs_spatial, lhs_windows, ip, loc
        )
        rhs_slice = _slice_spatial(
            b, rhs, p.rhs_shape, rhs_element, p.dims.rhs_spatial, rhs_windows, ip, loc
        )
        partial = b.rebuild_conv(conv, lhs_slice, rhs_slice, overrides, ip)
        partials.append(partial)
        result = partial.results[0]
        total = result if total is None else b.add(total, result, ip, loc)
    assert total is not None
    return partials, total
