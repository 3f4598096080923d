"""Explicit stride, exact polyphase form.

For a zero-padded conv with stride s in a spatial dim, output o reads lhs `o*s + d*k` for tap k.
Taps whose offsets `d*k` agree mod s form a phase p: they read the lhs subsampled by s from
`d*k0`, with a kernel subsampled by `t = s/gcd(d, s)` and new dilation `d/gcd(d, s)`. Each phase
is a unit-stride conv of a lhs slice with a kernel slice; their sum is the original conv, with
the same multiply-adds.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams
from convcanon.hlo.phase_plan import DimPlan, plan_dim


@lru_cache(maxsize=4096)  # models repeat a few conv configurations thousands of times
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


def explicit_stride(
    b: build.Builder,
    conv: build.AnyOp,
    lhs: ir.Value,
    lhs_shape: tuple[int, ...],
    rhs: ir.Value,
    types: tuple[ir.Type, ir.Type, ir.Type],
    p: ConvParams,
    overrides: dict[str, ir.Attribute],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """The phases of `conv` on its zero-padded `lhs` (of `lhs_shape`) and kernel `rhs`, and
    their sum.

    `types` are the lhs and rhs element types and the partials' result type; `overrides` are
    attributes every partial conv resets besides stride and rhs dilation. Returns the partial
    convs and the sum's value."""
    plans = plan_stride(p)
    n = p.num_spatial
    overrides = {
        **overrides,
        "window_strides": b.i64_list((1,) * n),
        "rhs_dilation": b.i64_list(tuple(d.rhs_dilation for d in plans)),
    }
    lhs_element, rhs_element, result_type = types
    partials: list[ir.Operation] = []
    total: ir.Value | None = None
    for combo in itertools.product(*(d.phases for d in plans)):
        lhs_windows = [ph.lhs_window for ph in combo]
        rhs_windows = [ph.rhs_window for ph in combo]
        lhs_slice = b.slice_spatial(
            lhs, lhs_shape, lhs_element, p.dims.lhs_spatial, lhs_windows, ip, loc
        )
        rhs_slice = b.slice_spatial(
            rhs, p.rhs_shape, rhs_element, p.dims.rhs_spatial, rhs_windows, ip, loc
        )
        partial = b.rebuild_conv(conv, lhs_slice, rhs_slice, overrides, ip, result_type)
        partials.append(partial)
        result = partial.results[0]
        total = result if total is None else b.add(total, result, ip, loc)
    assert total is not None
    return partials, total
