"""Turn a conv's rewrite plan into ops: one call per conv configuration, no decisions.

`emit(b, plan, types)` gives the `Program` of the ops `plan` describes for a conv of the given
operand and result types; `build.instantiate` builds it in front of each such conv. What each op
reads and how it is shaped comes from the plan and from its operands' types; the choices (which
partial convs, which layout, which pads) were all made by the planner.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

from jaxlib.mlir import ir

from convcanon.hlo.build import DYNAMIC, Builder, Program, Ref, Window
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.plan import (
    ConvPlan,
    Fold,
    Operand,
    Pad,
    PhaseGroup,
    PhasePlan,
    Slices,
    Unfold,
    WindowPlan,
)
from convcanon.records import NamedTuple


class _Folded:
    """An operand with each folded axis split into (outer, s); `axes[a]` lists the axes of
    original axis `a`. `source` is the operand before its fold and `folds` its (outer, s) per
    folded axis."""

    __slots__ = ("value", "axes", "source", "folds")

    def __init__(
        self,
        value: Ref,
        axes: dict[int, list[int]],
        source: Ref,
        folds: dict[int, tuple[int, int]],
    ) -> None:
        self.value = value
        self.axes = axes
        self.source = source
        self.folds = folds


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
        w = _kernel_phase(b, folded_rhs, partial.rhs)
        if w is None:
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


def _kernel_phase(b: Builder, folded: _Folded | None, spec: Operand) -> Ref | None:
    """A kernel operand that takes one phase of each folded axis, as one strided slice of the
    kernel before its fold, or None when it is not that (it merges phases, or reads taps the
    fold's zero extension added). The same taps as the fold's slice: the kernel's pad, reshape,
    slice and reshape become one op, which runs on every call when the kernel is an argument.
    The lhs keeps its fold: reading it once in front of every partial is the policy's choice."""
    if folded is None or not isinstance(spec, Unfold) or spec.layout is not None:
        return None
    windows = {axis: (o0, on, p0, pn) for axis, o0, on, p0, pn in spec.windows}
    if set(windows) != set(folded.folds) or any(w[3] != 1 for w in windows.values()):
        return None
    shape = b.shape(folded.source)
    start, limit, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, (o0, on, p0, _) in windows.items():
        s = folded.folds[axis][1]
        first = o0 * s + p0
        last = first + (on - 1) * s
        if on < 1 or last >= shape[axis]:
            return None
        start[axis], limit[axis], strides[axis] = first, last + 1, s
    for axis, first, length in spec.crops:  # an axis the fold leaves whole
        start[axis], limit[axis] = first, first + length
    return b.slice(folded.source, start, limit, strides)


def _fold(b: Builder, value: Ref, fold: Fold) -> _Folded:
    """`value` cropped or zero-padded at the end of each folded axis to outer*s, then each such
    axis split into (outer, s)."""
    source = value
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
    return _Folded(b.reshape(value, split), axes, source, folds)


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
    kernel = _rearranged_kernel(b, rhs, k)
    if kernel is None:
        kernel = b.join_slices(rhs, k.axes, k.windows, k.axis, k.blocks, k.pads)
    return _window(b, lhs, kernel, group.conv, acc)


class _PhaseAxis(NamedTuple):
    """A kernel axis whose phases are `n` consecutive taps (from `first`, in `order` +1 or -1)
    of each of `length` runs of `period` taps."""

    first: int
    n: int
    period: int
    length: int
    order: int


def _phase_axes(k: Slices) -> list[Window | _PhaseAxis] | None:
    """Per kernel axis of `k`, its one slice window, or the phases it reads as a grid (every
    list of windows the product of the axes' windows, row-major); None if it is no such grid."""
    per_axis = [list(dict.fromkeys(combo[i] for combo in k.windows)) for i in range(len(k.axes))]
    if list(itertools.product(*per_axis)) != list(k.windows):
        return None
    found: list[Window | _PhaseAxis] = []
    for windows in per_axis:
        if len(windows) == 1:
            found.append(windows[0])
            continue
        length = windows[0][2]
        period = len(windows) if length == 1 else windows[0][1]
        if any(w[2] != length or (length > 1 and w[1] != period) for w in windows):
            return None
        first = min(w[0] for w in windows)
        offsets = [w[0] - first for w in windows]
        ascending = list(range(len(windows)))
        if offsets not in (ascending, ascending[::-1]) or len(windows) > period:
            return None
        order = 1 if offsets == ascending else -1
        found.append(_PhaseAxis(first, len(windows), period, length, order))
    return found


def _rearranged_kernel(b: Builder, rhs: Ref, k: Slices) -> Ref | None:
    """The joined phase kernel of `k` as one rearrangement of the kernel (its taps cropped or
    zero-extended to whole periods, split into (runs, period), the phases reversed where they
    read taps backwards and moved into the output features) when that is fewer ops than a
    slice per phase and a concatenate; None otherwise. Same tensor, same taps: a kernel that is
    an argument is rearranged on every call."""
    shape = b.shape(rhs)
    if DYNAMIC in shape or k.pads is not None and any(any(p) for c in k.pads for p in c):
        return None
    found = _phase_axes(k)
    if found is None:
        return None
    phases = [(a, f) for a, f in zip(k.axes, found, strict=True) if isinstance(f, _PhaseAxis)]
    if not phases:
        return None
    rank = len(shape)
    start, limit, strides, high = [0] * rank, list(shape), [1] * rank, [0] * rank
    for axis, f in zip(k.axes, found, strict=True):
        if isinstance(f, _PhaseAxis):
            end = f.first + f.length * f.period
            start[axis], limit[axis] = f.first, min(end, shape[axis])
            high[axis] = end - limit[axis]
        else:
            lo, step, n = f
            start[axis], limit[axis], strides[axis] = lo, lo + (n - 1) * step + 1, step
    crop = start != [0] * rank or limit != list(shape) or strides != [1] * rank
    split = [a for a, f in phases if f.length > 1]
    cut = [a for a, f in phases if f.n < f.period]
    flips = [a for a, f in phases if f.order < 0]
    ops = crop + any(high) + bool(split or k.blocks > 1) + bool(cut) + bool(flips) + 2
    slices = sum(not _whole(shape, k.axes, w) for w in k.windows) + 1
    if k.blocks > 1:
        slices += len(k.windows) + 1
    if ops >= slices:
        return None
    value = b.slice(rhs, start, limit, strides) if crop else rhs
    if any(high):
        value = b.pad(value, [0] * rank, high)
    # the axes after the split: a phase axis of several runs becomes (runs, period)
    parts = {a: [f.length, f.period] for a, f in phases if f.length > 1}
    out_feature = b.shape(value)[k.axis]
    if k.blocks > 1:
        parts[k.axis] = [k.blocks, out_feature // k.blocks]
    split_shape: list[int] = []
    index: dict[int, list[int]] = {}
    for axis, extent in enumerate(b.shape(value)):
        sizes = parts.get(axis, [extent])
        index[axis] = list(range(len(split_shape), len(split_shape) + len(sizes)))
        split_shape += sizes
    value = b.reshape(value, split_shape)
    period_axis = {a: index[a][-1] for a, _ in phases}
    if cut:
        lo, hi = [0] * len(split_shape), list(split_shape)
        for a, f in phases:
            hi[period_axis[a]] = f.n
        value = b.slice(value, lo, hi)
    if flips:
        value = b.reverse(value, [period_axis[a] for a in flips])
    order: list[int] = []
    merged: list[int] = []
    for axis in range(rank):
        if axis == k.axis:
            feature = index[axis]
            order += [*feature[:-1], *(period_axis[a] for a, _ in phases), feature[-1]]
            merged.append(out_feature * math.prod(f.n for _, f in phases))
        elif axis in period_axis:
            runs = index[axis][:-1]  # none when the axis is its own period axis (one run)
            order += runs
            merged.append(split_shape[runs[0]] if runs else 1)
        else:
            order.append(index[axis][0])
            merged.append(split_shape[index[axis][0]])
    return b.permute_reshape(value, order, merged)


def _whole(shape: tuple[int, ...], axes: tuple[int, ...], windows: tuple[Window, ...]) -> bool:
    return all(w == (0, 1, shape[a]) for a, w in zip(axes, windows, strict=True))


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
