"""The layout moves of a conv's rewrite: the whole conv computed channels-last between
transposes, or only its lhs laid out channels-last before its pad and fold (where an engine's
own channels-last conv then reads them). Plain permutations of `ConvParams`."""

from __future__ import annotations

from collections.abc import Sequence

from convcanon.hlo.conv_params import ConvParams
from convcanon.records import NamedTuple

Permutation = tuple[int, ...]


class ChannelsLast(NamedTuple):
    """The conv computed as `[b, 0.., f]x[0.., i, o]->[b, 0.., f]` between transposes."""

    lhs: Permutation
    rhs: Permutation
    back: Permutation  # the result's, from channels-last to the conv's layout
    params: ConvParams  # the channels-last conv's
    # whether the lhs is transposed channels-last: not where nothing reads it (an all-zero
    # result, unless its dynamic size is read from the moved lhs)
    moves_lhs: bool
    # whether the kernel is transposed channels-last as a value of its own: not where nothing
    # reads it (an all-zero result), nor where each output phase group's kernel rearrangement
    # starts by transposing the kernel, which then absorbs this move (`Rearrangement.move`)
    moves_kernel: bool


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
    then sees the pad, the phase slices and the folds in the layout it computes in. The kernel
    and the lhs are moved as values of their own until the rewrite's plan says otherwise."""
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
    return ChannelsLast(
        lhs=lhs, rhs=rhs, back=inverse(out), params=twin, moves_lhs=True, moves_kernel=True
    )


def lhs_channels_last(p: ConvParams) -> tuple[Permutation | None, ConvParams, Permutation | None]:
    """The move of a conv's lhs to `[b, 0.., f]` before its pad (and fold), `p` describing that
    lhs, and the permutation back to the conv's layout (None twice: already channels-last)."""
    order = channels_last_permutations(p)[0]
    if order == tuple(range(len(order))):
        return None, p, None
    n = p.num_spatial
    dims = p.dims._replace(lhs_batch=0, lhs_spatial=tuple(range(1, n + 1)), lhs_feature=n + 1)
    return order, p._replace(lhs_shape=permuted(p.lhs_shape, order), dims=dims), inverse(order)


def permuted(shape: tuple[int, ...], permutation: Permutation) -> tuple[int, ...]:
    return tuple(shape[a] for a in permutation)


def moves_data(shape: Sequence[int], permutation: Sequence[int]) -> bool:
    """Whether permuting the dims of `shape` reorders its elements (moves a non-unit dim past
    another), so that it is a transpose and not a reshape."""
    moved = [d for d in permutation if shape[d] != 1]
    return moved != sorted(moved)
