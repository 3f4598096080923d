"""The window plan of a conv without lhs dilation: its explicit pad (or crop), then its
explicit stride as partial convs, each reading its lhs and kernel from strided slices, a
space-to-depth fold or the operand itself. Plain values built from `ConvParams` and the
resolved config; every choice between forms (fold or slices, a kernel phase by one slice, a
split per tap, where the pad sits) is made here, the emitter only builds it."""

from __future__ import annotations

import itertools
import math

from convcanon.hlo.config import ConvConfig
from convcanon.hlo.conv_params import (
    ConvParams,
    DimensionNumbers,
    bounded_pad,
    padded_extent,
)
from convcanon.hlo.phase_merge import (
    extend_kernel,
    fold_padding,
    foldable,
    joins_inputs,
    kernel_extension,
    merges_phases,
    stride_convs,
    tap_groups,
    zero_tap_pads,
)
from convcanon.hlo.phase_plan import DimPlan, Phase, plan_dim
from convcanon.hlo.plan_fold import Fold, FoldSplit, Unfold
from convcanon.hlo.plan_layout import Permutation, lhs_channels_last, permuted
from convcanon.records import NamedTuple

Window = tuple[int, int, int]  # (start, stride, length) of a slice in one dim


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


def _window_values(p: ConvParams) -> dict[str, object]:
    return {
        "window_strides": p.strides,
        "padding": p.padding,
        "lhs_dilation": p.lhs_dilation,
        "rhs_dilation": p.rhs_dilation,
        "window_reversal": p.reversal,
        "dimension_numbers": p.dims,
    }


def written_attributes(
    source: ConvParams,
    partials: tuple[PartialConv, ...],
    phase: bool,
    padded: bool,
    strided: bool,
) -> frozenset[str]:
    """The window attributes the `partials` write. A partial is a clone of the `source` conv, so
    it writes each one whose value differs from the source's; and, spelled out even where the
    value happens to be the source's, the parts of the window the rewrite derives anew: an
    output `phase` conv's whole window but its reversal, a `padded` conv's padding (and its lhs
    dilation, if the source states one), a `strided` conv's stride and rhs dilation."""
    written = {"window_strides", "padding", "lhs_dilation", "rhs_dilation"} if phase else set()
    if padded:
        written.add("padding")
        if "lhs_dilation" in source.attributes:
            written.add("lhs_dilation")
    if strided:
        written |= {"window_strides", "rhs_dilation"}
    before = _window_values(source)
    for partial in partials:
        written |= {n for n, v in _window_values(partial.params).items() if v != before[n]}
    return frozenset(written)


def plan_window(p: ConvParams, config: ConvConfig, source: ConvParams, phase: bool) -> WindowPlan:
    """Explicit pad, then explicit stride, of `p` (no lhs dilation left, or interior-pad mode),
    a conv the rewrite of `source` computes (`phase`: one of its output phases)."""
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
    padded = any(lo or hi for lo, hi in p.padding)  # its own padding, reset to zero
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
        padded = True
        p = _padded(p, lhs_pad)
    if lhs_back is not None:
        p = p._replace(lhs_shape=permuted(p.lhs_shape, lhs_back), dims=conv_dims)
    flips: tuple[int, ...] = ()
    lhs_fold = kernel_fold = None
    if not p.needs_stride and (per_tap or config.splits_line(p.kernel_spatial)):
        partials = _sliced(p, plan_stride(p), False, config, True)  # a 1x1 conv per tap
    elif not p.needs_stride:
        partials = (PartialConv(params=p, lhs=None, rhs=None),)
    else:
        plans = plan_stride(p)
        if fold:
            flips, lhs_fold, kernel_fold, partials = _folded(p, plans, fold_back, conv_dims, config)
        else:
            joins = merge and not per_tap and joins_inputs(p)
            partials = _sliced(p, plans, joins, config, per_tap)
    return WindowPlan(
        params=p,
        kernel_pad=kernel_pad,
        lhs_layout=lhs_layout,
        lhs_pad=lhs_pad,
        lhs_back=lhs_back,
        kernel_flips=flips,
        lhs_fold=lhs_fold,
        kernel_fold=kernel_fold,
        partials=partials,
        written=written_attributes(source, partials, phase, padded, p.needs_stride),
        pads=lhs_pad is not None and not phase,
    )


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
        partials.append(PartialConv(params=q, lhs=lhs, rhs=rhs))
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
) -> tuple[tuple[int, ...], Fold, Fold | None, tuple[PartialConv, ...]]:
    """Merged phases of a conv whose strided dims all have unit rhs dilation: phase p of such a
    dim reads lhs p, p+s, ... and taps p, p+s, ..., so the lhs and the kernel are folded once
    (space-to-depth) and each tap-count group is one slice of the folded tensors, or of the
    kernel where it reads one phase per dim (no kernel fold then, if no partial reads it).
    `layout` takes each group's lhs from the fold's layout (`p`'s) back to the conv's."""
    dims = p.dims
    strided = [i for i, s in enumerate(p.strides) if s > 1]
    flips = tuple(dims.rhs_spatial[i] for i in strided if p.reversal[i])
    forward = tuple(r and i not in strided for i, r in enumerate(p.reversal))
    lhs_folds, rhs_folds = [], []
    for i in strided:
        s, plan = p.strides[i], plans[i]
        lhs_folds.append((dims.lhs_spatial[i], max(ph.lhs_length for ph in plan.phases), s))
        rhs_folds.append((dims.rhs_spatial[i], max(ph.taps for ph in plan.phases), s))
    lhs_split = FoldSplit.of(p.lhs_shape, tuple(lhs_folds))
    rhs_split = FoldSplit.of(p.rhs_shape, tuple(rhs_folds))
    groups = p.feature_group_count
    partials = []
    for choice in itertools.product(*(tap_groups(plans[i]) for i in strided)):
        taps = list(p.kernel_spatial)
        for i, group in zip(strided, choice, strict=True):
            taps[i] = group[0].taps
        for tap in _folded_taps(p, tuple(taps), plans, config):
            (lw, lc), (rw, rc), lhs_shape, rhs_shape = _tap_reads(p, strided, choice, tap)
            lhs = lhs_split.unfold(lw, dims.lhs_feature, groups, layout, lc)
            rhs: Slices | Unfold = rhs_split.unfold(rw, dims.rhs_in_feature, 1, None, rc)
            rhs = _kernel_phase(p.rhs_shape, rhs, p.strides, dims.rhs_spatial) or rhs
            shape = permuted(tuple(lhs_shape), layout) if layout is not None else tuple(lhs_shape)
            dilation = tuple(1 if i in tap else d.rhs_dilation for i, d in enumerate(plans))
            reversal = tuple(r and i not in tap for i, r in enumerate(forward))
            q = _partial_params(p, shape, tuple(rhs_shape), dilation, reversal)
            partials.append(PartialConv(params=q._replace(dims=conv_dims), lhs=lhs, rhs=rhs))
    lhs_fold = lhs_split.fold([c.lhs for c in partials])
    rhs_unfolds = [c.rhs for c in partials if isinstance(c.rhs, Unfold)]
    kernel_fold = rhs_split.fold(rhs_unfolds) if rhs_unfolds else None
    return flips, lhs_fold, kernel_fold, tuple(partials)


def _kernel_phase(
    shape: tuple[int, ...],
    spec: Unfold,
    strides: tuple[int, ...],
    spatial: tuple[int, ...],
) -> Slices | None:
    """A kernel operand that takes one phase of each folded axis, as one strided slice of the
    kernel (of `shape`) before its fold; None when it is not that (it merges phases, or reads
    taps the fold's zero extension added). The same taps as the fold's slice: the kernel's pad,
    reshape, slice and reshape become one op, which runs on every call when the kernel is an
    argument. The lhs keeps its fold: reading it once in front of every partial is the
    policy's choice."""
    step = {axis: s for axis, s in zip(spatial, strides, strict=True)}
    windows: list[tuple[int, Window]] = []
    for axis, o0, on, p0, pn in spec.windows:
        s = step[axis]
        first = o0 * s + p0
        if pn != 1 or on < 1 or first + (on - 1) * s >= shape[axis]:
            return None
        windows.append((axis, (first, s, on)))
    windows += [(axis, (first, 1, length)) for axis, first, length in spec.crops]
    axes = tuple(axis for axis, _ in windows)
    return Slices(axes, (tuple(w for _, w in windows),), spec.feature, 1)


_Windows = tuple[tuple[int, int, int, int, int], ...]  # (axis, o0, on, p0, pn) of an unfold
_Crops = tuple[tuple[int, int, int], ...]  # (axis, start, length) of an unfolded axis


def _tap_reads(
    p: ConvParams,
    strided: list[int],
    choice: tuple[tuple[Phase, ...], ...],
    tap: dict[int, tuple[int, int, int, int]],
) -> tuple[tuple[_Windows, _Crops], tuple[_Windows, _Crops], list[int], list[int]]:
    """What one partial conv of a folded phase group reads of the folded lhs and kernel (the
    phase windows of each strided dim, the crop of each other dim a tap split cuts), and the
    shapes of those operands once the phases are moved into the features."""
    dims = p.dims
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
    lhs = (tuple(lhs_windows), tuple(lhs_crops))
    return lhs, (tuple(rhs_windows), tuple(rhs_crops)), lhs_shape, rhs_shape


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
