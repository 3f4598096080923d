"""Turn a conv's rewrite plan into ops: one call per conv configuration, no decisions.

`emit(b, plan, types)` gives the `Program` of the ops `plan` describes for a conv of the given
operand and result types; `program.instantiate` builds it in front of each such conv. What each op
reads and how it is shaped comes from the plan and from its operands' types; the choices (which
partial convs, which layout, which pads) were all made by the planner.
"""

from __future__ import annotations

import math

from jaxlib.mlir import ir

from convcanon.hlo.build import Builder
from convcanon.hlo.conv_params import DYNAMIC, ConvParams
from convcanon.hlo.plan import ConvPlan
from convcanon.hlo.plan_phases import PhaseGroup, PhasePlan, Rearrangement
from convcanon.hlo.plan_window import Fold, Operand, Pad, Slices, Unfold, WindowPlan
from convcanon.hlo.program import Program, Ref
from convcanon.records import NamedTuple


class _Folded(NamedTuple):
    """An operand cropped or padded to whole folds (`source`), and split into (outer, s) per
    folded axis (`value`, built only if an unfold reads it as split)."""

    value: Ref | None
    source: Ref


def emit(b: Builder, plan: ConvPlan, types: tuple[ir.Type, ir.Type, ir.Type]) -> Program:
    """The program of `plan` (an accepted conv's) for a conv of these lhs, kernel and result
    types. Partials are summed in f32 and converted once when the plan says so."""
    lhs, rhs = b.start(types[0], types[1])
    result_element = b.type_info(types[2])[1]
    acc = ir.F32Type.get() if plan.wide else result_element
    body = plan.body
    assert body is not None, "a rejected conv has nothing to emit"
    layout = plan.channels_last
    kernel = _Kernel(rhs, rhs)
    if layout is not None:  # an all-zero result reads no operand, only a dynamic size
        if not plan.all_zero or DYNAMIC in layout.params.result_shape:
            lhs = b.transpose(lhs, layout.lhs)
            b.dynamic_from(lhs)
        moved = b.transpose(rhs, layout.rhs) if layout.moves_kernel else None
        kernel = _Kernel(moved, rhs)
    if isinstance(body, PhasePlan):
        total = _phases(b, lhs, kernel, body, acc)
    else:
        assert kernel.value is not None
        total = _window(b, lhs, kernel.value, body, acc)
    if plan.wide:
        total = b.convert(total, result_element)
    if layout is not None:
        total = b.transpose(total, layout.back)
    return b.finish(total)


class _Kernel(NamedTuple):
    """The kernel as the rewrite reads it (`value`: None where nothing reads it as it is), and
    the conv's own kernel (`source`), which a rearrangement that absorbs the channels-last
    move transposes itself."""

    value: Ref | None
    source: Ref


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
    folded_lhs = folded_rhs = None
    if plan.lhs_fold is not None:
        folded_lhs = _fold(b, lhs, plan.lhs_fold)
    if plan.kernel_fold is not None:
        folded_rhs = _fold(b, rhs, plan.kernel_fold)
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
    axis split into (outer, s) if an unfold reads the split (the others reshape the cropped or
    padded value themselves)."""
    if fold.limit is not None:
        value = b.slice(value, [0] * len(fold.limit), fold.limit)
    if fold.high is not None:
        value = b.pad(value, [0] * len(fold.high), fold.high)
    if fold.split_read:
        return _Folded(b.reshape(value, fold.split), value)
    if DYNAMIC in fold.split:  # the size every unfold's reshape reads is built with the fold
        b.dynamic_size()
    return _Folded(None, value)


def _unfold(b: Builder, folded: _Folded, spec: Unfold) -> Ref:
    """The phases `spec.windows` of a folded operand, with the phase axes moved into the
    feature axis (after its groups' blocks, in dim order): the same tensor as the phase slices
    concatenated on the features."""
    if spec.reads_split:
        assert folded.value is not None
        value = b.slice(folded.value, *spec.crop) if spec.crop is not None else folded.value
    else:  # a reshape of the split is a reshape of what was split
        value = folded.source
    value = b.permute_reshape(value, spec.order, spec.merged, spec.split)
    if spec.layout is not None:
        value = b.transpose(value, spec.layout)
    return value


# -- output phases ------------------------------------------------------------------------------


def _phases(b: Builder, lhs: Ref, rhs: _Kernel, plan: PhasePlan, acc: ir.Type) -> Ref:
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
    if plan.assembly == "depth-to-space":  # one group holds every output phase
        (group,) = plan.groups
        return _depth_to_space(b, _group(b, lhs, rhs, group, acc), plan)
    grid: dict[tuple[int, ...], _View] = {}
    for group in plan.groups:
        value = _group(b, lhs, rhs, group, acc)
        for index, phase in enumerate(group.phases):
            view = _phase_of(b, value, p, index, len(group.phases))
            grid[phase] = _settle(b, view, plan, plan.stages, phase)
    if not grid:
        return b.zeros(p.result_shape, acc)
    return _interleave(b, grid, plan, acc)


def _group(b: Builder, lhs: Ref, rhs: _Kernel, group: PhaseGroup, acc: ir.Type) -> Ref:
    k = group.kernel
    if isinstance(k, Rearrangement) and k.move is not None:
        kernel = _rearranged(b, rhs.source, k)
    else:
        assert rhs.value is not None
        if isinstance(k, Rearrangement):
            kernel = _rearranged(b, rhs.value, k)
        else:
            kernel = b.join_slices(rhs.value, k.axes, k.windows, k.axis, k.blocks, k.pads)
    return _window(b, lhs, kernel, group.conv, acc)


def _rearranged(b: Builder, rhs: Ref, r: Rearrangement) -> Ref:
    """The kernel rearranged as `r` says (see `plan_phases.Rearrangement`); `rhs` the conv's
    kernel before its channels-last move when `r` absorbs it (one transpose does both)."""
    if r.move is not None:
        value = b.transpose(rhs, [r.move[d] for d in r.order])
        return b.reshape(value, r.merged)
    value = b.slice(rhs, *r.crop) if r.crop is not None else rhs
    if r.high is not None:
        value = b.pad(value, [0] * len(r.high), r.high)
    if r.cut is None and not r.flips:  # split and merged by one reshape where that suffices
        return b.permute_reshape(value, r.order, r.merged, r.split)
    value = b.reshape(value, r.split)
    if r.cut is not None:
        value = b.slice(value, [0] * len(r.cut), r.cut)
    if r.flips:
        value = b.reverse(value, r.flips)
    return b.permute_reshape(value, r.order, r.merged)


def _split(shape: tuple[int, ...], axis: int, parts: list[int]) -> list[int]:
    return [*shape[:axis], *parts, *shape[axis + 1 :]]


# A value and the shape it is read as: a reshape not built yet, since the next reshape of it
# may reshape the value behind it instead.
_View = tuple[Ref, tuple[int, ...]]


def _phase_of(b: Builder, value: Ref, p: ConvParams, index: int, merged: int) -> _View:
    """Phase `index` of a conv result whose feature axis holds (groups, merged, features)."""
    axis, groups = p.dims.out_feature, p.feature_group_count
    shape = b.shape(value)
    if merged == 1:
        return value, shape
    out = list(shape)
    out[axis] //= merged
    if groups == 1:
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = index * out[axis], (index + 1) * out[axis]
        part = b.slice(value, start, limit)
        return part, b.shape(part)
    per = out[axis] // groups
    split = _split(shape, axis, [groups, merged, per])
    start, limit = [0] * len(split), list(split)
    start[axis + 1], limit[axis + 1] = index, index + 1
    part = b.reshape(value, split)
    return b.slice(part, start, limit), tuple(out)


def _settle(
    b: Builder, view: _View, plan: PhasePlan, later: tuple[int, ...], key: tuple[int, ...]
) -> _View:
    """`view` (of the phases `key`) built where the plan says it is read as it is: padded by
    the interleave stage of dim `later[0]`, or as the result (no stage later). That stage's
    reshape of it otherwise reshapes the value behind it."""
    if later and key[later[0]] not in plan.short[later[0]]:
        return view
    value, shape = view
    return b.reshape(value, shape), shape


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
    return b.permute_reshape(value, order, p.result_shape, split)


def _interleave(
    b: Builder, grid: dict[tuple[int, ...], _View], plan: PhasePlan, element: ir.Type
) -> Ref:
    """Put the output phases (keyed by their q per dim) in place, one dim at a time from the
    last: phase q's outputs m go to q + P*m. Shorter phases are padded with zeros at the end
    and each run of phases without taps is one block of zeros; the interleave is a concat on a
    new axis and a reshape (no `add`). A period longer than the output has one output per
    phase, and only the first `extent` phases have one (an lhs dilation of 2**31 over one
    output)."""
    p = plan.params
    dims = p.dims
    stages = plan.stages
    for n, i in enumerate(stages):
        period, extent, axis = plan.dims[i].period, p.out_spatial[i], dims.out_spatial[i]
        rows: dict[tuple[int, ...], dict[int, _View]] = {}
        for key, placed in grid.items():
            rows.setdefault(key[:i] + (0,) + key[i + 1 :], {})[key[i]] = placed
        each = -(-extent // period)
        grid = {}
        for key, row in rows.items():
            ref = list(next(iter(row.values()))[1])
            ref[axis] = each
            column = (*ref[: axis + 1], 1, *ref[axis + 1 :])
            slots = min(period, extent)  # each is 1 where period > extent
            runs = _gaps(sorted(q for q in row if q < slots), slots)
            single = sum((stop > start) + (stop < slots) for start, stop in runs) == 1
            parts: list[Ref] = []
            for start, stop in runs:
                if stop > start:  # phases without taps: one zero block for the whole run
                    gap = list(column)
                    gap[axis + 1] = stop - start
                    parts.append(b.zeros(gap, element))
                if stop < slots:
                    found, shape = row[stop]
                    if stop in plan.short[i]:  # settled: built
                        high = [0] * len(shape)
                        high[axis] = each - shape[axis]
                        found = b.pad(found, [0] * len(shape), high)
                    parts.append(found if single else b.reshape(found, column))
            out = list(ref)
            out[axis] = each * slots
            view = (b.concatenate(parts, axis + 1), tuple(out))
            if out[axis] > extent:
                limit = list(out)
                limit[axis] = extent
                value = b.slice(b.reshape(*view), [0] * len(out), limit)
                view = (value, b.shape(value))
            grid[key] = _settle(b, view, plan, stages[n + 1 :], key)
    assert len(grid) == 1
    return next(iter(grid.values()))[0]


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
