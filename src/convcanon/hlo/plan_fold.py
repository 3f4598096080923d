"""The space-to-depth fold of a conv's operand and the unfolds that read its phases: plain
records of the fold's crop or zero extension and split, and of each unfold's crop, permutation
and shapes, so the emitter builds them without reading a shape. `FoldSplit` computes them for
one operand."""

from __future__ import annotations

import math
from collections.abc import Sequence

from convcanon.hlo.conv_params import DYNAMIC
from convcanon.hlo.plan_layout import Permutation, moves_data
from convcanon.records import NamedTuple


class Fold(NamedTuple):
    """Space-to-depth of an operand: each axis in `folds` cropped (to `limit`) or zero-padded
    (by `high`) at its end to outer * s and split into (outer, s), phase p of that dim being
    index p of the s axis. The split (of shape `split`) is built only if an unfold reads it
    (`split_read`); the others reshape the cropped or padded operand themselves, and where
    that has a dynamic extent the fold builds its size for them (`builds_size`)."""

    folds: tuple[tuple[int, int, int], ...]  # (axis, outer, s)
    limit: tuple[int, ...] | None
    high: tuple[int, ...] | None
    split: tuple[int, ...]
    split_read: bool
    builds_size: bool


class Unfold(NamedTuple):
    """A partial conv's operand read from a fold: per folded axis (outer start, outer length,
    first phase, phases), the phase axes moved into `feature` after its `groups` blocks; then
    transposed by `layout` (the fold's layout back to the conv's), if any. Built as: the fold's
    split cropped to the phase windows (`crop`, if any), reshaped to `split` (the feature axis
    split into its groups), permuted by `order` and reshaped to `merged`; `reads_split` when it
    slices or transposes the fold's split itself, else a reshape of what the fold split."""

    windows: tuple[tuple[int, int, int, int, int], ...]  # (axis, o0, on, p0, pn)
    feature: int
    groups: int
    layout: Permutation | None
    crops: tuple[tuple[int, int, int], ...]  # (axis, start, length) of an axis that is not folded
    crop: tuple[tuple[int, ...], tuple[int, ...]] | None
    split: tuple[int, ...]
    order: Permutation
    merged: tuple[int, ...]
    reads_split: bool


class FoldSplit(NamedTuple):
    """An operand (of `shape`) cropped (`limit`) or zero-padded (`high`) at the end of each
    folded axis to outer * s, then split into (outer, s) per folded axis (`split`); `axes[a]`
    lists the axes of original axis `a` in the split."""

    folds: tuple[tuple[int, int, int], ...]
    limit: tuple[int, ...] | None
    high: tuple[int, ...] | None
    split: tuple[int, ...]
    axes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, shape: tuple[int, ...], folds: tuple[tuple[int, int, int], ...]) -> FoldSplit:
        whole = {axis: (outer, s) for axis, outer, s in folds}
        target = list(shape)
        for axis, (outer, s) in whole.items():
            target[axis] = outer * s
        limit = high = None
        if any(t < e for t, e in zip(target, shape, strict=True)):
            limit = tuple(min(t, e) for t, e in zip(target, shape, strict=True))
            shape = limit
        if any(t > e for t, e in zip(target, shape, strict=True)):
            high = tuple(t - e for t, e in zip(target, shape, strict=True))
        split: list[int] = []
        axes: list[tuple[int, ...]] = []
        for axis, extent in enumerate(target):
            parts = list(whole[axis]) if axis in whole else [extent]
            axes.append(tuple(range(len(split), len(split) + len(parts))))
            split += parts
        return cls(folds, limit, high, tuple(split), tuple(axes))

    def fold(self, readers: Sequence[object]) -> Fold:
        """The fold, its split built if one of the unfold `readers` reads it."""
        read = any(isinstance(u, Unfold) and u.reads_split for u in readers)
        return Fold(
            folds=self.folds,
            limit=self.limit,
            high=self.high,
            split=self.split,
            split_read=read,
            builds_size=not read and DYNAMIC in self.split,
        )

    def _cropped(
        self,
        windows: tuple[tuple[int, int, int, int, int], ...],
        crops: tuple[tuple[int, int, int], ...],
    ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]] | None, tuple[int, ...]]:
        """The crop (start, limit) of the split to the phase `windows` and the `crops` of
        unfolded axes (None: the whole split), and the shape it leaves (a dynamic extent kept)."""
        axes, shape = self.axes, self.split
        start, limit = [0] * len(shape), list(shape)
        for axis, o0, on, p0, pn in windows:
            outer, phase = axes[axis]
            start[outer], limit[outer] = o0, o0 + on
            start[phase], limit[phase] = p0, p0 + pn
        for axis, first, length in crops:
            (whole,) = axes[axis]
            start[whole], limit[whole] = first, first + length
        if start == [0] * len(shape) and limit == list(shape):
            return None, shape
        cut = tuple(hi - lo if d >= 0 else d for d, lo, hi in zip(shape, start, limit, strict=True))
        return (tuple(start), tuple(limit)), cut

    def unfold(
        self,
        windows: tuple[tuple[int, int, int, int, int], ...],
        feature: int,
        groups: int,
        layout: Permutation | None,
        crops: tuple[tuple[int, int, int], ...],
    ) -> Unfold:
        """The phase `windows` of the split, with the phase axes moved into `feature` (after
        its `groups` blocks, in dim order): the crop of the phase windows, the split of the
        feature axis into its groups, and the permutation and shape that move the phase axes
        behind them."""
        axes = self.axes
        crop, shape = self._cropped(windows, crops)
        (feature_axis,) = axes[feature]
        parts = [groups, shape[feature_axis] // groups] if groups > 1 else [shape[feature_axis]]
        split = [*shape[:feature_axis], *parts, *shape[feature_axis + 1 :]]

        def at(axis: int) -> int:  # an axis of `shape` in `split`
            return axis + (len(parts) - 1 if axis > feature_axis else 0)

        windowed = [axis for axis, *_ in windows]
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
        # a reshape of the split is a reshape of what was split: only a crop or a transpose of
        # the split's own axes reads it
        reads = crop is not None or groups == 1 and moves_data(self.split, order)
        return Unfold(
            windows=windows,
            feature=feature,
            groups=groups,
            layout=layout,
            crops=crops,
            crop=crop,
            split=tuple(split),
            order=tuple(order),
            merged=tuple(merged),
            reads_split=reads,
        )
