"""Lhs dilation, polyphase form: the dual of the stride rewrite.

With lhs dilation L, stride s and rhs dilation d, output o reads the dilated, padded input at
`o*s + d*k - lo` for tap k, which is a real element (or a lattice padding zero) only when it is
a multiple of L. Outputs repeat that pattern with period P = L/gcd(s, L): output phase q reads
the taps `k = k0 + i*L/gcd(d, L)` at undilated positions `a_q + m*s/gcd(s, L) + i*d/gcd(d, L)`.
So each phase is an ordinary conv of the undilated lhs with a kernel slice, and its result is
placed into the output by a `pad` with interior P-1; the sum of the placed phases is the conv.
No product of an inserted zero is ever computed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams
from convcanon.hlo.phase_plan import LhsDimPlan, LhsPhase

# Builds one phase conv through pad and stride from (kernel slice, its params, the attributes it
# overrides, its result type); returns its partial convs and their sum.
PhaseRewrite = Callable[
    [ir.Value, ConvParams, dict[str, ir.Attribute], ir.Type], tuple[list[ir.Operation], ir.Value]
]


@lru_cache(maxsize=4096)
def phase_params(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], combo: tuple[LhsPhase, ...]
) -> ConvParams:
    """The params of the conv that computes one output phase (one phase per spatial dim)."""
    dims = p.dims
    rhs, out = list(p.rhs_shape), list(p.result_shape)
    for axis, ph in zip(dims.rhs_spatial, combo, strict=True):
        rhs[axis] = ph.taps
    for axis, ph in zip(dims.out_spatial, combo, strict=True):
        out[axis] = ph.outputs
    return replace(
        p,
        rhs_shape=tuple(rhs),
        result_shape=tuple(out),
        strides=tuple(plan.stride for plan in plans),
        padding=tuple((ph.pad_low, ph.pad_high) for ph in combo),
        lhs_dilation=(1,) * p.num_spatial,
        rhs_dilation=tuple(plan.rhs_dilation for plan in plans),
    )


@lru_cache(maxsize=4096)
def placement(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], combo: tuple[LhsPhase, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """The (low, high, interior) pad that puts a phase's outputs at q, q+P, ... of the result,
    or None if the phase already is the whole result."""
    rank = len(p.result_shape)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    for axis, plan, ph, extent in zip(p.dims.out_spatial, plans, combo, p.out_spatial, strict=True):
        last = ph.q + (ph.outputs - 1) * plan.period
        low[axis], high[axis], interior[axis] = ph.q, extent - 1 - last, plan.period - 1
    if not any(low) and not any(high) and not any(interior):
        return None
    return tuple(low), tuple(high), tuple(interior)


def explicit_lhs_dilation(
    b: build.Builder,
    conv: ir.Operation,
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    result_element: ir.Type,
    rewrite_phase: PhaseRewrite,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """The output phases of `conv`, each rewritten by `rewrite_phase`, placed and summed.

    Phase convs and the sum have element type `result_element` (f32 when partials are summed
    wide). Returns every partial conv and the sum; without any tap, the sum is a zero constant."""
    n = p.num_spatial
    rhs = conv.operands[1]
    rhs_element = ir.ShapedType(rhs.type).element_type
    partials: list[ir.Operation] = []
    total: ir.Value | None = None
    for combo in itertools.product(*(plan.phases for plan in plans)):
        q = phase_params(p, plans, combo)
        kernel = b.slice_spatial(
            rhs,
            p.rhs_shape,
            rhs_element,
            p.dims.rhs_spatial,
            [ph.rhs_window for ph in combo],
            ip,
            loc,
        )
        overrides = {
            "window_strides": b.i64_list(q.strides),
            "padding": b.padding(q.padding),
            "lhs_dilation": b.i64_list((1,) * n),
            "rhs_dilation": b.i64_list(q.rhs_dilation),
        }
        phase_type = b.tensor(q.result_shape, result_element)
        phase_partials, value = rewrite_phase(kernel, q, overrides, phase_type)
        partials += phase_partials
        where = placement(p, plans, combo)
        if where is not None:
            zero = b.zero(result_element, conv.operation.block, loc)
            value = b.pad(value, q.result_shape, result_element, zero, *where, ip, loc)[0]
        total = value if total is None else b.add(total, value, ip, loc)
    if total is None:
        total = b.zeros(p.result_shape, result_element, ip, loc)
    return partials, total
