"""Turn a conv's rewrite plan into ops: one call per conv configuration, no decisions.

`emit(b, plan, types)` gives the `Program` of the ops `plan` describes for a conv of the given
operand and result types; `build.instantiate` builds it in front of each such conv. What each op
reads and how it is shaped comes from the plan and from its operands' types; the choices (which
partial convs, which layout, which pads) were all made by the planner.
"""

from __future__ import annotations

import math
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo.build import Builder, Program, Ref
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.plan import ConvPlan
from convcanon.hlo.plan_phases import PhaseGroup, PhasePlan, Rearrangement
from convcanon.hlo.plan_window import Fold, Operand, Pad, Slices, Unfold, WindowPlan
from convcanon.records import NamedTuple


class _Folded(NamedTuple):
    """An operand with each folded axis split into (outer, s); `axes[a]` lists the axes of
    original axis `a`."""

    value: Ref
    axes: dict[int, list[int]]


def emit(b: Builder, plan: ConvPlan, types: tuple[ir.Type, ir.Type, ir.Type]) -> Program:
    """The program of `plan` (an accepted conv's) for a conv of these lhs, kernel and result
    types. Partials are summed in f32 and converted once when the plan says so."""
    lhs, rhs = b.start(types[0], types[1])
    result_element = b.type_info(types[2])[1]
    acc = ir.F32Type.get() if plan.wide else result_element
    layout = plan.channels_last
    if layout is not None:
        lhs = b.transpose(lhs, layout.lhs)
        rhs = b.transpose(rhs, layout.rhs)
        b.dynamic_from(lhs)
    body = plan.body
    if isinstance(body, PhasePlan):
        total = _phases(b, lhs, rhs, body, acc)
    else:
        assert body is not None, "a rejected conv has nothing to emit"
        total = _window(b, lhs, rhs, body, acc)
    if plan.wide:
        total = b.convert(total, result_element)
    if layout is not None:
        total = b.transpose(total, layout.back)
    return b.finish(total)


def _pad(b: Builder, value: Ref, pad: Pad) -> Ref:
    if pad.pads:
        value = b.pad(value, pad.low, pad.high, pad.interior)
    if pad.crop is not None:
        value = b.slice(value, *pad.crop)
    return value


def _window(b: Builder, lhs: Ref, rhs: Ref, plan: WindowPlan, acc: ir.Type) -> Ref:
    """The partial convs of a window plan, each added to the sum as soon as it is built (each
    partial's slices sit right before it)."""
    if plan.kernel_pad is not None:
        rhs = _pad(b, rhs, plan.kernel_pad)
    if plan.lhs_layout is not None:
        lhs = b.transpose(lhs, plan.lhs_layout)
    if plan.lhs_pad is not None:
        lhs = _pad(b, lhs, plan.lhs_pad)
    if plan.lhs_back is not None:
        lhs = b.transpose(lhs, plan.lhs_back)
    if plan.kernel_flips:  # tap k reads element K-1-k: flip those dims, and read them forward
        rhs = b.reverse(rhs, plan.kernel_flips)
    folded_lhs = _fold(b, lhs, plan.lhs_fold) if plan.lhs_fold is not None else None
    folded_rhs = _fold(b, rhs, plan.kernel_fold) if plan.kernel_fold is not None else None
    total: Ref | None = None
    for partial in plan.partials:
        x = _operand(b, lhs, folded_lhs, partial.lhs)
        w = _operand(b, rhs, folded_rhs, partial.rhs)
        y = b.conv(x, w, partial.params, plan.written, acc)
        total = y if total is None else b.add(total, y)
    assert total is not None
    return total


def _operand(b: Builder, value: Ref, folded: _Folded | None, spec: Operand) -> Ref:
    if spec is None:
        return value
    if isinstance(spec, Slices):
        return b.join_slices(value, spec.axes, spec.windows, spec.axis, spec.blocks, spec.pads)
    assert folded is not None
    return _unfold(b, folded, spec)


def _fold(b: Builder, value: Ref, fold: Fold) -> _Folded:
    """`value` cropped or zero-padded at the end of each folded axis to outer*s, then each such
    axis split into (outer, s)."""
    shape = b.shape(value)
    rank = len(shape)
    folds = {axis: (outer, s) for axis, outer, s in fold.folds}
    target = list(shape)
    for axis, (outer, s) in folds.items():
        target[axis] = outer * s
    if any(t < e for t, e in zip(target, shape, strict=True)):
        limit = [min(t, e) for t, e in zip(target, shape, strict=True)]
        value = b.slice(value, [0] * rank, limit)
        shape = b.shape(value)
    if any(t > e for t, e in zip(target, shape, strict=True)):
        high = [t - e for t, e in zip(target, shape, strict=True)]
        value = b.pad(value, [0] * rank, high)
        shape = b.shape(value)
    split: list[int] = []
    axes: dict[int, list[int]] = {}
    for axis, extent in enumerate(shape):
        parts = list(folds[axis]) if axis in folds else [extent]
        axes[axis] = list(range(len(split), len(split) + len(parts)))
        split += parts
    return _Folded(b.reshape(value, split), axes)


def _unfold(b: Builder, folded: _Folded, spec: Unfold) -> Ref:
    """The phases `spec.windows` of a folded operand, with the phase axes moved into the
    feature axis (after its groups' blocks, in dim order): the same tensor as the phase slices
    concatenated on the features."""
    axes = tuple(tuple(folded.axes[a]) for a in sorted(folded.axes))
    crop, split, order, merged = _unfold_geometry(b.shape(folded.value), axes, spec)
    value = folded.value
    if crop is not None:
        value = b.slice(value, *crop)
    if split is not None:
        value = b.reshape(value, split)
    value = b.permute_reshape(value, order, merged)
    if spec.layout is not None:
        value = b.transpose(value, spec.layout)
    return value


@lru_cache(maxsize=4096)
def _unfold_geometry(
    shape: tuple[int, ...], axes: tuple[tuple[int, ...], ...], spec: Unfold
) -> tuple[tuple[list[int], list[int]] | None, list[int] | None, tuple[int, ...], tuple[int, ...]]:
    """The crop of the phase windows, the split of the feature axis into its groups, and the
    permutation and shape that move the phase axes behind them (`axes[a]`: the axes of the
    folded operand's original axis `a`)."""
    start, limit = [0] * len(shape), list(shape)
    for axis, o0, on, p0, pn in spec.windows:
        outer, phase = axes[axis]
        start[outer], limit[outer] = o0, o0 + on
        start[phase], limit[phase] = p0, p0 + pn
    for axis, first, length in spec.crops:
        (whole,) = axes[axis]
        start[whole], limit[whole] = first, first + length
    crop = None
    if start != [0] * len(shape) or limit != list(shape):
        crop = (start, limit)
        shape = tuple(
            -(-(hi - lo) // 1) if d >= 0 else d
            for d, lo, hi in zip(shape, start, limit, strict=True)
        )
    feature, groups = spec.feature, spec.groups
    (feature_axis,) = axes[feature]
    parts = [groups, shape[feature_axis] // groups] if groups > 1 else [shape[feature_axis]]
    split = [*shape[:feature_axis], *parts, *shape[feature_axis + 1 :]]

    def at(axis: int) -> int:  # an axis of `shape` in `split`
        return axis + (len(parts) - 1 if axis > feature_axis else 0)

    windowed = [axis for axis, *_ in spec.windows]
    phase_axes = [at(axes[a][1]) for a in windowed]  # in spatial-dim order
    order: list[int] = []
    merged: list[int] = []
    for axis in range(len(axes)):
        if axis in windowed:
            outer = at(axes[axis][0])
            order.append(outer)
            merged.append(split[outer])
        elif axis == feature:
            first = at(feature_axis)
            inner = first + len(parts) - 1
            order += [*range(first, inner), *phase_axes, inner]
            merged.append(math.prod(split[a] for a in (*range(first, inner + 1), *phase_axes)))
        else:
            order.append(at(axes[axis][0]))
            merged.append(split[order[-1]])
    return crop, split if groups > 1 else None, tuple(order), tuple(merged)


# -- output phases ------------------------------------------------------------------------------


def _phases(b: Builder, lhs: Ref, rhs: Ref, plan: PhasePlan, acc: ir.Type) -> Ref:
    """The output phase convs of a lhs-dilated conv, put in place: placed by interior pads and
    summed (merge-phases=none), by one depth-to-space, or by interleaving."""
    p = plan.params
    if plan.assembly == "sum":
        total: Ref | None = None
        for group in plan.groups:
            value = _group(b, lhs, rhs, group, acc)
            if group.placement is not None:
                value = _pad(b, value, group.placement)
            total = value if total is None else b.add(total, value)
        return total if total is not None else b.zeros(p.result_shape, acc)
    grid: dict[tuple[int, ...], Ref] = {}
    for group in plan.groups:
        value = _group(b, lhs, rhs, group, acc)
        if plan.assembly == "depth-to-space":
            return _depth_to_space(b, value, plan)
        for index, phase in enumerate(group.phases):
            grid[phase] = _phase_of(b, value, p, index, len(group.phases))
    if not grid:
        return b.zeros(p.result_shape, acc)
    return _interleave(b, grid, plan, acc)


def _group(b: Builder, lhs: Ref, rhs: Ref, group: PhaseGroup, acc: ir.Type) -> Ref:
    k = group.kernel
    if isinstance(k, Rearrangement):
        kernel = _rearranged(b, rhs, k)
    else:
        kernel = b.join_slices(rhs, k.axes, k.windows, k.axis, k.blocks, k.pads)
    return _window(b, lhs, kernel, group.conv, acc)


def _rearranged(b: Builder, rhs: Ref, r: Rearrangement) -> Ref:
    """The kernel rearranged as `r` says (see `plan.Rearrangement`)."""
    value = b.slice(rhs, *r.crop) if r.crop is not None else rhs
    if r.high is not None:
        value = b.pad(value, [0] * len(r.high), r.high)
    value = b.reshape(value, r.split)
    if r.cut is not None:
        value = b.slice(value, [0] * len(r.cut), r.cut)
    if r.flips:
        value = b.reverse(value, r.flips)
    return b.permute_reshape(value, r.order, r.merged)


def _split(shape: tuple[int, ...], axis: int, parts: list[int]) -> list[int]:
    return [*shape[:axis], *parts, *shape[axis + 1 :]]


def _phase_of(b: Builder, value: Ref, p: ConvParams, index: int, merged: int) -> Ref:
    """Phase `index` of a conv result whose feature axis holds (groups, merged, features)."""
    axis, groups = p.dims.out_feature, p.feature_group_count
    if merged == 1:
        return value
    shape = b.shape(value)
    out = list(shape)
    out[axis] //= merged
    if groups == 1:
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = index * out[axis], (index + 1) * out[axis]
        return b.slice(value, start, limit)
    per = out[axis] // groups
    split = _split(shape, axis, [groups, merged, per])
    start, limit = [0] * len(split), list(split)
    start[axis + 1], limit[axis + 1] = index, index + 1
    part = b.reshape(value, split)
    part = b.slice(part, start, limit)
    return b.reshape(part, out)


def _depth_to_space(b: Builder, value: Ref, plan: PhasePlan) -> Ref:
    """The result of one conv holding every output phase (features (G, P_1, ..., P_n, C) in
    row-major phase order, spatial extents O/P): each P_i moves behind its spatial dim."""
    p = plan.params
    dims = p.dims
    shape = b.shape(value)
    groups = p.feature_group_count
    periods = [d.period for d in plan.dims]
    per = shape[dims.out_feature] // (groups * math.prod(periods))
    feature_parts = ([groups] if groups > 1 else []) + periods + [per]
    split = _split(shape, dims.out_feature, feature_parts)

    def index(axis: int) -> int:  # axes of `split`: the feature axis became several
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
    value = b.reshape(value, split)
    return b.permute_reshape(value, order, p.result_shape)


def _interleave(
    b: Builder, grid: dict[tuple[int, ...], Ref], plan: PhasePlan, element: ir.Type
) -> Ref:
    """Put the output phases (keyed by their q per dim) in place, one dim at a time from the
    last: phase q's outputs m go to q + P*m. Shorter phases are padded with zeros at the end
    and each run of phases without taps is one block of zeros; the interleave is a concat on a
    new axis and a reshape (no `add`). A period longer than the output has one output per
    phase, and only the first `extent` phases have one (an lhs dilation of 2**31 over one
    output)."""
    p = plan.params
    dims = p.dims
    for i in reversed(range(p.num_spatial)):
        period, extent, axis = plan.dims[i].period, p.out_spatial[i], dims.out_spatial[i]
        if period == 1:
            continue
        rows: dict[tuple[int, ...], dict[int, Ref]] = {}
        for key, placed in grid.items():
            rows.setdefault(key[:i] + (0,) + key[i + 1 :], {})[key[i]] = placed
        each = -(-extent // period)
        grid = {}
        for key, row in rows.items():
            ref = list(b.shape(next(iter(row.values()))))
            ref[axis] = each
            column = (*ref[: axis + 1], 1, *ref[axis + 1 :])
            slots = min(period, extent)  # each is 1 where period > extent
            parts = []
            for start, stop in _gaps(sorted(q for q in row if q < slots), slots):
                if stop > start:  # phases without taps: one zero block for the whole run
                    gap = list(column)
                    gap[axis + 1] = stop - start
                    parts.append(b.zeros(gap, element))
                if stop < slots:
                    found = row[stop]
                    shape = b.shape(found)
                    if shape[axis] < each:
                        high = [0] * len(shape)
                        high[axis] = each - shape[axis]
                        found = b.pad(found, [0] * len(shape), high)
                    parts.append(b.reshape(found, column))
            joined = b.concatenate(parts, axis + 1) if len(parts) > 1 else parts[0]
            out = list(ref)
            out[axis] = each * slots
            value = b.reshape(joined, out)
            if out[axis] > extent:
                limit = list(out)
                limit[axis] = extent
                value = b.slice(value, [0] * len(out), limit)
            grid[key] = value
    assert len(grid) == 1
    return next(iter(grid.values()))


def _gaps(present: list[int], slots: int) -> list[tuple[int, int]]:
    """(start of a run of missing phases, the present phase after it, or `slots`) for each
    present phase in order and once more for the end: the ops stay linear in the phases that
    have taps, however long the period (an lhs dilation of 2**24 has 2**24 phases, one with
    taps)."""
    runs, start = [], 0
    for q in [*present, slots]:
        runs.append((start, q))
        start = q + 1
    return [(a, q) for a, q in runs if q < slots or q > a]
