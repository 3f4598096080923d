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

import math
from collections.abc import Callable
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams
from convcanon.hlo.phase_merge import (
    LhsGroup,
    is_depth_to_space,
    lhs_group_params,
    lhs_groups,
    zero_tap_pads,
)
from convcanon.hlo.phase_plan import LhsDimPlan, LhsPhase

# Builds one phase conv through pad and stride from (kernel slice, its params, the attributes it
# overrides, its result type); returns its partial convs and their sum.
PhaseRewrite = Callable[
    [ir.Value, ConvParams, dict[str, ir.Attribute], ir.Type], tuple[list[ir.Operation], ir.Value]
]


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


def _group_conv(
    b: build.Builder,
    conv: ir.Operation,
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    group: LhsGroup,
    result_element: ir.Type,
    rewrite_phase: PhaseRewrite,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value, ConvParams]:
    """The conv of one group of output phases (their kernel slices joined on the kernel's
    output features), rewritten by `rewrite_phase`: its partials, value and params."""
    rhs = conv.operands[1]
    rhs_element = ir.ShapedType(rhs.type).element_type
    q = lhs_group_params(p, plans, group)
    kernel = b.join_slices(
        rhs,
        p.rhs_shape,
        rhs_element,
        p.dims.rhs_spatial,
        [[ph.rhs_window for ph in combo] for combo in group.combos],
        p.dims.rhs_out_feature,
        p.feature_group_count,
        ip,
        loc,
        [
            [
                zero_tap_pads(ph.zeros_before, ph.zeros_after, reversed_)
                for ph, reversed_ in zip(combo, p.reversal, strict=True)
            ]
            for combo in group.combos
        ],
        lambda: b.zero(rhs_element, conv.operation.block, loc),
    )
    overrides = {
        "window_strides": b.i64_list(q.strides),
        "padding": b.padding(q.padding),
        "lhs_dilation": b.i64_list((1,) * p.num_spatial),
        "rhs_dilation": b.i64_list(q.rhs_dilation),
    }
    phase_type = b.tensor(q.result_shape, result_element)
    partials, value = rewrite_phase(kernel, q, overrides, phase_type)
    return partials, value, q


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
    """The output phases of `conv`, one conv each (merge-phases=none), rewritten by
    `rewrite_phase`, placed with an interior pad and summed.

    Phase convs and the sum have element type `result_element` (f32 when partials are summed
    wide). Returns every partial conv and the sum; without any tap, the sum is a zero constant."""
    partials: list[ir.Operation] = []
    total: ir.Value | None = None
    for group in lhs_groups(p, "none"):
        phase_partials, value, q = _group_conv(
            b, conv, p, plans, group, result_element, rewrite_phase, ip, loc
        )
        partials += phase_partials
        where = placement(p, plans, group.combos[0])
        if where is not None:
            zero = b.zero(result_element, conv.operation.block, loc)
            value = b.pad(value, q.result_shape, result_element, zero, *where, ip, loc)[0]
        total = value if total is None else b.add(total, value, ip, loc)
    if total is None:
        total = b.zeros(p.result_shape, result_element, ip, loc)
    return partials, total


# -- merged output phases, put in place by interleaving -------------------------------------------

Placed = tuple[ir.Value, tuple[int, ...]]  # a value and its shape


def _split_features(shape: tuple[int, ...], axis: int, parts: list[int]) -> list[int]:
    return [*shape[:axis], *parts, *shape[axis + 1 :]]


def _phase_of(
    b: build.Builder,
    value: ir.Value,
    shape: tuple[int, ...],
    element: ir.Type,
    axis: int,
    groups: int,
    index: int,
    merged: int,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> Placed:
    """Phase `index` of a conv result whose feature `axis` holds (groups, merged, features)."""
    out = list(shape)
    out[axis] //= merged
    if merged == 1:
        return value, shape
    if groups == 1:
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = index * out[axis], (index + 1) * out[axis]
        return b.slice_(value, element, start, limit, [1] * len(shape), ip, loc)
    per = out[axis] // groups
    split = _split_features(shape, axis, [groups, merged, per])
    start, limit = [0] * len(split), list(split)
    start[axis + 1], limit[axis + 1] = index, index + 1
    part = b.reshape(value, split, element, ip, loc)
    part, _ = b.slice_(part, element, start, limit, [1] * len(split), ip, loc)
    return b.reshape(part, out, element, ip, loc), tuple(out)


def _depth_to_space(
    b: build.Builder,
    value: ir.Value,
    shape: tuple[int, ...],
    element: ir.Type,
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """The result of one conv holding every output phase (features (G, P_1, ..., P_n, C) in
    row-major phase order, spatial extents O/P): each P_i moves behind its spatial dim."""
    dims = p.dims
    groups = p.feature_group_count
    periods = [plan.period for plan in plans]
    per = shape[dims.out_feature] // (groups * math.prod(periods))
    feature_parts = ([groups] if groups > 1 else []) + periods + [per]
    split = _split_features(shape, dims.out_feature, feature_parts)

    # axes of `split`: the feature axis became len(feature_parts) axes
    def index(axis: int) -> int:
        return axis if axis <= dims.out_feature else axis + len(feature_parts) - 1

    first = dims.out_feature
    period_axes = [first + (1 if groups > 1 else 0) + i for i in range(len(periods))]
    order: list[int] = []
    for axis in range(len(shape)):
        if axis in dims.out_spatial:
            order.append(index(axis))
            order.append(period_axes[dims.out_spatial.index(axis)])
        elif axis == dims.out_feature:
            order += ([first] if groups > 1 else []) + [first + len(feature_parts) - 1]
        else:
            order.append(index(axis))
    value = b.reshape(value, split, element, ip, loc)
    return b.permute_reshape(value, split, element, order, p.result_shape, ip, loc)


def _interleave(
    b: build.Builder,
    grid: dict[tuple[int, ...], Placed],
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    element: ir.Type,
    zero: Callable[[], ir.Value],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """Put the output phases (keyed by their q per dim) in place, one dim at a time from the
    last: phase q's outputs m go to q + P*m. Shorter phases are padded with zeros at the end
    and phases without taps are zeros; the interleave is a concat on a new unit axis and a
    reshape (no `add`)."""
    dims = p.dims
    for i in reversed(range(p.num_spatial)):
        plan, extent, axis = plans[i], p.out_spatial[i], dims.out_spatial[i]
        if plan.period == 1:
            continue
        rows: dict[tuple[int, ...], dict[int, Placed]] = {}
        for key, placed in grid.items():
            rows.setdefault(key[:i] + (0,) + key[i + 1 :], {})[key[i]] = placed
        each = -(-extent // plan.period)
        grid = {}
        for key, row in rows.items():
            ref = list(next(iter(row.values()))[1])
            ref[axis] = each
            column = (*ref[: axis + 1], 1, *ref[axis + 1 :])
            parts = []
            for q in range(plan.period):
                found = row.get(q)
                if found is None:
                    part = b.zeros(column, element, ip, loc)
                else:
                    value, shape = found
                    if shape[axis] < each:
                        high = [0] * len(shape)
                        high[axis] = each - shape[axis]
                        zeros = [0] * len(shape)
                        value, shape = b.pad(
                            value, shape, element, zero(), zeros, high, zeros, ip, loc
                        )
                    part = b.reshape(value, column, element, ip, loc)
                parts.append(part)
            joined, _ = b.concatenate(parts, [column] * len(parts), element, axis + 1, ip, loc)
            out = list(ref)
            out[axis] = each * plan.period
            value = b.reshape(joined, out, element, ip, loc)
            if out[axis] > extent:
                limit = list(out)
                limit[axis] = extent
                value, out_shape = b.slice_(
                    value, element, [0] * len(out), limit, [1] * len(out), ip, loc
                )
                out = list(out_shape)
            grid[key] = (value, tuple(out))
    assert len(grid) == 1
    return next(iter(grid.values()))[0]


def merged_lhs_dilation(
    b: build.Builder,
    conv: ir.Operation,
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    groups: tuple[LhsGroup, ...],
    result_element: ir.Type,
    rewrite_phase: PhaseRewrite,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """The output phases of `conv`, one conv per group (its phases' kernels joined on the
    output-feature dim), each rewritten by `rewrite_phase`, put in place by interleaving."""
    dims = p.dims
    feature_groups = p.feature_group_count
    block = conv.operation.block

    def zero() -> ir.Value:
        return b.zero(result_element, block, loc)

    partials: list[ir.Operation] = []
    grid: dict[tuple[int, ...], Placed] = {}
    for group in groups:
        phase_partials, value, q = _group_conv(
            b, conv, p, plans, group, result_element, rewrite_phase, ip, loc
        )
        partials += phase_partials
        if is_depth_to_space(p, plans, groups):
            shape = q.result_shape
            return partials, _depth_to_space(b, value, shape, result_element, p, plans, ip, loc)
        merged = len(group.combos)
        for index, combo in enumerate(group.combos):
            grid[tuple(ph.q for ph in combo)] = _phase_of(
                b,
                value,
                q.result_shape,
                result_element,
                dims.out_feature,
                feature_groups,
                index,
                merged,
                ip,
                loc,
            )
    if not grid:
        return partials, b.zeros(p.result_shape, result_element, ip, loc)
    return partials, _interleave(b, grid, p, plans, result_element, zero, ip, loc)
