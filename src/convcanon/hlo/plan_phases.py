"""The output phases of a lhs-dilated conv: each an undilated conv of the lhs, grouped into
convs by the window they read, and put in place by a sum, one depth-to-space or an interleave.
Whether a group's kernel is its phases' slices joined or one rearrangement of the kernel is
decided here, by which is fewer ops."""

from __future__ import annotations

import itertools
import math
from typing import Literal

from convcanon.hlo.config import ConvConfig
from convcanon.hlo.conv_params import DYNAMIC, ConvParams
from convcanon.hlo.phase_merge import (
    LhsGroup,
    is_depth_to_space,
    lhs_group_params,
    lhs_groups,
    zero_tap_pads,
)
from convcanon.hlo.phase_plan import LhsDimPlan, LhsPhase, lhs_dilation_plans
from convcanon.hlo.plan_layout import Permutation, moves_data
from convcanon.hlo.plan_window import Pad, Slices, Window, WindowPlan, plan_window
from convcanon.records import NamedTuple


class Rearrangement(NamedTuple):
    """A phase group's kernel (its phases' slices joined on the output features) built as one
    rearrangement of the kernel instead: cropped (`crop`: start, limit, strides) or
    zero-extended at the end (`high`) to whole periods, split (`split`: runs and period of each
    phase axis, groups of the output features), cut to the taps of each period (`cut`: the
    split's limits), the phases that read taps backwards reversed (`flips`), and the phase
    axes moved into the output features (`order`, then reshaped to `merged`). One that starts
    by transposing the kernel (nothing to crop, extend, split, cut or flip first) absorbs the
    kernel's channels-last `move`, if any: one transpose of the conv's own kernel does both."""

    crop: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None
    high: tuple[int, ...] | None
    split: tuple[int, ...]
    cut: tuple[int, ...] | None
    flips: tuple[int, ...]
    order: tuple[int, ...]
    merged: tuple[int, ...]
    move: Permutation | None


class PhaseGroup(NamedTuple):
    """Output phases computed by one conv: its kernel (the phases' kernel slices joined on the
    kernel's output features, or one rearrangement of the kernel where that is fewer ops), the
    phase conv's own window plan, each phase's q per dim in merged order, and
    (merge-phases=none) the pad that places its outputs."""

    kernel: Slices | Rearrangement
    conv: WindowPlan
    phases: tuple[tuple[int, ...], ...]
    placement: Pad | None


Assembly = Literal["zeros", "sum", "depth-to-space", "interleave"]
Key = tuple[int, ...]  # a phase value's q per spatial dim (0 in the dims already interleaved)


class PhaseCut(NamedTuple):
    """How the interleave reads one output phase from its group's conv result, whose feature
    axis holds (feature groups, phases, features): a slice of that axis, or with several
    feature groups a reshape to `split` (the three apart) and a slice of its phase axis, whose
    reshape to the phase's shape (`reshape`) is built where it is cut only if it is read so
    (padded by the first stage, or the result); the first stage's reshape otherwise reads the
    slice."""

    split: tuple[int, ...] | None
    start: tuple[int, ...]
    limit: tuple[int, ...]
    reshape: tuple[int, ...] | None


class ZeroBlock(NamedTuple):
    """A run of phases without taps in an interleave row: one block of zeros of `shape` (the
    run's length on the row's new axis)."""

    shape: tuple[int, ...]


class PhasePart(NamedTuple):
    """The phase value `key` in an interleave row: padded with zeros at the end of the stage's
    axis by `high` (a phase with one output fewer than the others), reshaped to `column` (a unit
    axis after the stage's axis; None: the row's only part, read as it is)."""

    key: Key
    high: tuple[int, ...] | None
    column: tuple[int, ...] | None


class InterleaveRow(NamedTuple):
    """The phase values of one stage whose keys differ only in the stage's dim, put in place:
    their parts, one per slot and one per run of slots without taps, concatenated on the axis
    after the stage's; that reshaped to `reshape` where it is read so (cropped, padded by the
    next stage, or the result; else the next stage's reshape reads the concatenation), and
    cropped to `crop` where the slots hold more outputs than the extent. It is the value `key`
    of the next stage."""

    key: Key
    parts: tuple[ZeroBlock | PhasePart, ...]
    reshape: tuple[int, ...] | None
    crop: tuple[int, ...] | None


class InterleaveStage(NamedTuple):
    """The interleave of one spatial dim (on the result's `axis`): phase q's outputs m go to
    q + P*m."""

    axis: int
    rows: tuple[InterleaveRow, ...]


class DepthToSpace(NamedTuple):
    """The one conv that holds every output phase (features (G, P_1, ..., P_n, C) in row-major
    phase order, spatial extents O/P) put in place: its result split to `split` (the groups
    axis only where there are several), permuted by `order` (each P_i behind its spatial dim,
    G before C) and reshaped to the conv's result."""

    split: tuple[int, ...]
    order: tuple[int, ...]


class PhasePlan(NamedTuple):
    """A lhs-dilated conv as output phases, each an ordinary conv of the undilated lhs, and how
    they are put in place: zeros (no phase has taps), a sum, one depth-to-space
    (`depth_to_space`), or an interleave, which cuts each phase from its group's conv result
    (`cuts`: per group, per phase; None for a group's one phase, its conv result) and puts
    them in place one dim of `stages` at a time, from the last dim with a period."""

    params: ConvParams
    dims: tuple[LhsDimPlan, ...]
    groups: tuple[PhaseGroup, ...]
    assembly: Assembly
    depth_to_space: DepthToSpace | None
    cuts: tuple[tuple[PhaseCut | None, ...], ...]
    stages: tuple[InterleaveStage, ...]


# -- output phases ------------------------------------------------------------------------------


def placement(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], combo: tuple[LhsPhase, ...]
) -> Pad | None:
    """The pad that puts a phase's outputs at q, q+P, ... of the result, or None if the phase
    already is the whole result."""
    rank = len(p.result_shape)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    for axis, plan, ph, extent in zip(p.dims.out_spatial, plans, combo, p.out_spatial, strict=True):
        last = ph.q + (ph.outputs - 1) * plan.period
        low[axis], high[axis], interior[axis] = ph.q, extent - 1 - last, plan.period - 1
    if not any(low) and not any(high) and not any(interior):
        return None
    return Pad(tuple(low), tuple(high), tuple(interior))


def plan_phases(
    p: ConvParams, config: ConvConfig, source: ConvParams, kernel_move: Permutation | None
) -> PhasePlan:
    """The output phases of `p`, grouped into convs (merged on the output features unless
    merge-phases=none), each an undilated conv that goes through pad and stride; a phase conv
    whose kernel is a line cut from `p`'s is one conv per tap where the policy splits lines.
    `kernel_move`: the channels-last move that made `p`'s kernel from `source`'s, if any."""
    plans = lhs_dilation_plans(p)
    mode = config.merge
    ratio = config.options.max_mac_ratio
    groups = lhs_groups(p, mode, ratio) if mode != "none" else lhs_groups(p, mode)
    planned = []
    for group in groups:
        q = lhs_group_params(p, plans, group)
        slices = _phase_kernel(p, group)
        kernel = rearranged_kernel(p.rhs_shape, slices, kernel_move) or slices
        conv = plan_window(q, config, source, True)
        where = placement(p, plans, group.combos[0]) if mode == "none" else None
        qs = tuple(tuple(ph.q for ph in combo) for combo in group.combos)
        planned.append(PhaseGroup(kernel=kernel, conv=conv, phases=qs, placement=where))
    if not planned:
        assembly: Assembly = "zeros"
    elif mode == "none":
        assembly = "sum"
    elif is_depth_to_space(p, plans, groups):
        assembly = "depth-to-space"
    else:
        assembly = "interleave"
    interleaved = assembly == "interleave"
    return PhasePlan(
        params=p,
        dims=plans,
        groups=tuple(planned),
        assembly=assembly,
        depth_to_space=_depth_to_space(p, plans, planned[0])
        if assembly == "depth-to-space"
        else None,
        cuts=tuple(_phase_cuts(p, plans, g) for g in planned) if interleaved else (),
        stages=_stages(p, plans, [k for g in planned for k in g.phases]) if interleaved else (),
    )


def _depth_to_space(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], group: PhaseGroup
) -> DepthToSpace:
    """How the result of `group`, which holds every output phase, is put in place."""
    dims = p.dims
    shape = group.conv.params.result_shape
    groups = p.feature_group_count
    periods = [d.period for d in plans]
    per = shape[dims.out_feature] // (groups * math.prod(periods))
    feature_parts = ([groups] if groups > 1 else []) + periods + [per]
    split = split_axis(shape, dims.out_feature, feature_parts)

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
    return DepthToSpace(split=split, order=tuple(order))


# -- the interleave ------------------------------------------------------------------------------


def split_axis(shape: tuple[int, ...], axis: int, parts: list[int]) -> tuple[int, ...]:
    """`shape` with `axis` split into `parts`."""
    return (*shape[:axis], *parts, *shape[axis + 1 :])


def _stage_dims(plans: tuple[LhsDimPlan, ...]) -> tuple[int, ...]:
    """The spatial dims the interleave puts in place, one stage each: those with a period,
    from the last."""
    return tuple(i for i in reversed(range(len(plans))) if plans[i].period != 1)


def _outputs(p: ConvParams, plans: tuple[LhsDimPlan, ...], i: int, q: int) -> int:
    """Outputs of phase q in spatial dim i: ceil((O - q) / P)."""
    return -(-(p.out_spatial[i] - q) // plans[i].period)


def _value_shape(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], key: Key, placed: tuple[int, ...]
) -> tuple[int, ...]:
    """The shape of the phase value `key` once the dims `placed` are interleaved: the result's,
    with the phase's outputs in every other spatial dim."""
    shape = list(p.result_shape)
    for i, (axis, q) in enumerate(zip(p.dims.out_spatial, key, strict=True)):
        if i not in placed:
            shape[axis] = _outputs(p, plans, i, q)
    return tuple(shape)


def _read_as_is(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], later: tuple[int, ...], key: Key
) -> bool:
    """Whether the phase value `key` is read as it is where it is made: padded by the next
    stage (one output fewer than phase 0 there), or the result (no stage later)."""
    if not later:
        return True
    return _outputs(p, plans, later[0], key[later[0]]) < _outputs(p, plans, later[0], 0)


def _phase_cuts(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], group: PhaseGroup
) -> tuple[PhaseCut | None, ...]:
    """How each phase of `group` is cut from its conv's result (see `PhaseCut`)."""
    count = len(group.phases)
    if count == 1:
        return (None,)
    result, axis = group.conv.params.result_shape, p.dims.out_feature
    groups, per = p.feature_group_count, result[axis] // count
    shape = split_axis(result, axis, [per])  # each phase's
    cuts: list[PhaseCut | None] = []
    for index, key in enumerate(group.phases):
        if groups == 1:
            start, limit = [0] * len(result), list(result)
            start[axis], limit[axis] = index * per, (index + 1) * per
            cuts.append(PhaseCut(split=None, start=tuple(start), limit=tuple(limit), reshape=None))
            continue
        split = split_axis(result, axis, [groups, count, per // groups])
        start, limit = [0] * len(split), list(split)
        start[axis + 1], limit[axis + 1] = index, index + 1
        built = _read_as_is(p, plans, _stage_dims(plans), key)
        cuts.append(
            PhaseCut(
                split=split,
                start=tuple(start),
                limit=tuple(limit),
                reshape=shape if built else None,
            )
        )
    return tuple(cuts)


def _stages(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], keys: list[Key]
) -> tuple[InterleaveStage, ...]:
    """The interleave's stages: in each, the values whose keys differ only in the stage's dim
    form a row, in the order of their first value (the previous stage's rows, or the phases in
    group order)."""
    order = _stage_dims(plans)
    stages = []
    for n, i in enumerate(order):
        rows: dict[Key, list[int]] = {}
        for key in keys:
            rows.setdefault(key[:i] + (0,) + key[i + 1 :], []).append(key[i])
        planned = tuple(_row(p, plans, order, n, key, qs) for key, qs in rows.items())
        stages.append(InterleaveStage(axis=p.dims.out_spatial[i], rows=planned))
        keys = list(rows)
    return tuple(stages)


def _row(
    p: ConvParams,
    plans: tuple[LhsDimPlan, ...],
    order: tuple[int, ...],
    n: int,
    key: Key,
    present: list[int],
) -> InterleaveRow:
    """The row `key` of stage n (of the dims `order`), whose phases `present` have values:
    ceil(O/P) outputs per slot (the shorter phases padded by a zero), min(P, O) slots (a period
    longer than the output has one output per phase, and only the first O phases have one),
    each run of slots without taps one block of zeros."""
    i, placed, later = order[n], order[:n], order[n + 1 :]
    period, extent, axis = plans[i].period, p.out_spatial[i], p.dims.out_spatial[i]
    each, slots = -(-extent // period), min(period, extent)
    ref = _value_shape(p, plans, key, placed)  # key[i] is 0: `each` outputs on `axis`
    column = split_axis(ref, axis, [each, 1])
    runs = _gaps(sorted(q for q in present if q < slots), slots)
    single = sum((stop > start) + (stop < slots) for start, stop in runs) == 1
    parts: list[ZeroBlock | PhasePart] = []
    for start, stop in runs:
        if stop > start:  # phases without taps: one block of zeros for the whole run
            parts.append(ZeroBlock(split_axis(ref, axis, [each, stop - start])))
        if stop < slots:
            phase = key[:i] + (stop,) + key[i + 1 :]
            short = each - _outputs(p, plans, i, stop)
            high = tuple(short if a == axis else 0 for a in range(len(ref))) if short else None
            parts.append(PhasePart(key=phase, high=high, column=None if single else column))
    joined = split_axis(ref, axis, [each * slots])
    crop = split_axis(ref, axis, [extent]) if each * slots > extent else None
    built = crop is not None or _read_as_is(p, plans, later, key)
    return InterleaveRow(key=key, parts=tuple(parts), reshape=joined if built else None, crop=crop)


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


def _phase_kernel(p: ConvParams, group: LhsGroup) -> Slices:
    return Slices(
        p.dims.rhs_spatial,
        tuple(tuple(ph.rhs_window for ph in combo) for combo in group.combos),
        p.dims.rhs_out_feature,
        p.feature_group_count,
        tuple(
            tuple(
                zero_tap_pads(ph.zeros_before, ph.zeros_after, reversed_)
                for ph, reversed_ in zip(combo, p.reversal, strict=True)
            )
            for combo in group.combos
        ),
    )


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


def rearranged_kernel(
    shape: tuple[int, ...], k: Slices, move: Permutation | None
) -> Rearrangement | None:
    """The joined phase kernel `k` of a kernel of `shape` as one rearrangement (its taps cropped
    or zero-extended to whole periods, split into (runs, period), the phases reversed where they
    read taps backwards and moved into the output features) when that is fewer ops than a
    slice per phase and a concatenate; None otherwise. Same tensor, same taps: a kernel that is
    an argument is rearranged on every call. One that starts by transposing the kernel absorbs
    the kernel's channels-last `move`."""
    if DYNAMIC in shape or k.pads is not None and any(any(p) for c in k.pads for p in c):
        return None
    found = _phase_axes(k)
    if found is None:
        return None
    phases = [(a, f) for a, f in zip(k.axes, found, strict=True) if isinstance(f, _PhaseAxis)]
    if not phases:
        return None
    start, limit, strides, high = _whole_periods(shape, k.axes, found)
    crop = start != [0] * len(shape) or limit != list(shape) or strides != [1] * len(shape)
    if not _fewer_ops(shape, k, phases, crop, any(high)):
        return None
    bounds = zip(start, limit, strides, high, strict=True)
    extents = [-(-(hi - lo) // step) + h for lo, hi, step, h in bounds]
    found = _phase_axes_to_features(extents, k, phases)._replace(
        crop=(tuple(start), tuple(limit), tuple(strides)) if crop else None,
        high=tuple(high) if any(high) else None,
    )
    return found._replace(move=move if _transposes_first(found, shape) else None)


def _transposes_first(r: Rearrangement, shape: tuple[int, ...]) -> bool:
    """Whether `r` starts by transposing the kernel (of `shape`): nothing to crop, extend,
    split, cut or flip first."""
    plain = r.crop is None and r.high is None and r.cut is None and not r.flips
    return plain and r.split == shape and moves_data(shape, r.order)


def reads_kernel(plan: PhasePlan) -> bool:
    """Whether a phase group reads the kernel as the phase convs' `p` has it (by slices, or a
    rearrangement that absorbs no channels-last move of it)."""
    return any(
        not isinstance(g.kernel, Rearrangement) or g.kernel.move is None for g in plan.groups
    )


def reads_lhs(plan: PhasePlan) -> bool:
    """Whether the rewrite reads the lhs as the phase convs' `p` has it: every phase plan but
    an all-zero result of static shape (a dynamic one reads its size from that lhs)."""
    return plan.assembly != "zeros" or DYNAMIC in plan.params.result_shape


def _whole_periods(
    shape: tuple[int, ...], axes: tuple[int, ...], found: list[Window | _PhaseAxis]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """The kernel's crop (start, limit, strides) to the taps `found` reads, and the zeros to
    append (`high`) so that each phase axis holds whole periods."""
    rank = len(shape)
    start, limit, strides, high = [0] * rank, list(shape), [1] * rank, [0] * rank
    for axis, f in zip(axes, found, strict=True):
        if isinstance(f, _PhaseAxis):
            end = f.first + f.length * f.period
            start[axis], limit[axis] = f.first, min(end, shape[axis])
            high[axis] = end - limit[axis]
        else:
            lo, step, n = f
            start[axis], limit[axis], strides[axis] = lo, lo + (n - 1) * step + 1, step
    return start, limit, strides, high


def _fewer_ops(
    shape: tuple[int, ...],
    k: Slices,
    phases: list[tuple[int, _PhaseAxis]],
    crop: bool,
    extend: bool,
) -> bool:
    """Whether the rearrangement (crop, zero extension, split, cut, reverse, transpose and
    reshape) is fewer ops than the slices of `k` and their concatenate."""
    split = any(f.length > 1 for _, f in phases) or k.blocks > 1
    cut = any(f.n < f.period for _, f in phases)
    flips = any(f.order < 0 for _, f in phases)
    ops = crop + extend + split + cut + flips + 2
    slices = sum(not _whole(shape, k.axes, w) for w in k.windows) + 1
    if k.blocks > 1:
        slices += len(k.windows) + 1
    return ops < slices


def _split_axes(
    extents: list[int], k: Slices, phases: list[tuple[int, _PhaseAxis]]
) -> tuple[list[int], dict[int, list[int]]]:
    """The kernel's shape once each phase axis of several runs is split into (runs, period)
    and the output features into (blocks, features per block), and where each axis went."""
    parts = {a: [f.length, f.period] for a, f in phases if f.length > 1}
    if k.blocks > 1:
        parts[k.axis] = [k.blocks, extents[k.axis] // k.blocks]
    split: list[int] = []
    index: dict[int, list[int]] = {}
    for axis, extent in enumerate(extents):
        sizes = parts.get(axis, [extent])
        index[axis] = list(range(len(split), len(split) + len(sizes)))
        split += sizes
    return split, index


def _phase_axes_to_features(
    extents: list[int], k: Slices, phases: list[tuple[int, _PhaseAxis]]
) -> Rearrangement:
    """The rearrangement of a whole-period kernel (of `extents`, nothing to crop or extend):
    its split, the cut of each period to its phases, the phases read backwards reversed, and
    the permutation and shape that move each period axis into the output features (behind
    their blocks)."""
    split, index = _split_axes(extents, k, phases)
    period_axis = {a: index[a][-1] for a, _ in phases}
    limits = list(split)
    for a, f in phases:
        limits[period_axis[a]] = f.n
    order: list[int] = []
    merged: list[int] = []
    for axis in range(len(extents)):
        if axis == k.axis:
            feature = index[axis]
            order += [*feature[:-1], *(period_axis[a] for a, _ in phases), feature[-1]]
            merged.append(extents[axis] * math.prod(f.n for _, f in phases))
        elif axis in period_axis:
            runs = index[axis][:-1]  # none when the axis is its own period axis (one run)
            order += runs
            merged.append(split[runs[0]] if runs else 1)
        else:
            order.append(index[axis][0])
            merged.append(split[index[axis][0]])
    return Rearrangement(
        crop=None,
        high=None,
        split=tuple(split),
        cut=tuple(limits) if any(f.n < f.period for _, f in phases) else None,
        flips=tuple(period_axis[a] for a, f in phases if f.order < 0),
        order=tuple(order),
        merged=tuple(merged),
        move=None,
    )


def _whole(shape: tuple[int, ...], axes: tuple[int, ...], windows: tuple[Window, ...]) -> bool:
    return all(w == (0, 1, shape[a]) for a, w in zip(axes, windows, strict=True))
