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


Assembly = Literal["sum", "depth-to-space", "interleave"]


class PhasePlan(NamedTuple):
    """A lhs-dilated conv as output phases, each an ordinary conv of the undilated lhs. An
    interleave puts the phases in place one dim of `stages` at a time; a phase value is built
    where it is made only if that is how it is read: padded by the next stage (a phase `short`
    there) or as the result (no stage later). Otherwise that stage's reshape reads the value
    behind it."""

    params: ConvParams
    dims: tuple[LhsDimPlan, ...]
    groups: tuple[PhaseGroup, ...]
    assembly: Assembly
    stages: tuple[int, ...]  # the spatial dims with a period, from the last
    # per spatial dim, the phases q with one output fewer than the others (ceil((O-q)/P) <
    # ceil(O/P)): the interleave pads each with a zero at its end
    short: tuple[frozenset[int], ...]


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
    if mode == "none":
        assembly: Assembly = "sum"
    elif is_depth_to_space(p, plans, groups):
        assembly = "depth-to-space"
    else:
        assembly = "interleave"
    return PhasePlan(
        params=p,
        dims=plans,
        groups=tuple(planned),
        assembly=assembly,
        stages=tuple(i for i in reversed(range(p.num_spatial)) if plans[i].period != 1),
        short=tuple(
            frozenset(ph.q for ph in d.phases if ph.outputs < -(-extent // d.period))
            for d, extent in zip(plans, p.out_spatial, strict=True)
        ),
    )


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
