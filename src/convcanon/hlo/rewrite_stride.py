"""Explicit stride, exact polyphase form.

For a zero-padded conv with stride s in a spatial dim, output o reads lhs `o*s + d*k` for tap k.
Taps whose offsets `d*k` agree mod s form a phase p: they read the lhs subsampled by s from
`d*k0`, with a kernel subsampled by `t = s/gcd(d, s)` and new dilation `d/gcd(d, s)`. Each phase
is a unit-stride conv of a lhs slice with a kernel slice; their sum is the original conv, with
the same multiply-adds. Phases with the same tap counts are one conv over their slices
concatenated on the feature dim (see `phase_merge`), so the sum mostly happens inside convs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams
from convcanon.hlo.phase_merge import foldable, mergeable, tap_groups
from convcanon.hlo.phase_plan import DimPlan, Phase, plan_dim


@lru_cache(maxsize=4096)  # models repeat a few conv configurations thousands of times
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


def _phase_groups(plans: tuple[DimPlan, ...], merge: bool) -> list[list[tuple[Phase, ...]]]:
    """The phase combos of each emitted conv: one combo per conv, or every combo whose tap
    counts agree in each dim (row-major in the dims, as the concatenated kernel has them)."""
    if not merge:
        return [[combo] for combo in itertools.product(*(d.phases for d in plans))]
    per_dim = [tap_groups(d) for d in plans]
    return [list(itertools.product(*choice)) for choice in itertools.product(*per_dim)]


class _Folded(NamedTuple):
    """An operand with each strided dim split into (outer, s): phase p of that dim is index p
    of the s axis. `axes[a]` lists the axes of original axis `a`."""

    value: ir.Value
    shape: tuple[int, ...]
    axes: dict[int, list[int]]


def _fold(
    b: build.Builder,
    value: ir.Value,
    shape: tuple[int, ...],
    element: ir.Type,
    folds: dict[int, tuple[int, int]],
    zero: Callable[[], ir.Value],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> _Folded:
    """`value` cropped or zero-padded at the end of each axis in `folds` to outer*s, then each
    such axis split into (outer, s)."""
    target = list(shape)
    for axis, (outer, s) in folds.items():
        target[axis] = outer * s
    rank = len(shape)
    if any(t < e for t, e in zip(target, shape, strict=True)):
        limit = [min(t, e) for t, e in zip(target, shape, strict=True)]
        value, shape = b.slice_(value, element, [0] * rank, limit, [1] * rank, ip, loc)
    if any(t > e for t, e in zip(target, shape, strict=True)):
        high = [t - e for t, e in zip(target, shape, strict=True)]
        value, shape = b.pad(value, shape, element, zero(), [0] * rank, high, [0] * rank, ip, loc)
    split: list[int] = []
    axes: dict[int, list[int]] = {}
    for axis, extent in enumerate(shape):
        parts = list(folds[axis]) if axis in folds else [extent]
        axes[axis] = list(range(len(split), len(split) + len(parts)))
        split += parts
    return _Folded(b.reshape(value, split, element, ip, loc), tuple(split), axes)


def _unfold(
    b: build.Builder,
    folded: _Folded,
    element: ir.Type,
    windows: dict[int, tuple[int, int, int, int]],
    feature: int,
    groups: int,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """The phases `windows[axis] = (outer start, outer length, first phase, phases)` (keyed in
    spatial-dim order) of a folded operand, with the phase axes moved into the `feature` axis
    (after its `groups` blocks, in dim order): the same tensor as the phase slices concatenated
    on the features."""
    start, limit = [0] * len(folded.shape), list(folded.shape)
    for axis, (o0, on, p0, pn) in windows.items():
        outer, phase = folded.axes[axis]
        start[outer], limit[outer] = o0, o0 + on
        start[phase], limit[phase] = p0, p0 + pn
    value, shape = folded.value, folded.shape
    if start != [0] * len(shape) or limit != list(shape):
        value, shape = b.slice_(value, element, start, limit, [1] * len(shape), ip, loc)
    (feature_axis,) = folded.axes[feature]
    parts = [groups, shape[feature_axis] // groups] if groups > 1 else [shape[feature_axis]]
    split = [*shape[:feature_axis], *parts, *shape[feature_axis + 1 :]]
    value = b.reshape(value, split, element, ip, loc) if groups > 1 else value

    def at(axis: int) -> int:  # an axis of `shape` in `split`
        return axis + (len(parts) - 1 if axis > feature_axis else 0)

    phase_axes = [at(folded.axes[a][1]) for a in windows]  # in spatial-dim order
    order: list[int] = []
    merged: list[int] = []
    for axis in sorted(folded.axes):
        if axis in windows:
            outer = at(folded.axes[axis][0])
            order.append(outer)
            merged.append(split[outer])
        elif axis == feature:
            first = at(feature_axis)
            inner = first + len(parts) - 1
            order += [*range(first, inner), *phase_axes, inner]
            merged.append(math.prod(split[a] for a in (*range(first, inner + 1), *phase_axes)))
        else:
            order.append(at(folded.axes[axis][0]))
            merged.append(split[order[-1]])
    return b.permute_reshape(value, split, element, order, merged, ip, loc)


def _folded_stride(
    b: build.Builder,
    conv: build.AnyOp,
    lhs: ir.Value,
    lhs_shape: tuple[int, ...],
    rhs: ir.Value,
    types: tuple[ir.Type, ir.Type, ir.Type],
    p: ConvParams,
    plans: tuple[DimPlan, ...],
    overrides: dict[str, ir.Attribute],
    zeros: tuple[Callable[[], ir.Value], Callable[[], ir.Value]],
    ip: ir.InsertionPoint,
    loc: ir.Location,
    lhs_layout: tuple[int, ...] | None = None,
) -> tuple[list[ir.Operation], ir.Value]:
    """Merged phases of a conv whose strided dims all have unit rhs dilation: phase p of such
    a dim reads lhs p, p+s, ... and taps p, p+s, ..., so the lhs and the kernel are folded once
    (space-to-depth) and each tap-count group is one slice of the folded tensors. With
    `lhs_layout`, `p` describes the lhs in another layout than the conv's, and each group is
    transposed by it into the conv's."""
    dims = p.dims
    lhs_element, rhs_element, result_type = types
    strided = [i for i, s in enumerate(p.strides) if s > 1]
    flips = [dims.rhs_spatial[i] for i in strided if p.reversal[i]]
    if flips:  # tap k reads element K-1-k: flip those dims, and read them forward
        rhs = b.reverse(rhs, p.rhs_shape, rhs_element, flips, ip, loc)
        forward = tuple(r and i not in strided for i, r in enumerate(p.reversal))
        overrides = {**overrides, "window_reversal": b.dialect.bool_list(forward)}
    lhs_folds, rhs_folds = {}, {}
    for i in strided:
        s, plan = p.strides[i], plans[i]
        lhs_folds[dims.lhs_spatial[i]] = (max(ph.lhs_length for ph in plan.phases), s)
        rhs_folds[dims.rhs_spatial[i]] = (max(ph.taps for ph in plan.phases), s)
    lhs_zero, rhs_zero = zeros
    folded_lhs = _fold(b, lhs, lhs_shape, lhs_element, lhs_folds, lhs_zero, ip, loc)
    folded_rhs = _fold(b, rhs, p.rhs_shape, rhs_element, rhs_folds, rhs_zero, ip, loc)
    groups = p.feature_group_count

    def operands() -> Iterator[tuple[ir.Value, ir.Value]]:
        for choice in itertools.product(*(tap_groups(plans[i]) for i in strided)):
            lhs_windows, rhs_windows = {}, {}
            for i, group in zip(strided, choice, strict=True):
                first = group[0].lhs_start  # = the phase p, with unit rhs dilation
                lhs_windows[dims.lhs_spatial[i]] = (0, group[0].lhs_length, first, len(group))
                rhs_windows[dims.rhs_spatial[i]] = (0, group[0].taps, first, len(group))
            x = _unfold(b, folded_lhs, lhs_element, lhs_windows, dims.lhs_feature, groups, ip, loc)
            if lhs_layout is not None:
                shape = ir.RankedTensorType(x.type).shape
                x, _ = b.transpose(x, shape, lhs_element, lhs_layout, ip, loc)
            w = _unfold(b, folded_rhs, rhs_element, rhs_windows, dims.rhs_in_feature, 1, ip, loc)
            yield x, w

    return _sum_convs(b, conv, operands(), overrides, result_type, ip, loc)


def _sum_convs(
    b: build.Builder,
    conv: build.AnyOp,
    operands: Iterable[tuple[ir.Value, ir.Value]],
    overrides: dict[str, ir.Attribute],
    result_type: ir.Type,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """A clone of `conv` per (lhs, kernel) pair, each added to the sum as soon as it is built
    (`operands` builds a pair when asked, so each partial's slices sit right before it)."""
    partials: list[ir.Operation] = []
    total: ir.Value | None = None
    for x, w in operands:
        partial = b.rebuild_conv(conv, x, w, overrides, ip, result_type)
        partials.append(partial)
        result = partial.results[0]
        total = result if total is None else b.add(total, result, ip, loc)
    assert total is not None
    return partials, total


def explicit_stride(
    b: build.Builder,
    conv: build.AnyOp,
    lhs: ir.Value,
    lhs_shape: tuple[int, ...],
    rhs: ir.Value,
    types: tuple[ir.Type, ir.Type, ir.Type],
    p: ConvParams,
    overrides: dict[str, ir.Attribute],
    ip: ir.InsertionPoint,
    loc: ir.Location,
    merge: bool = True,
    zeros: tuple[Callable[[], ir.Value], Callable[[], ir.Value]] | None = None,
    lhs_layout: tuple[int, ...] | None = None,
) -> tuple[list[ir.Operation], ir.Value]:
    """The phases of `conv` on its zero-padded `lhs` (of `lhs_shape`) and kernel `rhs`, and
    their sum; with `merge`, phases of equal tap counts are one conv. `zeros` give the lhs and
    kernel zeros the folded form pads with (None: the types have none; slices are joined).
    `lhs_layout`: the lhs is in `p`'s layout and each folded partial's is transposed by it into
    the conv's.

    `types` are the lhs and rhs element types and the partials' result type; `overrides` are
    attributes every partial conv resets besides stride and rhs dilation. Returns the partial
    convs and the sum's value."""
    plans = plan_stride(p)
    n = p.num_spatial
    overrides = {
        **overrides,
        "window_strides": b.i64_list((1,) * n),
        "rhs_dilation": b.i64_list(tuple(d.rhs_dilation for d in plans)),
    }
    result_type = types[2]
    merge = merge and mergeable(p)
    if merge and zeros is not None and foldable(p):
        return _folded_stride(
            b, conv, lhs, lhs_shape, rhs, types, p, plans, overrides, zeros, ip, loc, lhs_layout
        )

    def operands() -> Iterator[tuple[ir.Value, ir.Value]]:
        for combos in _phase_groups(plans, merge):
            yield _joined(b, lhs, lhs_shape, rhs, types, p, combos, ip, loc)

    return _sum_convs(b, conv, operands(), overrides, result_type, ip, loc)


def _joined(
    b: build.Builder,
    lhs: ir.Value,
    lhs_shape: tuple[int, ...],
    rhs: ir.Value,
    types: tuple[ir.Type, ir.Type, ir.Type],
    p: ConvParams,
    combos: list[tuple[Phase, ...]],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[ir.Value, ir.Value]:
    """The lhs and kernel slices of `combos` joined on the features: one conv's operands."""
    dims = p.dims
    lhs_element, rhs_element, _ = types
    x = b.join_slices(
        lhs,
        lhs_shape,
        lhs_element,
        dims.lhs_spatial,
        [[ph.lhs_window for ph in c] for c in combos],
        dims.lhs_feature,
        p.feature_group_count,
        ip,
        loc,
    )
    w = b.join_slices(
        rhs,
        p.rhs_shape,
        rhs_element,
        dims.rhs_spatial,
        [[ph.rhs_window for ph in c] for c in combos],
        dims.rhs_in_feature,
        1,
        ip,
        loc,
    )
    return x, w
