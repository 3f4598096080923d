"""Turn a conv's rewrite plan into ops: one call per conv configuration, no decisions.

`emit(b, plan, types)` gives the `Program` of the ops `plan` describes for a conv of the given
operand and result types; `program.instantiate` builds it in front of each such conv. What each op
reads and how it is shaped comes from the plan and from its operands' types; the choices (which
partial convs, which layout, which pads) were all made by the planner.
"""

from __future__ import annotations

from jaxlib.mlir import ir

from convcanon.hlo.build import Builder
from convcanon.hlo.plan import ConvPlan
from convcanon.hlo.plan_fold import Fold, Unfold
from convcanon.hlo.plan_phases import (
    InterleaveStage,
    Key,
    PhaseCut,
    PhaseGroup,
    PhasePart,
    PhasePlan,
    Rearrangement,
    ZeroBlock,
)
from convcanon.hlo.plan_window import Operand, Pad, Slices, WindowPlan
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
    if layout is not None:
        if layout.moves_lhs:
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
    if fold.builds_size:  # the size every unfold's reshape reads is built with the fold
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
    """The output phase convs of a lhs-dilated conv, put in place as the plan says: placed by
    interior pads and summed (merge-phases=none), by one depth-to-space, or by interleaving;
    zeros where no phase has taps."""
    if plan.assembly == "zeros":
        return b.zeros(plan.params.result_shape, acc)
    if plan.assembly == "sum":
        total: Ref | None = None
        for group in plan.groups:
            value = _group(b, lhs, rhs, group, acc)
            if group.placement is not None:
                value = _pad(b, value, group.placement)
            total = value if total is None else b.add(total, value)
        assert total is not None
        return total
    if plan.assembly == "depth-to-space":  # one group holds every output phase
        (group,), d = plan.groups, plan.depth_to_space
        assert d is not None
        value = _group(b, lhs, rhs, group, acc)
        return b.permute_reshape(value, d.order, plan.params.result_shape, d.split)
    grid: dict[Key, Ref] = {}
    for group, cuts in zip(plan.groups, plan.cuts, strict=True):
        value = _group(b, lhs, rhs, group, acc)
        for phase, cut in zip(group.phases, cuts, strict=True):
            grid[phase] = value if cut is None else _cut(b, value, cut)
    return _interleave(b, grid, plan.stages, acc)


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


def _cut(b: Builder, value: Ref, cut: PhaseCut) -> Ref:
    """One output phase of a group conv's result (see `plan_phases.PhaseCut`)."""
    if cut.split is not None:
        value = b.reshape(value, cut.split)
    value = b.slice(value, cut.start, cut.limit)
    return b.reshape(value, cut.reshape) if cut.reshape is not None else value


def _interleave(
    b: Builder, grid: dict[Key, Ref], stages: tuple[InterleaveStage, ...], element: ir.Type
) -> Ref:
    """Put the output phases (keyed by their q per dim) in place, stage by stage as the plan
    says: each row's parts (zero blocks and phase values) concatenated on a new axis and
    reshaped (no `add`)."""
    for stage in stages:
        placed: dict[Key, Ref] = {}
        for row in stage.rows:
            parts = [_part(b, grid, part, element) for part in row.parts]
            value = b.concatenate(parts, stage.axis + 1)
            if row.reshape is not None:
                value = b.reshape(value, row.reshape)
            if row.crop is not None:
                value = b.slice(value, [0] * len(row.crop), row.crop)
            placed[row.key] = value
        grid = placed
    (value,) = grid.values()
    return value


def _part(b: Builder, grid: dict[Key, Ref], part: ZeroBlock | PhasePart, element: ir.Type) -> Ref:
    if isinstance(part, ZeroBlock):
        return b.zeros(part.shape, element)
    value = grid[part.key]
    if part.high is not None:
        value = b.pad(value, [0] * len(part.high), part.high)
    return b.reshape(value, part.column) if part.column is not None else value
