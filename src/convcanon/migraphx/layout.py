"""Layout algebra of MIGraphX shapes: lens + strides <-> a flat memory buffer.

Everything here is a pure function of `(lens, strides)` so the type verifier, the interpreter and
the TOSA lowering agree on one rule:

- a dim of length 1 is *neutral*: its stride is irrelevant and it never moves;
- a dim with stride 0 (and length > 1) is *broadcast*: length 1 in memory;
- the other (*real*) dims, sorted by stride (largest first), must tile memory: the smallest
  stride is 1 and each outer stride is a multiple of, and at least the extent of, the next inner
  one. An inner dim whose outer stride exceeds its packed size is *enlarged* to `outer / inner`
  (a long stride, i.e. a gap that reads skip and writes fill with zeros).

The memory layout is the sorted, enlarged shape; reading a buffer is reshape, transpose, slice,
broadcast; writing is the inverse (and refused for broadcast layouts: the write is ambiguous).

Every other layout MIGraphX can describe (dims that overlap, such as a broadcast reshaped to
heads, or a smallest stride above 1) is a *gathered* view: element `i` sits at `sum(i * strides)`
of a buffer of MIGraphX's element space, `1 + sum((lens - 1) * strides)`. Reading one is a gather;
writing one is a scatter, refused when two elements share a position (the write is ambiguous).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class LayoutError(ValueError):
    """A (lens, strides) pair the memory-layout rule cannot represent; the message says why."""


@dataclass(frozen=True)
class MemoryLayout:
    """How a logical shape sits in memory.

    `perm[k]` is the logical dim held by memory dim k; `mem_shape[k]` is that memory dim's length
    (enlarged for gaps, 1 for broadcast dims). Reading is `flat.reshape(mem_shape)` transposed by
    `inverse_permutation(perm)`, sliced to the logical lens, then broadcast.
    """

    perm: tuple[int, ...]
    mem_shape: tuple[int, ...]


def standard_strides(lens: Sequence[int]) -> tuple[int, ...]:
    """Packed row-major strides of `lens`."""
    strides: list[int] = []
    running = 1
    for length in reversed(lens):
        strides.append(running)
        running *= length
    return tuple(reversed(strides))


def real_dims(lens: Sequence[int], strides: Sequence[int]) -> list[int]:
    """Dims that occupy memory: length > 1 and a non-zero stride."""
    return [d for d, (n, s) in enumerate(zip(lens, strides, strict=False)) if n > 1 and s > 0]


def broadcast_dims(lens: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Dims of length > 1 with stride 0 (size-1 dims are neutral, never broadcast)."""
    return tuple(d for d, (n, s) in enumerate(zip(lens, strides, strict=False)) if n > 1 and s == 0)


def check_layout(lens: Sequence[int], strides: Sequence[int]) -> str | None:
    """Why (lens, strides) has no memory layout, or None when it has one."""
    try:
        memory_layout(lens, strides)
    except LayoutError as err:
        return str(err)
    return None


def _memory_lengths(
    lens: Sequence[int], strides: Sequence[int], order: list[int]
) -> dict[int, int]:
    """Memory length of each real dim in `order` (largest stride first); raises LayoutError."""
    if not order:
        return {}
    if strides[order[-1]] != 1:
        raise LayoutError(
            f"the smallest non-zero stride is {strides[order[-1]]} (dim {order[-1]}), must be 1"
        )
    lengths = {order[0]: lens[order[0]]}
    for outer, inner in zip(order, order[1:], strict=False):
        extent = strides[inner] * lens[inner]
        if strides[outer] < extent:
            raise LayoutError(
                f"dims {outer} and {inner} overlap in memory: stride {strides[outer]} of dim "
                f"{outer} is less than the extent {extent} of dim {inner}"
            )
        if strides[outer] % strides[inner]:
            raise LayoutError(
                f"stride {strides[outer]} of dim {outer} is not a multiple of stride "
                f"{strides[inner]} of dim {inner}"
            )
        lengths[inner] = strides[outer] // strides[inner]
    return lengths


def memory_layout(lens: Sequence[int], strides: Sequence[int]) -> MemoryLayout:
    """The memory layout of (lens, strides); raises LayoutError saying why there is none."""
    if len(lens) != len(strides):
        raise LayoutError(f"{len(lens)} dims but {len(strides)} strides")
    if any(n < 1 for n in lens):
        raise LayoutError(f"dim lengths must be >= 1, got {list(lens)}")
    if any(s < 0 for s in strides):
        raise LayoutError(f"strides must be >= 0, got {list(strides)}")
    real = real_dims(lens, strides)
    order = sorted(real, key=lambda d: (-strides[d], d))
    lengths = _memory_lengths(lens, strides, order)
    real_set = set(real)
    memory_order = iter(order)
    perm = tuple(next(memory_order) if d in real_set else d for d in range(len(lens)))
    mem_shape = tuple(lengths[d] if d in real_set else 1 for d in perm)
    return MemoryLayout(perm, mem_shape)


def c_order(value: np.ndarray) -> np.ndarray:
    """`value` in C order, copied only if needed. Unlike `np.ascontiguousarray` it keeps 0-d
    arrays 0-d, so scalars (`<f32>`) stay scalars."""
    return np.asarray(value, order="C")


def inverse_permutation(perm: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for position, dim in enumerate(perm):
        inverse[dim] = position
    return tuple(inverse)


def stride_permutation(lens: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """Logical dims in memory order (outermost first); identity for standard layouts. Defined
    for every layout (real dims sorted by stride, the others where they are), tiled or not."""
    real = real_dims(lens, strides)
    order = iter(sorted(real, key=lambda d: (-strides[d], d)))
    real_set = set(real)
    return tuple(next(order) if d in real_set else d for d in range(len(lens)))


def tiles_memory(lens: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether reshape, transpose, slice and broadcast read this layout (else: a gather)."""
    return check_layout(lens, strides) is None


def element_space(lens: Sequence[int], strides: Sequence[int]) -> int:
    """MIGraphX's element space: one past the furthest element (0 for no element)."""
    if any(n == 0 for n in lens):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(lens, strides, strict=True))


def element_offsets(lens: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """The buffer position of every element, an int64 array of shape `lens`."""
    offsets = np.zeros(tuple(lens), dtype=np.int64)
    for d, (n, s) in enumerate(zip(lens, strides, strict=True)):
        shape = [1] * len(lens)
        shape[d] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return offsets


MAX_OVERLAP_CHECK = 1 << 24  # elements whose positions are compared one by one


def overlap_reason(lens: Sequence[int], strides: Sequence[int]) -> str | None:
    """Why two elements of this layout share a buffer position, or None when none do.

    A tiled layout overlaps only where it broadcasts. Otherwise the dims, sorted by stride, are
    disjoint when each stride passes the span of the smaller ones; failing that (the strides
    may still interleave without touching), up to MAX_OVERLAP_CHECK positions are compared."""
    bcast = broadcast_dims(lens, strides)
    if bcast:
        return f"stride 0 on dims {list(bcast)}"
    if tiles_memory(lens, strides):
        return None
    order = sorted(real_dims(lens, strides), key=lambda d: (strides[d], d))
    span = 0
    for d in order:
        if strides[d] <= span:
            if math.prod(lens) > MAX_OVERLAP_CHECK:
                return f"dim {d}'s stride {strides[d]} is within the span {span} of smaller ones"
            return _shared_position(element_offsets(lens, strides).reshape(-1), lens)
        span += (lens[d] - 1) * strides[d]
    return None


def _shared_position(offsets: np.ndarray, lens: Sequence[int]) -> str | None:
    """The first two elements (in row-major order) that share a position, if any do."""
    order = np.argsort(offsets, kind="stable")
    same = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
    if not same.size:
        return None
    a, b = sorted((int(order[same[0]]), int(order[same[0] + 1])))
    first, second = ([int(i) for i in np.unravel_index(k, tuple(lens))] for k in (a, b))
    return f"elements {first} and {second} share position {int(offsets[a])}"


def flat_size(lens: Sequence[int], strides: Sequence[int]) -> int:
    """Number of elements of the flat buffer that holds a value of this layout: the tiled
    memory shape's, else MIGraphX's element space."""
    if not tiles_memory(lens, strides):
        return element_space(lens, strides)
    return math.prod(memory_layout(lens, strides).mem_shape)


def _logical_slices(lens: Sequence[int], layout: MemoryLayout) -> tuple[slice, ...]:
    mem_in_logical = [layout.mem_shape[p] for p in inverse_permutation(layout.perm)]
    return tuple(slice(0, min(n, m)) for n, m in zip(lens, mem_in_logical, strict=False))


def read_buffer(flat: np.ndarray, lens: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """The logical value a flat buffer holds: reshape, transpose, slice off gaps, broadcast
    (a gather for a layout that does not tile memory)."""
    size = flat_size(lens, strides)
    if flat.ndim != 1 or flat.size != size:
        raise LayoutError(f"expected a flat buffer of {size} elements, got shape {flat.shape}")
    if not tiles_memory(lens, strides):
        return flat[element_offsets(lens, strides)]
    layout = memory_layout(lens, strides)
    memory = flat.reshape(layout.mem_shape)
    logical = memory.transpose(inverse_permutation(layout.perm))[_logical_slices(lens, layout)]
    return c_order(np.broadcast_to(logical, tuple(lens)))


def write_buffer(value: np.ndarray, lens: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """The flat buffer holding `value`: transpose to memory order, zero-fill gaps, reshape (a
    scatter into zeros for a layout that does not tile memory)."""
    if tuple(value.shape) != tuple(lens):
        raise LayoutError(f"value of shape {list(value.shape)} written as lens {list(lens)}")
    bcast = broadcast_dims(lens, strides)
    if bcast:
        raise LayoutError(
            f"cannot write to a broadcast layout (stride 0 on dims {list(bcast)}): "
            "the write is ambiguous"
        )
    if not tiles_memory(lens, strides):
        overlap = overlap_reason(lens, strides)
        if overlap is not None:
            raise LayoutError(
                f"cannot write to an overlapping layout ({overlap}): the write is ambiguous"
            )
        flat = np.zeros(element_space(lens, strides), dtype=value.dtype)
        flat[element_offsets(lens, strides)] = value
        return flat
    layout = memory_layout(lens, strides)
    memory = np.zeros(layout.mem_shape, dtype=value.dtype)
    view = memory.transpose(inverse_permutation(layout.perm))
    view[_logical_slices(lens, layout)] = value
    return memory.reshape(-1)
