"""Result lens of every migraphx op, as pure functions over operand lens and attribute values.

Shared by the op verifiers, the program importer (which checks each declared result shape) and
the interpreter (which needs the same conv padding). Each raises ShapeError saying what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Lens = tuple[int, ...]


class ShapeError(ValueError):
    """Operands or attributes an op cannot accept; the message says which and why."""


def broadcast_lens(*shapes: Sequence[int]) -> Lens:
    """Numpy-style (right-aligned) broadcast of several lens."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0} - {1}
        if len(dims) > 1:
            raise ShapeError(f"operand lens {[list(s) for s in shapes]} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def normalize_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def transpose_lens(lens: Sequence[int], permutation: Sequence[int]) -> Lens:
    if sorted(permutation) != list(range(len(lens))):
        raise ShapeError(
            f"permutation {list(permutation)} is not a permutation of {len(lens)} dims"
        )
    return tuple(lens[p] for p in permutation)


def reshape_lens(lens: Sequence[int], dims: Sequence[int]) -> Lens:
    """MIGraphX reshape: 0 copies the input dim, one -1 is inferred."""
    out = [lens[i] if d == 0 and i < len(lens) else d for i, d in enumerate(dims)]
    total = math.prod(lens)
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise ShapeError(
            f"reshape dims {list(dims)} are invalid (at most one -1, no other negative)"
        )
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ShapeError(f"cannot infer -1 in reshape dims {list(dims)} from {total} elements")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise ShapeError(
            f"reshape from {list(lens)} ({total} elements) to {out} ({math.prod(out)} elements)"
        )
    return tuple(out)


def broadcast_axis_lens(lens: Sequence[int], axis: int, out_lens: Sequence[int]) -> Lens:
    """MIGraphX broadcast: the input's dims sit at out_lens[axis:axis+rank]."""
    if axis < 0 or axis + len(lens) > len(out_lens):
        raise ShapeError(f"broadcast axis {axis} does not fit {list(lens)} into {list(out_lens)}")
    for k, n in enumerate(lens):
        if n not in (1, out_lens[axis + k]):
            raise ShapeError(
                f"broadcast: input dim {k} has length {n} but out_lens[{axis + k}] is "
                f"{out_lens[axis + k]}"
            )
    return tuple(out_lens)


def _non_unit(lens: Sequence[int]) -> Lens:
    return tuple(n for n in lens if n != 1)


def multibroadcast_placement(
    lens: Sequence[int], out_lens: Sequence[int], out_strides: Sequence[int] | None = None
) -> Lens:
    """The operand's lens at the result's rank: the operand reshaped to this (only size-1 dims
    come or go) broadcasts numpy-style to `out_lens`.

    MIGraphX aligns the operand with the trailing dims of out_lens, each dim equal or 1, and
    gives the result the operand's strides there and 0 elsewhere. rocMLIR's lowering reads the
    placement from the result's strides instead: when the rank grows, the operand is reshaped
    to out_lens with every stride-0 dim set to 1. So `<1x32xi32, 32x1> -> <1x32x1x1024xi32,
    32x1x0x0>` holds the operand at dims 0 and 1. Both agree on every result MIGraphX computes;
    the strides decide when they name the operand's dims (rocMLIR runs such kernels), else
    MIGraphX's rule does.
    """
    if len(lens) > len(out_lens):
        raise ShapeError(
            f"multibroadcast cannot broadcast {list(lens)} to {list(out_lens)}: the input has "
            "more dims than out_lens"
        )
    out_lens = tuple(out_lens)
    offset = len(out_lens) - len(lens)
    by_layout = offset > 0 and out_strides is not None and len(out_strides) == len(out_lens)
    placed: Lens = ()
    if by_layout:
        assert out_strides is not None
        placed = tuple(1 if s == 0 else n for n, s in zip(out_lens, out_strides, strict=True))
        if _non_unit(placed) == _non_unit(lens):
            return placed
    for k, n in enumerate(lens):
        if n not in (1, out_lens[offset + k]):
            layout = (
                "; nor does the result's layout place it: its non-broadcast dims hold "
                f"{list(_non_unit(placed))}, the input {list(_non_unit(lens))} (size-1 dims aside)"
                if by_layout
                else ""
            )
            raise ShapeError(
                f"multibroadcast cannot broadcast {list(lens)} to {list(out_lens)}: input dim "
                f"{k} has length {n}, neither 1 nor out_lens[{offset + k}] = "
                f"{out_lens[offset + k]} (MIGraphX aligns the input with the trailing dims)"
                f"{layout}"
            )
    return (1,) * offset + tuple(lens)


def slice_bounds(length: int, start: int, end: int) -> tuple[int, int]:
    """MIGraphX slice bounds: negatives count from the end, then clamped to [0, length]."""
    start = start + length if start < 0 else start
    end = end + length if end < 0 else end
    start = min(max(start, 0), length)
    end = min(max(end, start), length)
    return start, end


def slice_lens(
    lens: Sequence[int], axes: Sequence[int], starts: Sequence[int], ends: Sequence[int]
) -> Lens:
    if not len(axes) == len(starts) == len(ends):
        raise ShapeError("slice axes, starts and ends must have the same length")
    out = list(lens)
    for axis, start, end in zip(axes, starts, ends, strict=False):
        a = normalize_axis(axis, len(lens))
        lo, hi = slice_bounds(lens[a], start, end)
        out[a] = hi - lo
    return tuple(out)


def reduce_axes(rank: int, axes: Sequence[int]) -> list[int]:
    """The dims a reduction folds, sorted: `axes` normalized, or every dim when `axes` is empty
    (MIGraphX's reduce_op::tune_axes: `reduce_sum[axes={}]` of one operand reduces them all)."""
    if not axes:
        return list(range(rank))
    return sorted({normalize_axis(a, rank) for a in axes})


def reduce_lens(lens: Sequence[int], axes: Sequence[int]) -> Lens:
    picked = set(reduce_axes(len(lens), axes))
    return tuple(1 if d in picked else n for d, n in enumerate(lens))


def dot_lens(a: Sequence[int], b: Sequence[int]) -> Lens:
    """Batched matmul: [..., M, K] x [..., K, N] -> [..., M, N] with equal batch dims."""
    if len(a) < 2 or len(a) != len(b):
        raise ShapeError(f"dot needs operands of equal rank >= 2, got {list(a)} and {list(b)}")
    if tuple(a[:-2]) != tuple(b[:-2]):
        raise ShapeError(f"dot batch dims differ: {list(a[:-2])} vs {list(b[:-2])}")
    if a[-1] != b[-2]:
        raise ShapeError(f"dot contracting dims differ: {a[-1]} (of {list(a)}) vs {b[-2]}")
    return (*a[:-2], a[-2], b[-1])


def conv_padding(
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    padding: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    padding_mode: int,
    what: str = "convolution",
) -> tuple[Lens, Lens]:
    """Explicit (begin, end) pads per spatial dim.

    Mode 0 uses `padding` (`{b0, b1, ..., e0, e1, ...}`, or one symmetric value per dim);
    mode 1 is `same` (output = ceil(in / stride), extra padding at the end); 2 is `valid`.
    """
    sd = len(in_spatial)
    if padding_mode == 0:
        if len(padding) not in (sd, 2 * sd):
            raise ShapeError(f"{what} padding needs {sd} or {2 * sd} values, got {len(padding)}")
        if any(p < 0 for p in padding):
            raise ShapeError(f"{what} padding must be >= 0, got {list(padding)}")
        if len(padding) == sd:
            return tuple(padding), tuple(padding)
        return tuple(padding[:sd]), tuple(padding[sd:])
    if padding_mode == 2:
        return (0,) * sd, (0,) * sd
    if padding_mode != 1:
        raise ShapeError(
            f"padding_mode must be 0 (explicit), 1 (same) or 2 (valid), got {padding_mode}"
        )
    begins: list[int] = []
    ends: list[int] = []
    for n, k, s, d in zip(in_spatial, kernel, stride, dilation, strict=False):
        out = -(-n // s)
        total = max((out - 1) * s + d * (k - 1) + 1 - n, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return tuple(begins), tuple(ends)


def conv_lens(
    input_lens: Sequence[int],
    filter_lens: Sequence[int],
    *,
    padding: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    group: int,
    padding_mode: int = 0,
) -> Lens:
    """[N, C, *S] conv [O, C/group, *K] -> [N, O, *S']."""
    if len(input_lens) != len(filter_lens) or not 3 <= len(input_lens) <= 5:
        raise ShapeError(
            f"convolution needs input and filter of equal rank 3..5 (1-D..3-D), got "
            f"{list(input_lens)} and {list(filter_lens)}"
        )
    sd = len(input_lens) - 2
    if len(stride) != sd or len(dilation) != sd:
        raise ShapeError(f"convolution stride and dilation need {sd} values each")
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation):
        raise ShapeError("convolution stride and dilation must be >= 1")
    n, c = input_lens[:2]
    o, c_per_group = filter_lens[:2]
    if group < 1 or c != c_per_group * group or o % group:
        raise ShapeError(
            f"convolution with group={group}: input has {c} channels, filter {list(filter_lens)} "
            f"expects {c_per_group} per group and {o} outputs divisible by the group count"
        )
    begins, ends = conv_padding(
        input_lens[2:], filter_lens[2:], padding, stride, dilation, padding_mode
    )
    spatial = [
        window_count(size, d * (k - 1) + 1, s, b, e)
        for size, k, s, d, b, e in zip(
            input_lens[2:], filter_lens[2:], stride, dilation, begins, ends, strict=False
        )
    ]
    return (n, o, *spatial)


def window_count(
    size: int,
    window: int,
    stride: int,
    begin: int,
    end: int,
    ceil: bool = False,
    what: str = "convolution",
) -> int:
    """Placements of a (dilated) `window` at `stride` over `size` padded by `begin` and `end`:
    MIGraphX's output extent of a convolution or pooling, rounded up in pooling's ceil mode."""
    span = size + begin + end - window
    if span < 0:
        raise ShapeError(
            f"{what} window {window} is larger than the padded input {size + begin + end}"
        )
    return (-(-span // stride) if ceil else span // stride) + 1


def _axis_in(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(
            f"axis {axis} is out of bounds for {what} with rank {rank} "
            f"(valid range is [{-rank}, {rank - 1}])"
        )
    return axis % rank


def squeeze_axes(lens: Sequence[int], axes: Sequence[int]) -> list[int]:
    """The dims squeeze drops: `axes` (each must have length 1), or every size-1 dim."""
    if not axes:
        return [d for d, n in enumerate(lens) if n == 1]
    picked = sorted({_axis_in(a, len(lens), "input") for a in axes})
    for a, d in zip(axes, picked, strict=False):
        if lens[d] != 1:
            raise ShapeError(
                f"cannot squeeze axis {a} (normalized to {d}) which has size {lens[d]} "
                "(expected size 1)"
            )
    return picked


def unsqueeze_axes(rank: int, axes: Sequence[int]) -> list[int]:
    """Result positions of the inserted size-1 dims (negatives count from the result's end)."""
    out_rank = rank + len(axes)
    picked = sorted({_axis_in(a, out_rank, "output") for a in axes})
    if len(picked) != len(axes):
        raise ShapeError(f"unsqueeze axes {list(axes)} repeat a position")
    return picked


def insert_unit_dims(lens: Sequence[int], positions: Sequence[int]) -> Lens:
    rest = iter(lens)
    wanted = set(positions)
    return tuple(1 if d in wanted else next(rest) for d in range(len(lens) + len(positions)))


def unsqueeze_lens(lens: Sequence[int], axes: Sequence[int], steps: Sequence[int]) -> Lens:
    """MIGraphX's unsqueeze: a dim of `steps[k]` (1 when steps run out) at result position
    `axes[k]`, taken out of the input dim it precedes (which it must divide); the result is the
    input reshaped row-major, and only size-1 dims are new when every step is 1."""
    positions = unsqueeze_axes(len(lens), axes)
    if len(steps) > len(axes):
        raise ShapeError(f"unsqueeze has {len(steps)} steps for {len(axes)} axes")
    rank = len(lens) + len(axes)
    step_at = dict.fromkeys(positions, 1)
    for k, step in enumerate(steps):
        step_at[_axis_in(axes[k], rank, "output")] = step
    rest, out, d = list(lens), [], 0
    for position in range(rank):
        step = step_at.get(position)
        if step is None:
            out.append(rest[d])
            d += 1
            continue
        if step < 1:
            raise ShapeError(f"unsqueeze step {step} at axis {position} must be >= 1")
        if d < len(rest) and rest[d] % step == 0:
            rest[d] //= step
        elif step != 1:
            of = f"input dim {d} of {rest[d]}" if d < len(rest) else "no input dim (it is last)"
            raise ShapeError(f"unsqueeze step {step} at axis {position} does not divide {of}")
        out.append(step)
    return tuple(out)


def flatten_lens(lens: Sequence[int], axis: int) -> Lens:
    rank = len(lens)
    if not -rank <= axis <= rank:
        raise ShapeError(f"flatten axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    return (math.prod(lens[:axis]), math.prod(lens[axis:]))


def gather_lens(data: Sequence[int], indices: Sequence[int], axis: int) -> Lens:
    a = _axis_in(axis, len(data), "data")
    return (*data[:a], *indices, *data[a + 1 :])


def scatter_check(
    data: Sequence[int], indices: Sequence[int], updates: Sequence[int], axis: int
) -> None:
    if not len(data) == len(indices) == len(updates):
        raise ShapeError(
            f"data, indices, and updates must have the same rank, got {len(data)}, "
            f"{len(indices)}, and {len(updates)}"
        )
    a = _axis_in(axis, len(data), "data")
    if tuple(indices) != tuple(updates):
        raise ShapeError("indices and updates must have the same shape")
    for d, (n, m) in enumerate(zip(data, indices, strict=True)):
        if d != a and m > n:
            raise ShapeError(f"indices dim {d} has length {m}, more than the data's {n}")


POOLING_MODES = ("average", "max", "lpnorm")
"""MIGraphX's pooling_mode, in its enum's order (an old program prints the number)."""


@dataclass(frozen=True)
class PoolWindow:
    """One pooling's windows per spatial dim, checked: what the kernel and the lowering read."""

    mode: str
    lengths: Lens
    stride: Lens
    dilations: Lens
    begins: Lens
    ends: Lens
    ceil_mode: bool
    count_include_pad: bool
    lp_order: int
    out_spatial: Lens

    def clip_ends(self, in_spatial: Sequence[int]) -> Lens:
        """Where MIGraphX clips each window (its taps at or past it are not counted): the
        input's end, or with count_include_pad (not max) the input's end plus the BEGIN pad,
        as MIGraphX's reference computes it, whatever the end pad."""
        if self.count_include_pad and self.mode != "max":
            return tuple(n + b for n, b in zip(in_spatial, self.begins, strict=True))
        return tuple(in_spatial)


def pool_window(
    input_lens: Sequence[int],
    mode: str,
    padding: Sequence[int],
    stride: Sequence[int],
    lengths: Sequence[int],
    dilations: Sequence[int] | None = None,
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    lp_order: int = 2,
) -> PoolWindow:
    """MIGraphX's pooling of [N, C, *S] (any number of spatial dims): its windows and extents."""
    if len(input_lens) < 3:
        raise ShapeError(
            f"pooling needs an input of rank >= 3 ([N, C, *S]), got {list(input_lens)}"
        )
    sd = len(input_lens) - 2
    dilations = [1] * sd if dilations is None else dilations
    if mode not in POOLING_MODES:
        raise ShapeError(f"pooling mode must be one of {', '.join(POOLING_MODES)}, got `{mode}`")
    if not len(stride) == len(lengths) == len(dilations) == sd:
        raise ShapeError(
            f"pooling of {sd} spatial dims needs {sd} stride, lengths and dilations values each, "
            f"got {len(stride)}, {len(lengths)} and {len(dilations)}"
        )
    if min(*lengths, *stride, *dilations) < 1:
        raise ShapeError("pooling lengths, stride and dilations must be >= 1")
    for name, flag in (("ceil_mode", ceil_mode), ("count_include_pad", count_include_pad)):
        if flag not in (0, 1):
            raise ShapeError(f"pooling {name} must be 0 or 1, got {flag}")
    if mode == "lpnorm" and lp_order < 1:
        raise ShapeError(f"pooling lp_order must be >= 1, got {lp_order}")
    begins, ends = conv_padding(input_lens[2:], lengths, padding, stride, dilations, 0, "pooling")
    out = tuple(
        window_count(n, d * (k - 1) + 1, s, b, e, bool(ceil_mode), "pooling")
        for n, k, s, d, b, e in zip(
            input_lens[2:], lengths, stride, dilations, begins, ends, strict=True
        )
    )
    return PoolWindow(
        mode,
        tuple(lengths),
        tuple(stride),
        tuple(dilations),
        begins,
        ends,
        bool(ceil_mode),
        bool(count_include_pad),
        lp_order,
        out,
    )


def concat_lens(inputs: Sequence[Sequence[int]], axis: int) -> Lens:
    """MIGraphX's concat: at least one input, all of one rank, equal but along `axis` (negative
    counts from the end, as MIGraphX normalizes it), whose lengths add up."""
    if not inputs:
        raise ShapeError("concat needs at least one input")
    first = inputs[0]
    rank = len(first)
    if rank == 0:
        raise ShapeError("concat needs inputs of rank >= 1, got a scalar")
    a = _axis_in(axis, rank, "concat's inputs")
    for k, lens in enumerate(inputs):
        if len(lens) != rank:
            raise ShapeError(
                f"concat input #{k} has rank {len(lens)}, input #0 rank {rank} ({list(lens)} vs "
                f"{list(first)})"
            )
        for d, (n, m) in enumerate(zip(lens, first, strict=True)):
            if d != a and n != m:
                raise ShapeError(
                    f"concat input #{k} has length {n} on dim {d}, input #0 {m}: the inputs "
                    f"differ only along axis {a}"
                )
    return (*first[:a], sum(lens[a] for lens in inputs), *first[a + 1 :])


PAD_MODES = ("constant", "reflect", "edge")
"""MIGraphX's pad::pad_op_mode_t, in its enum's order (MIGraphX prints the number)."""


def pad_lens(lens: Sequence[int], pads: Sequence[int]) -> Lens:
    """MIGraphX's pad: `pads` holds every dim's begin, then every dim's end. A negative pad
    crops, as MIGraphX's reference computes it (an output index reads input index minus the
    begin pad); every result dim must keep at least one element."""
    rank = len(lens)
    if len(pads) != 2 * rank:
        raise ShapeError(
            f"pad of a rank-{rank} input needs {2 * rank} pads (every begin, then every end), "
            f"got {len(pads)}"
        )
    out = tuple(n + b + e for n, b, e in zip(lens, pads[:rank], pads[rank:], strict=True))
    for d, (n, m) in enumerate(zip(lens, out, strict=True)):
        if m < 1:
            raise ShapeError(
                f"pads {list(pads)} leave dim {d} of length {n} with {m} elements (negative "
                "pads crop; a dim must keep at least one)"
            )
    return out
