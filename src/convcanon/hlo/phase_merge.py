"""Phase merging: the fewest partial convs the exact phase algebra allows.

Stride phases whose sub-kernels have the same extents read lhs slices of the same shape, so
their sum is ONE conv over those slices concatenated on the input-feature dim, with the kernel
slices concatenated on the kernel's input-feature dim in the same order: the sum happens in the
conv's reduction, at the same multiply-adds. A dim's phases have at most two tap counts, and one
when the kernel extent divides by the tap step (a 16x16/16 patchify conv is one conv).

Output phases of a lhs-dilated conv that read the same input window with the same number of
taps and outputs are the same conv up to the kernel: they merge on the output-feature dim, and
the phases are put in place by interleaving (depth-to-space), never by adding zeros.

`pad-kernel` also zero-extends a strided dim's kernel to a multiple of its tap step (and pads
the lhs by the extra window), so that all its phases merge, while the multiply-adds stay within
`max-mac-ratio` of the floor.

Everything here is planning on integers: the counts the gate and `explain` need come from the
same functions the rewrite uses.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Literal

from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.phase_plan import (
    DimPlan,
    LhsDimPlan,
    LhsPhase,
    Phase,
    lhs_dilation_plans,
    stride_phase_count,
    tap_step,
    uses_polyphase,
)
from convcanon.records import NamedTuple

MergeMode = Literal["exact", "pad-kernel", "none"]


def mergeable(p: ConvParams) -> bool:
    """Batch groups split the output features in blocks that concatenated partials would mix."""
    return p.batch_group_count == 1


def joins_inputs(p: ConvParams) -> bool:
    """Whether stride phases may be joined on the input features (merged, or folded into them):
    `mergeable`, and not on a dynamic feature extent (a kernel gradient's contracted batch),
    whose multiple no value of the rewrite holds. Each phase then is its own conv over that
    extent, at the same multiply-adds."""
    return mergeable(p) and not p.dynamic_feature


# -- stride phases --------------------------------------------------------------------------------


def _dims(p: ConvParams) -> zip[tuple[int, int, int]]:
    """(kernel, rhs dilation, stride) per spatial dim."""
    return zip(p.kernel_spatial, p.rhs_dilation, p.strides, strict=True)


def tap_groups(plan: DimPlan) -> tuple[tuple[Phase, ...], ...]:
    """The stride phases of one dim grouped by tap count, in phase order."""
    groups: dict[int, list[Phase]] = {}
    for phase in plan.phases:
        groups.setdefault(phase.taps, []).append(phase)
    return tuple(tuple(g) for g in groups.values())


def distinct_tap_counts(kernel: int, dilation: int, stride: int) -> int:
    """How many tap counts the stride phases of one dim have: K taps fall in min(K, t) classes
    of floor(K/t) or ceil(K/t) taps."""
    step = tap_step(dilation, stride)
    return 1 if kernel <= step or kernel % step == 0 else 2


def tap_count_range(kernel: int, dilation: int, stride: int) -> tuple[int, int]:
    """The fewest and most taps of one dim's stride phases: K taps in min(K, t) classes of
    floor(K/t) or ceil(K/t) taps (a unit-stride dim is one phase of K taps)."""
    step = tap_step(dilation, stride)
    return (1, 1) if kernel <= step else (kernel // step, -(-kernel // step))


def has_line_phase(p: ConvParams) -> bool:
    """Whether a stride phase of `p` has taps in one spatial dim only while `p`'s kernel has
    them in several (a 3x3/2 conv's 2x1 and 1x2 phases; a 7x7/2 conv has none)."""
    counts = [tap_count_range(*dim) for dim in _dims(p)]
    wide = [i for i, (_, most) in enumerate(counts) if most > 1]
    return len(wide) > 1 and any(all(counts[j][0] == 1 for j in wide if j != i) for i in wide)


def folds_dim(kernel: int, dilation: int, stride: int) -> bool:
    """Whether a dim's stride phases fold as a space-to-depth: unit stride, or unit rhs dilation
    and a kernel at least as wide as the stride, so every residue mod s is a phase and the fold
    pads less than one stride (a window narrower than its stride would fold mostly unread
    elements)."""
    return stride == 1 or (dilation == 1 and kernel >= stride)


def merges_phases(p: ConvParams) -> bool:
    """Whether some strided dim has a tap-count group of two or more phases (a 4x4/2 or 16/16
    conv: its phases join on the features; a 3x3/2 conv's do not)."""
    return any(
        distinct_tap_counts(k, d, s) < stride_phase_count(k, d, s)
        for k, d, s in zip(p.kernel_spatial, p.rhs_dilation, p.strides, strict=True)
        if s > 1
    )


def kernel_extension(p: ConvParams, max_mac_ratio: float) -> tuple[int, ...]:
    """Zero taps to append per spatial dim so that every phase of that dim has the same taps.

    Dims are extended cheapest first while the product of K'/K stays within `max_mac_ratio`;
    a dim already uniform gets 0."""
    needs: list[tuple[float, int, int]] = []
    for axis, (k, d, s) in enumerate(_dims(p)):
        step = tap_step(d, s)
        if s > 1 and k > step and k % step:
            extended = -(-k // step) * step
            needs.append((extended / k, axis, extended - k))
    extra = [0] * p.num_spatial
    ratio = 1.0
    for factor, axis, taps in sorted(needs):
        if ratio * factor <= max_mac_ratio + 1e-12:
            ratio *= factor
            extra[axis] = taps
    return tuple(extra)


def zero_tap_pads(before: int, after: int, reversed_: bool) -> tuple[int, int]:
    """Zero taps before and after a kernel's taps as (low, high) pads of its elements: in a
    reversed dim tap k reads element K-1-k, so they swap sides."""
    return (after, before) if reversed_ else (before, after)


def extend_kernel(p: ConvParams, extra: tuple[int, ...]) -> ConvParams:
    """`p` with `extra` zero taps appended per dim and the lhs padded high by the window they add
    (d * extra), so the output extents are unchanged."""
    if not any(extra):
        return p
    rhs = list(p.rhs_shape)
    for axis, e in zip(p.dims.rhs_spatial, extra, strict=True):
        rhs[axis] += e
    padding = tuple(
        (lo, hi + d * e) for (lo, hi), d, e in zip(p.padding, p.rhs_dilation, extra, strict=True)
    )
    return p._replace(rhs_shape=tuple(rhs), padding=padding)


def stride_convs(p: ConvParams, mode: MergeMode, max_mac_ratio: float) -> int:
    """Convs the stride rewrite of `p` emits (1 without strides)."""
    if mode == "none" or not joins_inputs(p):
        return math.prod(stride_phase_count(*dim) for dim in _dims(p))
    if mode == "pad-kernel":
        p = extend_kernel(p, kernel_extension(p, max_mac_ratio))
    return math.prod(distinct_tap_counts(*dim) for dim in _dims(p))


def unmerged_stride_convs(p: ConvParams) -> int:
    return stride_convs(p, "none", 1.0)


# -- lhs-dilation (output) phases -----------------------------------------------------------------


class LhsGroup(NamedTuple):
    """Output phase combos (one phase per dim) computed by one conv, merged on the output-feature
    dim in this order."""

    combos: tuple[tuple[LhsPhase, ...], ...]


def _window_key(ph: LhsPhase) -> tuple[int, int, int]:
    return (ph.pad_low, ph.taps, ph.outputs)


def lhs_dim_groups(plan: LhsDimPlan, widen: bool = False) -> tuple[tuple[LhsPhase, ...], ...]:
    """The output phases of one dim grouped by the window they read (start, taps, outputs);
    with `widen`, by their outputs alone, each phase's kernel zero-extended to the group's
    union window (`widened_phases`)."""
    groups: dict[tuple[int, ...], list[LhsPhase]] = {}
    for ph in widened_phases(plan) if widen else plan.phases:
        groups.setdefault(_window_key(ph), []).append(ph)
    return tuple(tuple(g) for g in groups.values())


@lru_cache(maxsize=4096)
def widened_phases(plan: LhsDimPlan) -> tuple[LhsPhase, ...]:
    """The phases of a dim with each kernel zero-extended to the union of the windows of the
    phases with as many outputs: output m of a phase reads undilated positions m*s - pad_low +
    i*d, so phases whose windows start and end on the same d-lattice read one window, the
    taps outside their own being zeros (as many multiply-adds more)."""
    d = plan.rhs_dilation
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for ph in plan.phases:
        first, last = -ph.pad_low, (ph.taps - 1) * d - ph.pad_low
        key = (ph.outputs, first % d)
        lo, hi = spans.get(key, (first, last))
        spans[key] = (min(lo, first), max(hi, last))
    out = []
    for ph in plan.phases:
        first, last = -ph.pad_low, (ph.taps - 1) * d - ph.pad_low
        lo, hi = spans[(ph.outputs, first % d)]  # on the lattice of `first`, as `last` is
        before, after = (first - lo) // d, (hi - last) // d
        out.append(
            ph._replace(
                taps=ph.taps + before + after,
                pad_low=ph.pad_low + before * d,
                pad_high=ph.pad_high + after * d,
                zeros_before=before,
                zeros_after=after,
            )
        )
    return tuple(out)


def _dim_macs(phases: tuple[LhsPhase, ...]) -> int:
    return sum(ph.outputs * ph.taps for ph in phases)


@lru_cache(maxsize=4096)
def lhs_widening(plans: tuple[LhsDimPlan, ...], max_mac_ratio: float) -> tuple[bool, ...]:
    """Which dims widen their output phases' windows (merge-phases=pad-kernel): those where it
    merges phases, cheapest first, while the product of the dims' multiply-add factors stays
    within `max_mac_ratio`. Only phase convs of unit stride (every transposed conv) widen."""
    if any(plan.stride != 1 for plan in plans):
        return (False,) * len(plans)
    needs: list[tuple[float, int]] = []
    for axis, plan in enumerate(plans):
        wide = widened_phases(plan)
        if len(lhs_dim_groups(plan, True)) < len(lhs_dim_groups(plan)):
            needs.append((_dim_macs(wide) / _dim_macs(plan.phases), axis))
    widen = [False] * len(plans)
    ratio = 1.0
    for factor, axis in sorted(needs):
        if ratio * factor <= max_mac_ratio + 1e-12:
            ratio *= factor
            widen[axis] = True
    return tuple(widen)


def _widening(
    plans: tuple[LhsDimPlan, ...], mode: MergeMode, max_mac_ratio: float
) -> tuple[bool, ...]:
    return lhs_widening(plans, max_mac_ratio) if mode == "pad-kernel" else (False,) * len(plans)


@lru_cache(maxsize=4096)
def lhs_groups(p: ConvParams, mode: MergeMode, max_mac_ratio: float = 2.0) -> tuple[LhsGroup, ...]:
    """The convs of the output phases: one per phase combo (`none`), or per combo of per-dim
    window groups (windows widened within `max_mac_ratio` in `pad-kernel`)."""
    plans = lhs_dilation_plans(p)
    if mode == "none" or not mergeable(p):
        return tuple(LhsGroup((c,)) for c in itertools.product(*(pl.phases for pl in plans)))
    widen = _widening(plans, mode, max_mac_ratio)
    per_dim = [lhs_dim_groups(pl, w) for pl, w in zip(plans, widen, strict=True)]
    return tuple(
        LhsGroup(tuple(itertools.product(*choice))) for choice in itertools.product(*per_dim)
    )


@lru_cache(maxsize=4096)
def lhs_group_params(p: ConvParams, plans: tuple[LhsDimPlan, ...], group: LhsGroup) -> ConvParams:
    """The undilated conv that computes a group's phases (one per dim for each combo): the
    first combo's window, and the output features of every combo."""
    dims = p.dims
    first = group.combos[0]
    merged = len(group.combos)
    rhs, out = list(p.rhs_shape), list(p.result_shape)
    for axis, ph in zip(dims.rhs_spatial, first, strict=True):
        rhs[axis] = ph.taps
    for axis, ph in zip(dims.out_spatial, first, strict=True):
        out[axis] = ph.outputs
    rhs[dims.rhs_out_feature] *= merged
    out[dims.out_feature] *= merged
    return p._replace(
        rhs_shape=tuple(rhs),
        result_shape=tuple(out),
        strides=tuple(plan.stride for plan in plans),
        padding=tuple((ph.pad_low, ph.pad_high) for ph in first),
        lhs_dilation=(1,) * p.num_spatial,
        rhs_dilation=tuple(plan.rhs_dilation for plan in plans),
    )


def is_depth_to_space(
    p: ConvParams, plans: tuple[LhsDimPlan, ...], groups: tuple[LhsGroup, ...]
) -> bool:
    """Whether one conv holds every output phase, in row-major phase order, each with exactly
    O/P outputs: then a reshape and a transpose put them in place."""
    if len(groups) != 1:
        return False
    for plan, extent in zip(plans, p.out_spatial, strict=True):
        if len(plan.phases) != plan.period or extent % plan.period:
            return False
        if [ph.q for ph in plan.phases] != list(range(plan.period)):
            return False
    return True


# -- whole convs ----------------------------------------------------------------------------------


class MergePlan(NamedTuple):
    """How many convs one conv's rewrite emits, before and after merging."""

    convs: int  # emitted
    unmerged: int  # one per phase (merge-phases=none)
    summed: int  # most convs summed into one output element (> 1: partial sums round)
    slices: int = 0  # phase slices joined one by one (not folded): the rewrite's op count


# Joined phase slices are ops of their own; a conv whose merged form would need more is refused
# (folded phases cost a few ops whatever their number).
MAX_PHASE_SLICES = 4096
# Planning visits each tap of a dim once (its phase classes); a declared kernel extent can be a
# billion in a few bytes of text, and no real conv comes near this.
MAX_KERNEL_TAPS = 1 << 20


def within_tap_limit(p: ConvParams) -> bool:
    return all(k <= MAX_KERNEL_TAPS for k in p.kernel_spatial)


def foldable(p: ConvParams) -> bool:
    """Whether the merged stride phases of `p` are read from one space-to-depth fold of lhs and
    kernel: every dim folds and some dim is strided. Each phase group is then a slice of the
    folded features, not a strided slice of the lhs: one copy of the lhs feeds every partial
    conv, in the layout the conv reads (with groups of unequal tap counts too, e.g. 3/2)."""
    return all(folds_dim(*dim) for dim in _dims(p)) and any(s > 1 for s in p.strides)


def fold_padding(p: ConvParams) -> ConvParams:
    """`p` with each strided dim's high padding set so the padded extent is s * L, L the longest
    phase slice (O + ceil(K/s) - 1): the fold then reshapes the padded lhs as it is, with no
    crop or second pad after the explicit one. The output extents do not change."""
    padding = list(p.padding)
    for i, (h, k, s, o) in enumerate(
        zip(p.padded_spatial, p.kernel_spatial, p.strides, p.out_spatial, strict=True)
    ):
        if s > 1:
            lo, hi = padding[i]
            padding[i] = (lo, hi + s * (o + -(-k // s) - 1) - h)
    return p._replace(padding=tuple(padding))


def _group_dim_counts(plan: LhsDimPlan, mode: MergeMode, widen: bool, joins: bool) -> list[int]:
    """Per window group of one dim, the stride convs of its group conv in that dim (`joins`:
    its stride phases merge, `joins_inputs`)."""
    if mode == "none":
        return [stride_phase_count(ph.taps, plan.rhs_dilation, plan.stride) for ph in plan.phases]
    count = distinct_tap_counts if joins else stride_phase_count
    return [count(g[0].taps, plan.rhs_dilation, plan.stride) for g in lhs_dim_groups(plan, widen)]


_ENUMERATE_GROUPS = 4096  # beyond this many group convs, max-phases refuses the conv anyway


def merge_plan(p: ConvParams, polyphase: bool, mode: MergeMode, max_mac_ratio: float) -> MergePlan:
    """The convs the rewrite of an accepted conv emits, counted per dim (never by enumerating
    phase combos, which can be millions)."""
    if not mergeable(p):
        mode = "none"
    if uses_polyphase(p, polyphase):
        plans = lhs_dilation_plans(p)
        unmerged = math.prod(plan.partial_convs for plan in plans)
        widen = _widening(plans, mode, max_mac_ratio)
        joins = joins_inputs(p)
        per_dim = [
            _group_dim_counts(pl, mode, w, joins) for pl, w in zip(plans, widen, strict=True)
        ]
        groups = math.prod(len(c) for c in per_dim)
        # phase slices joined one by one: only the kernel's, on the output features, when the
        # stride phases are folded or not joined at all
        folds = not joins or all(
            folds_dim(ph.taps, pl.rhs_dilation, pl.stride) for pl in plans for ph in pl.phases
        )
        combos = math.prod(len(pl.phases) for pl in plans)
        slices = 0 if mode == "none" else combos if folds else unmerged
        if mode != "pad-kernel" or groups > _ENUMERATE_GROUPS:
            convs = math.prod(sum(c) for c in per_dim)
            summed = math.prod(max(c, default=0) for c in per_dim)
            return MergePlan(convs, unmerged, summed, slices)
        counts = [
            stride_convs(lhs_group_params(p, plans, g), mode, max_mac_ratio)
            for g in lhs_groups(p, mode, max_mac_ratio)
        ]
        return MergePlan(sum(counts), unmerged, max(counts, default=0), slices)
    convs = stride_convs(p, mode, max_mac_ratio)
    unmerged = unmerged_stride_convs(p)
    folds = all(folds_dim(*dim) for dim in _dims(p))
    slices = 0 if mode == "none" or folds or not joins_inputs(p) else unmerged
    return MergePlan(convs, unmerged, convs, slices)
