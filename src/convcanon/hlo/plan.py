"""The rewrite plan of one conv configuration: a pure value, built before any op.

`plan_conv(p, options)` decides everything the rewrite of a conv with params `p` does:
the channels-last move, the explicit pad (or crop) of the lhs, each partial conv's lhs and
kernel source (a space-to-depth fold, strided slices or the operand itself) and its own final
`ConvParams`, and how the partials become the result (a sum, a depth-to-space, an interleave of
output phases, one wide `convert`). The emitter turns a plan into ops and decides nothing; the
gate, `explain`, the statistics and the remarks read it. Plans depend only on the conv's params,
the options and the engine policy, so the pass builds one per conv configuration.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

from convcanon.hlo.config import ConvConfig, resolve
from convcanon.hlo.conv_params import ConvParams, DimensionNumbers, bounded_pad, padded_extent
from convcanon.hlo.gate import ConvOptions, Decision, decide
from convcanon.hlo.phase_merge import (
    LhsGroup,
    extend_kernel,
    fold_padding,
    foldable,
    is_depth_to_space,
    joins_inputs,
    kernel_extension,
    lhs_group_params,
    lhs_groups,
    merges_phases,
    stride_convs,
    tap_groups,
    within_tap_limit,
    zero_tap_pads,
)
from convcanon.hlo.phase_plan import (
    DimPlan,
    LhsDimPlan,
    LhsPhase,
    Phase,
    lattice_macs,
    lhs_dilation_plans,
    plan_dim,
)
from convcanon.records import NamedTuple

Window = tuple[int, int, int]  # (start, stride, length) of a slice in one dim
Permutation = tuple[int, ...]


# -- plan nodes ------------------------------------------------------------------------------


class Pad(NamedTuple):
    """Full-rank zero-pad amounts of an operand, and the crop (start, limit) that follows."""

    low: tuple[int, ...]
    high: tuple[int, ...]
    interior: tuple[int, ...]
    crop: tuple[tuple[int, ...], tuple[int, ...]] | None = None

    @property
    def pads(self) -> bool:
        return any(self.low) or any(self.high) or any(self.interior)


class Slices(NamedTuple):
    """A partial conv's operand: strided slices of the operand on `axes`, one per list of
    `windows`, each zero-padded by its (low, high) `pads`, joined on `axis` block by block."""

    axes: tuple[int, ...]
    windows: tuple[tuple[Window, ...], ...]
    axis: int
    blocks: int
    pads: tuple[tuple[tuple[int, int], ...], ...] | None = None


class Fold(NamedTuple):
    """Space-to-depth of an operand: each axis in `folds` cropped or zero-padded at its end to
    outer * s and split into (outer, s), phase p of that dim being index p of the s axis."""

    folds: tuple[tuple[int, int, int], ...]  # (axis, outer, s)


class Unfold(NamedTuple):
    """A partial conv's operand read from a fold: per folded axis (outer start, outer length,
    first phase, phases), the phase axes moved into `feature` after its `groups` blocks; then
    transposed by `layout` (the fold's layout back to the conv's), if any."""

    windows: tuple[tuple[int, int, int, int, int], ...]  # (axis, o0, on, p0, pn)
    feature: int
    groups: int
    layout: Permutation | None = None
    crops: tuple[Window, ...] = ()  # (axis, start, length) of an axis that is not folded


Operand = Slices | Unfold | None  # None: the (padded) operand itself


class PartialConv(NamedTuple):
    """One conv the rewrite emits: its own final params and where its operands come from."""

    params: ConvParams
    lhs: Operand
    rhs: Operand


class WindowPlan(NamedTuple):
    """The explicit pad and stride of a conv without lhs dilation (`params`, as planned):
    the kernel's zero extension, the lhs's move to channels-last and its pad, the folds, and the
    partial convs whose sum is the conv."""

    params: ConvParams
    kernel_pad: Pad | None  # zero taps appended (merge-phases=pad-kernel)
    lhs_layout: Permutation | None  # the lhs moved to [b, 0.., f] before its pad and fold
    lhs_pad: Pad | None
    lhs_back: Permutation | None  # the padded lhs moved back to the conv's layout
    kernel_flips: tuple[int, ...]  # kernel axes reversed before folding
    lhs_fold: Fold | None
    kernel_fold: Fold | None
    partials: tuple[PartialConv, ...]
    written: frozenset[str]  # the window attributes every partial conv writes
    pads: bool  # the lhs's padding became a pad (the statistics' rewritten-pad)


class PhaseGroup(NamedTuple):
    """Output phases computed by one conv: its kernel (the phases' kernel slices joined on the
    kernel's output features), the phase conv's own window plan, each phase's q per dim in
    merged order, and (merge-phases=none) the pad that places its outputs."""

    kernel: Slices
    conv: WindowPlan
    phases: tuple[tuple[int, ...], ...]
    placement: Pad | None


Assembly = Literal["sum", "depth-to-space", "interleave"]


class PhasePlan(NamedTuple):
    """A lhs-dilated conv as output phases, each an ordinary conv of the undilated lhs."""

    params: ConvParams
    dims: tuple[LhsDimPlan, ...]
    groups: tuple[PhaseGroup, ...]
    assembly: Assembly


class ChannelsLast(NamedTuple):
    """The conv computed as `[b, 0.., f]x[0.., i, o]->[b, 0.., f]` between transposes."""

    lhs: Permutation
    rhs: Permutation
    back: Permutation  # the result's, from channels-last to the conv's layout
    params: ConvParams  # the channels-last conv's


class ConvPlan(NamedTuple):
    """Everything one conv configuration's rewrite does, and what it adds up to."""

    params: ConvParams
    decision: Decision
    policy: str
    merge: str  # how its phases merge: exact, pad-kernel (zero-extended kernels) or none
    lattice_macs: int
    # the rewrite, for an accepted conv:
    channels_last: ChannelsLast | None = None
    body: WindowPlan | PhasePlan | None = None  # None: not rewritten
    wide: bool = False  # partials summed in f32 and converted once
    zeros: bool = True  # every pad the rewrite may emit has a zero of its type (else EUET001)
    lhs_phases: int = 0  # output phases of the lhs-dilation rewrite (0: not used)
    unmerged: int = 0  # partial convs without phase merging
    summed: int = 0  # most partial convs summed into one output element
    counters: tuple[tuple[str, int], ...] = ()  # statistics the rewrite adds

    @property
    def partials(self) -> tuple[PartialConv, ...]:
        if isinstance(self.body, WindowPlan):
            return self.body.partials
        if isinstance(self.body, PhasePlan):
            return tuple(c for g in self.body.groups for c in g.conv.partials)
        return ()

    @property
    def macs_after(self) -> int:
        return sum(c.params.macs for c in self.partials)


# -- planning ----------------------------------------------------------------------------------


def plan_conv(p: ConvParams, options: ConvOptions) -> ConvPlan:
    """The plan of one conv: the gate's decision, and for an accepted conv its rewrite.

    The options and the engine policy are resolved once, to the choices for `p` that the gate
    and the planner read. The gate counts partial convs per dim before anything is enumerated,
    so a conv that would need millions of phases is refused without planning them."""
    config = resolve(p, options)
    decision = decide(p, config)
    counted = p.dynamic_reason is None and p.num_spatial > 0 and within_tap_limit(p)
    lattice = lattice_macs(p) if counted else 0
    merged = decision.merged  # counted by the gate for an accepted conv
    if merged is None:
        return ConvPlan(
            params=p,
            decision=decision,
            policy=config.policy.name,
            merge=config.merge,
            lattice_macs=lattice,
        )
    counters: dict[str, int] = {}
    polyphase = config.polyphase
    lhs_phases = math.prod(len(d.phases) for d in lhs_dilation_plans(p)) if polyphase else 0
    channels_last = None
    conv = p
    writes: frozenset[str] = frozenset()
    if config.channels_last and not is_channels_last(p):
        channels_last = to_channels_last(p)
        conv = channels_last.params
        writes = frozenset({"dimension_numbers"})
        counters["channels-last"] = 1
    body: WindowPlan | PhasePlan
    if polyphase:
        body = _plan_phases(conv, config, writes | _PHASE_WRITES)
        counters["rewritten-lhs-dilation"] = 1
    else:
        body = _plan_window(conv, config, writes, False)
        if body.pads:
            counters["rewritten-pad"] = 1
        if conv.needs_stride:
            counters["rewritten-stride"] = 1
    body = _writing_differences(body, p)
    summed = max(merged.summed, _most_summed(body))
    wide = options.wide_partials and summed > 1 and p.narrow_result
    if wide:
        counters["wide-partials"] = 1
    if merged.convs < merged.unmerged:
        counters["merged-phases"] = merged.unmerged - merged.convs
    return ConvPlan(
        params=p,
        decision=decision,
        policy=config.policy.name,
        merge=config.merge,
        channels_last=channels_last,
        body=body,
        wide=wide,
        lattice_macs=lattice,
        zeros=zeros_available(p, config, body),
        lhs_phases=lhs_phases,
        unmerged=merged.unmerged,
        summed=summed,
        counters=tuple(counters.items()),
    )


def _most_summed(body: WindowPlan | PhasePlan) -> int:
    """The most partial convs the plan sums into one output element: the gate counts merged
    phases, not the per-tap convs a policy splits line partials into (an output phase of one
    conv can become several)."""
    if isinstance(body, WindowPlan):
        return len(body.partials)
    return max((len(g.conv.partials) for g in body.groups), default=0)


def _window_values(p: ConvParams) -> dict[str, object]:
    return {
        "window_strides": p.strides,
        "padding": p.padding,
        "lhs_dilation": p.lhs_dilation,
        "rhs_dilation": p.rhs_dilation,
        "window_reversal": p.reversal,
        "dimension_numbers": p.dims,
    }


def _writing_differences(
    body: WindowPlan | PhasePlan, source: ConvParams
) -> WindowPlan | PhasePlan:
    """`body` with every partial conv also writing each window attribute whose value differs
    from the source conv's: a partial is a clone of the source, so an attribute it does not
    write keeps the source's value (a kernel extension can cancel the source's padding)."""

    def complete(plan: WindowPlan) -> WindowPlan:
        before = _window_values(source)
        differ = {
            name
            for partial in plan.partials
            for name, value in _window_values(partial.params).items()
            if value != before[name]
        }
        return plan if differ <= plan.written else plan._replace(written=plan.written | differ)

    if isinstance(body, WindowPlan):
        return complete(body)
    groups = tuple(g._replace(conv=complete(g.conv)) for g in body.groups)
    return body._replace(groups=groups)


def zeros_available(p: ConvParams, config: ConvConfig, body: WindowPlan | PhasePlan) -> bool:
    """Whether every pad the rewrite `body` of accepted `p` may emit has a zero: the lhs's, the
    kernel's when it is zero-extended, and the result's for the pads that place output
    phases."""
    extends = _extends_kernel(body)
    if (p.needs_pad or extends) and not p.lhs_zero:
        return False
    if config.polyphase and not p.result_zero:
        return False
    return not extends or p.rhs_zero


def _extends_kernel(body: WindowPlan | PhasePlan) -> bool:
    """Whether the rewrite zero-extends a kernel (merge-phases=pad-kernel, where that merges
    phases): appended taps, or output phases widened to a shared window."""
    if isinstance(body, WindowPlan):
        return body.kernel_pad is not None
    return any(
        g.conv.kernel_pad is not None
        or g.kernel.pads is not None
        and any(any(pair) for combo in g.kernel.pads for pair in combo)
        for g in body.groups
    )


def _plan_window(
    p: ConvParams, config: ConvConfig, writes: frozenset[str], phase: bool
) -> WindowPlan:
    """Explicit pad, then explicit stride, of `p` (no lhs dilation left, or interior-pad mode);
    every partial conv writes the window attributes `writes` and those this changes. `phase`:
    `p` is an output phase's conv."""
    written = set(writes)
    conv_dims = p.dims
    policy, options = config.policy, config.options
    merge = config.merge != "none"
    per_tap = config.per_tap
    kernel_pad = None
    if config.merge == "pad-kernel" and joins_inputs(p):
        extra = kernel_extension(p, options.max_mac_ratio)
        if any(extra):
            kernel_pad = _kernel_extension_pad(p, extra)
            p = extend_kernel(p, extra)
    if any(lo or hi for lo, hi in p.padding):  # the conv's own padding, reset to zero
        written.add("padding")
    fold = p.lhs_zero and p.rhs_zero and merge and not per_tap and joins_inputs(p) and foldable(p)
    fold = fold and (policy.fold_single_phases or merges_phases(p))
    lhs_layout = fold_back = None
    if fold:  # pad straight to the fold's extent
        p = fold_padding(p)  # (which can be none: a crop of what the fold leaves out)
        if policy.fold_channels_last and stride_convs(p, "exact", 1.0) > 1:
            lhs_layout, p, fold_back = lhs_channels_last(p)
    lhs_pad = lhs_back = None
    if p.needs_pad:
        if not p.needs_stride and policy.routes_pad(p):
            lhs_layout, p, lhs_back = lhs_channels_last(p)
        lhs_pad = explicit_pad(p, options.negative_padding)
        written.add("padding")
        if "lhs_dilation" in p.attributes:
            written.add("lhs_dilation")
        p = _padded(p, lhs_pad)
    if lhs_back is not None:
        p = p._replace(lhs_shape=_permuted(p.lhs_shape, lhs_back), dims=conv_dims)
    flips: tuple[int, ...] = ()
    lhs_fold = kernel_fold = None
    if not p.needs_stride and (per_tap or config.splits_line(p.kernel_spatial)):
        partials = _sliced(p, plan_stride(p), False, config, True)  # a 1x1 conv per tap
    elif not p.needs_stride:
        partials = (PartialConv(p, None, None),)
    else:
        written |= {"window_strides", "rhs_dilation"}
        plans = plan_stride(p)
        if fold:
            flips, lhs_fold, kernel_fold, partials = _folded(p, plans, fold_back, conv_dims, config)
            if flips:
                written.add("window_reversal")
        else:
            joins = merge and not per_tap and joins_inputs(p)
            partials = _sliced(p, plans, joins, config, per_tap)
    return WindowPlan(
        p,
        kernel_pad,
        lhs_layout,
        lhs_pad,
        lhs_back,
        flips,
        lhs_fold,
        kernel_fold,
        partials,
        frozenset(written),
        lhs_pad is not None and not phase,
    )


# An output phase's conv resets its whole window: the phase sets its own stride, padding and
# dilations.
_PHASE_WRITES = frozenset(("window_strides", "padding", "lhs_dilation", "rhs_dilation"))


def _kernel_extension_pad(p: ConvParams, extra: tuple[int, ...]) -> Pad:
    """`extra` zero taps after the kernel's last tap per dim (before its first element when the
    window is reversed there, since tap k reads element K-1-k)."""
    rank = len(p.rhs_shape)
    low, high = [0] * rank, [0] * rank
    for axis, e, reversed_ in zip(p.dims.rhs_spatial, extra, p.reversal, strict=True):
        low[axis], high[axis] = zero_tap_pads(0, e, reversed_)
    return Pad(tuple(low), tuple(high), (0,) * rank)


def explicit_pad(p: ConvParams, mode: str) -> Pad:
    """Where the conv's padding and lhs dilation go, per lhs dimension (0 on batch/feature);
    with `negative-padding=slice` the negative parts are a crop after a pad of the positive."""
    rank = len(p.lhs_shape)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    for axis, (lo, hi), dil in zip(p.dims.lhs_spatial, p.padding, p.lhs_dilation, strict=True):
        low[axis], high[axis] = bounded_pad(p.lhs_shape[axis], lo, hi, dil - 1)
        interior[axis] = dil - 1
    if mode == "pad" or all(v >= 0 for v in low + high):
        return Pad(tuple(low), tuple(high), tuple(interior))
    pos_low = [max(v, 0) for v in low]
    pos_high = [max(v, 0) for v in high]
    padded = [
        padded_extent(h, lo, hi, i)
        for h, i, lo, hi in zip(p.lhs_shape, interior, pos_low, pos_high, strict=True)
    ]
    start = tuple(-min(v, 0) for v in low)
    limit = tuple(e + min(v, 0) for e, v in zip(padded, high, strict=True))
    return Pad(tuple(pos_low), tuple(pos_high), tuple(interior), (start, limit))


def _padded(p: ConvParams, pad: Pad) -> ConvParams:
    """`p` after its explicit pad: the lhs is the padded one, the window unpadded."""
    n = p.num_spatial
    return p._replace(
        lhs_shape=_pad_shape(p.lhs_shape, pad),
        padding=((0, 0),) * n,
        lhs_dilation=(1,) * n,
    )


def _pad_shape(shape: tuple[int, ...], pad: Pad) -> tuple[int, ...]:
    out = tuple(
        padded_extent(h, lo, hi, i)
        for h, lo, hi, i in zip(shape, pad.low, pad.high, pad.interior, strict=True)
    )
    if pad.crop is None:
        return out
    start, limit = pad.crop
    return tuple(
        h if h < 0 else max(0, hi - lo) for h, lo, hi in zip(out, start, limit, strict=True)
    )


# -- layout -------------------------------------------------------------------------------------


def inverse(permutation: Permutation) -> Permutation:
    out = [0] * len(permutation)
    for position, axis in enumerate(permutation):
        out[axis] = position
    return tuple(out)


def channels_last_permutations(p: ConvParams) -> tuple[Permutation, Permutation, Permutation]:
    """Where each axis of the channels-last lhs, kernel and result comes from in `p`'s."""
    d = p.dims
    return (
        (d.lhs_batch, *d.lhs_spatial, d.lhs_feature),
        (*d.rhs_spatial, d.rhs_in_feature, d.rhs_out_feature),
        (d.out_batch, *d.out_spatial, d.out_feature),
    )


def is_channels_last(p: ConvParams) -> bool:
    identity = tuple(range(p.rank))
    return all(perm == identity for perm in channels_last_permutations(p))


def to_channels_last(p: ConvParams) -> ChannelsLast:
    """`conv(x, w, dims)` as `transpose(conv(transpose(x), transpose(w), channels-last))`: the
    same sums over the same elements, so exact; an engine that runs its convs channels-last
    then sees the pad, the phase slices and the folds in the layout it computes in."""
    lhs, rhs, out = channels_last_permutations(p)
    n = p.num_spatial
    spatial = tuple(range(1, n + 1))
    dims = p.dims._replace(
        lhs_batch=0,
        lhs_spatial=spatial,
        lhs_feature=n + 1,
        rhs_spatial=tuple(range(n)),
        rhs_in_feature=n,
        rhs_out_feature=n + 1,
        out_batch=0,
        out_spatial=spatial,
        out_feature=n + 1,
    )
    twin = p._replace(
        lhs_shape=tuple(p.lhs_shape[a] for a in lhs),
        rhs_shape=tuple(p.rhs_shape[a] for a in rhs),
        result_shape=tuple(p.result_shape[a] for a in out),
        dims=dims,
    )
    return ChannelsLast(lhs, rhs, inverse(out), twin)


def lhs_channels_last(p: ConvParams) -> tuple[Permutation | None, ConvParams, Permutation | None]:
    """The move of a conv's lhs to `[b, 0.., f]` before its pad (and fold), `p` describing that
    lhs, and the permutation back to the conv's layout (None twice: already channels-last)."""
    order = channels_last_permutations(p)[0]
    if order == tuple(range(len(order))):
        return None, p, None
    n = p.num_spatial
    dims = p.dims._replace(lhs_batch=0, lhs_spatial=tuple(range(1, n + 1)), lhs_feature=n + 1)
    return order, p._replace(lhs_shape=_permuted(p.lhs_shape, order), dims=dims), inverse(order)


def _permuted(shape: tuple[int, ...], permutation: Permutation) -> tuple[int, ...]:
    return tuple(shape[a] for a in permutation)


# -- stride partials ----------------------------------------------------------------------------


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


def _partial_params(
    p: ConvParams,
    lhs_shape: tuple[int, ...],
    rhs_shape: tuple[int, ...],
    dilation: tuple[int, ...],
    reversal: tuple[bool, ...],
) -> ConvParams:
    """A stride partial: unit stride, the phases' rhs dilation, on the given operands."""
    return p._replace(
        lhs_shape=lhs_shape,
        rhs_shape=rhs_shape,
        strides=(1,) * p.num_spatial,
        rhs_dilation=dilation,
        reversal=reversal,
    )


Combo = tuple[Phase, ...]  # one phase per spatial dim


class TapSplit(NamedTuple):
    """The phase combos one partial conv reads, with its rhs dilation and window reversal."""

    combos: list[Combo]
    dilation: tuple[int, ...]
    reversal: tuple[bool, ...]


def _single_tap(phase: Phase, tap: int, dilation: int, reversed_: bool) -> Phase:
    """Tap `tap` of a phase as a phase of its own: the lhs window that tap reads for every
    output, and the one kernel element it multiplies (tap k reads element n-1-k if reversed)."""
    out = phase.lhs_length - (phase.taps - 1) * dilation
    element = phase.taps - 1 - tap if reversed_ else tap
    return Phase(
        1,
        phase.lhs_start + tap * dilation * phase.lhs_stride,
        phase.lhs_stride if out > 1 else 1,
        out,
        phase.rhs_start + element * phase.rhs_stride,
        1,
    )


def _tap_splits(
    p: ConvParams,
    combos: list[Combo],
    plans: tuple[DimPlan, ...],
    config: ConvConfig,
    per_tap: bool,
) -> list[TapSplit]:
    """The partial convs of one group of phase combos: one, or one per tap where the policy
    splits a line kernel cut from the conv's or every kernel (`per_tap`; the combos of a group
    have the same tap counts; a unit-stride conv is one combo of whole windows)."""
    dilation = tuple(d.rhs_dilation for d in plans)
    taps = tuple(ph.taps for ph in combos[0])
    if not (per_tap and math.prod(taps) > 1) and not config.splits_line(taps):
        return [TapSplit(combos, dilation, p.reversal)]
    axes = [i for i, n in enumerate(taps) if n > 1]
    one = tuple(1 if i in axes else d for i, d in enumerate(dilation))
    forward = tuple(r and i not in axes for i, r in enumerate(p.reversal))
    return [
        TapSplit(
            [
                tuple(
                    _single_tap(ph, tap[axes.index(i)], dilation[i], p.reversal[i])
                    if i in axes
                    else ph
                    for i, ph in enumerate(c)
                )
                for c in combos
            ],
            one,
            forward,
        )
        for tap in itertools.product(*(range(taps[i]) for i in axes))
    ]


def _sliced(
    p: ConvParams, plans: tuple[DimPlan, ...], merge: bool, config: ConvConfig, per_tap: bool
) -> tuple[PartialConv, ...]:
    """One conv per phase combo, or per group of combos whose tap counts agree in each dim
    (their slices joined on the features, row-major in the dims as the kernel has them); a line
    kernel the policy splits, or every kernel (`per_tap`), is one conv per tap."""
    if merge:
        per_dim = [tap_groups(d) for d in plans]
        groups = [list(itertools.product(*choice)) for choice in itertools.product(*per_dim)]
    else:
        groups = [[combo] for combo in itertools.product(*(d.phases for d in plans))]
    dims = p.dims
    partials = []
    for combos, dilation, reversal in (
        split for group in groups for split in _tap_splits(p, group, plans, config, per_tap)
    ):
        lhs = Slices(
            dims.lhs_spatial,
            tuple(tuple(ph.lhs_window for ph in c) for c in combos),
            dims.lhs_feature,
            p.feature_group_count,
        )
        rhs = Slices(
            dims.rhs_spatial,
            tuple(tuple(ph.rhs_window for ph in c) for c in combos),
            dims.rhs_in_feature,
            1,
        )
        lhs_shape = _joined_shape(p.lhs_shape, lhs, len(combos))
        rhs_shape = _joined_shape(p.rhs_shape, rhs, len(combos))
        q = _partial_params(p, lhs_shape, rhs_shape, dilation, reversal)
        partials.append(PartialConv(q, lhs, rhs))
    return tuple(partials)


def _joined_shape(shape: tuple[int, ...], operand: Slices, count: int) -> tuple[int, ...]:
    out = list(shape)
    for axis, (_, _, length) in zip(operand.axes, operand.windows[0], strict=True):
        out[axis] = length
    if operand.pads is not None:
        for axis, (lo, hi) in zip(operand.axes, operand.pads[0], strict=True):
            out[axis] += lo + hi
    out[operand.axis] *= count
    return tuple(out)


def _folded(
    p: ConvParams,
    plans: tuple[DimPlan, ...],
    layout: Permutation | None,
    conv_dims: DimensionNumbers,
    config: ConvConfig,
) -> tuple[tuple[int, ...], Fold, Fold, tuple[PartialConv, ...]]:
    """Merged phases of a conv whose strided dims all have unit rhs dilation: phase p of such a
    dim reads lhs p, p+s, ... and taps p, p+s, ..., so the lhs and the kernel are folded once
    (space-to-depth) and each tap-count group is one slice of the folded tensors. `layout`
    takes each group's lhs from the fold's layout (`p`'s) back to the conv's."""
    dims = p.dims
    strided = [i for i, s in enumerate(p.strides) if s > 1]
    flips = tuple(dims.rhs_spatial[i] for i in strided if p.reversal[i])
    forward = tuple(r and i not in strided for i, r in enumerate(p.reversal))
    lhs_folds, rhs_folds = [], []
    for i in strided:
        s, plan = p.strides[i], plans[i]
        lhs_folds.append((dims.lhs_spatial[i], max(ph.lhs_length for ph in plan.phases), s))
        rhs_folds.append((dims.rhs_spatial[i], max(ph.taps for ph in plan.phases), s))
    groups = p.feature_group_count
    partials = []
    for choice in itertools.product(*(tap_groups(plans[i]) for i in strided)):
        taps = list(p.kernel_spatial)
        for i, group in zip(strided, choice, strict=True):
            taps[i] = group[0].taps
        for tap in _folded_taps(p, tuple(taps), plans, config):
            lhs_windows, rhs_windows = [], []
            lhs_shape, rhs_shape = list(p.lhs_shape), list(p.rhs_shape)
            for i, group in zip(strided, choice, strict=True):
                first: Phase = group[0]
                phase = first.lhs_start  # = the phase p, with unit rhs dilation
                o0, on, k0, kn = tap.get(i, (0, first.lhs_length, 0, first.taps))
                lhs_windows.append((dims.lhs_spatial[i], o0, on, phase, len(group)))
                rhs_windows.append((dims.rhs_spatial[i], k0, kn, phase, len(group)))
                lhs_shape[dims.lhs_spatial[i]] = on
                rhs_shape[dims.rhs_spatial[i]] = kn
            lhs_crops, rhs_crops = [], []
            for i, (o0, on, k0, kn) in tap.items():
                if i not in strided:
                    lhs_crops.append((dims.lhs_spatial[i], o0, on))
                    rhs_crops.append((dims.rhs_spatial[i], k0, kn))
                    lhs_shape[dims.lhs_spatial[i]], rhs_shape[dims.rhs_spatial[i]] = on, kn
            phases = math.prod(len(g) for g in choice)
            lhs_shape[dims.lhs_feature] *= phases
            rhs_shape[dims.rhs_in_feature] *= phases
            lhs = Unfold(tuple(lhs_windows), dims.lhs_feature, groups, layout, tuple(lhs_crops))
            rhs = Unfold(tuple(rhs_windows), dims.rhs_in_feature, 1, None, tuple(rhs_crops))
            shape = _permuted(tuple(lhs_shape), layout) if layout is not None else tuple(lhs_shape)
            dilation = tuple(1 if i in tap else d.rhs_dilation for i, d in enumerate(plans))
            reversal = tuple(r and i not in tap for i, r in enumerate(forward))
            q = _partial_params(p, shape, tuple(rhs_shape), dilation, reversal)
            partials.append(PartialConv(q._replace(dims=conv_dims), lhs, rhs))
    return flips, Fold(tuple(lhs_folds)), Fold(tuple(rhs_folds)), tuple(partials)


def _folded_taps(
    p: ConvParams, taps: tuple[int, ...], plans: tuple[DimPlan, ...], config: ConvConfig
) -> list[dict[int, tuple[int, int, int, int]]]:
    """The partial convs of one folded phase group with `taps` per spatial dim: one reading
    whole windows ({}), or where the policy splits a line kernel one per tap, each
    {dim: (lhs start, lhs length, kernel start, kernel length)} in folded (outer) coordinates
    on a strided dim, in elements on an unfolded one."""
    if not config.splits_line(taps):
        return [{}]
    i = next(i for i, n in enumerate(taps) if n > 1)
    n, out = taps[i], p.out_spatial[i]
    if p.strides[i] > 1:  # unit rhs dilation, the kernel flipped to forward order
        return [{i: (tap, out, tap, 1)} for tap in range(n)]
    d = plans[i].rhs_dilation
    return [{i: (tap * d, out, n - 1 - tap if p.reversal[i] else tap, 1)} for tap in range(n)]


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


def _plan_phases(p: ConvParams, config: ConvConfig, writes: frozenset[str]) -> PhasePlan:
    """The output phases of `p`, grouped into convs (merged on the output features unless
    merge-phases=none), each an undilated conv that goes through pad and stride; a phase conv
    whose kernel is a line cut from `p`'s is one conv per tap where the policy splits lines."""
    plans = lhs_dilation_plans(p)
    mode = config.merge
    ratio = config.options.max_mac_ratio
    groups = lhs_groups(p, mode, ratio) if mode != "none" else lhs_groups(p, mode)
    planned = []
    for group in groups:
        q = lhs_group_params(p, plans, group)
        kernel = _phase_kernel(p, group)
        conv = _plan_window(q, config, writes, True)
        where = placement(p, plans, group.combos[0]) if mode == "none" else None
        qs = tuple(tuple(ph.q for ph in combo) for combo in group.combos)
        planned.append(PhaseGroup(kernel, conv, qs, where))
    if mode == "none":
        assembly: Assembly = "sum"
    elif is_depth_to_space(p, plans, groups):
        assembly = "depth-to-space"
    else:
        assembly = "interleave"
    return PhasePlan(p, plans, tuple(planned), assembly)


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
