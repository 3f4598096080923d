"""Channels-last convs: `conv-layout=channels-last` moves a conv to `[b, 0.., f]x[0.., i, o]`.

`conv(x, w, dims)` -> `transpose(conv(transpose(x), transpose(w), channels-last), back)`: the same
sums over the same elements, so the rewrite is exact; only where each role's axis sits changes.
An engine that runs its convs channels-last (XLA CPU, most CPU and accelerator libraries) then
sees the explicit pad, the phase slices and the space-to-depth folds in the layout it computes
in: XLA CPU folds a zero pad back into a conv only when the pad feeds the conv directly, and its
layout assignment does not carry a channels-last layout back through a slice or a pad, so in a
channels-first program every explicit pad and phase slice would cost a transposed copy.

Without it (`keep`), a strided conv whose phase groups read one space-to-depth fold still folds
its lhs channels-last (`lhs_channels_last`), and a unit-stride conv's explicit pad is mostly
written channels-last (`pad_channels_last`): the convs keep their dimension numbers, and only
the data movement in front of them is laid out as such an engine computes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from jaxlib.mlir import ir

from convcanon.hlo import build
from convcanon.hlo.params import ConvParams


def _inverse(permutation: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(permutation)
    for position, axis in enumerate(permutation):
        inverse[axis] = position
    return tuple(inverse)


def channels_last_permutations(
    p: ConvParams,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
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


def batch_inside(p: ConvParams) -> bool:
    """Whether the lhs's batch is not its outermost dim: a kernel-gradient conv (`jax.grad`'s,
    `[f, 0.., b]`: the activation with batch and feature swapped) is one. No engine computes a
    conv in that layout; each moves the lhs to `[b, 0.., f]` first."""
    return p.dims.lhs_batch != 0


# A pad that grows the lhs by more than this stays where the conv reads it (see below).
MAX_ROUTED_PAD_GROWTH = (3, 2)


def pad_channels_last(p: ConvParams) -> bool:
    """Whether a unit-stride conv's explicit pad is written channels-last (transpose to
    `[b, 0.., f]`, pad, transpose back) while the conv keeps its dimension numbers.

    An engine that computes convs channels-last cancels the transpose back against its own, so
    the pad feeds its conv directly and it folds the pad back (XLA CPU does). Padded in the
    conv's own layout, the pad is fused into the engine's transpose instead, and the conv runs
    unpadded: on XLA CPU's YNNPACK a 3x3 conv on the padded copy is x1.4-x2.6 slower than the
    padded conv at 14x14-112x112. Always so for a kernel-gradient conv (`batch_inside`).

    Where the pad grows the lhs by more than half (a 3x3 conv on 7x7 and smaller), it stays in
    place: the VALID conv costs little more there (x1.1), and with the pad folded back XLA CPU
    grows the library fusion of a following reduction (a ResNet's global pool) up through the
    whole last stage, which then runs about twice as slow as its convs apart."""
    if batch_inside(p):
        return True
    if p.dims.lhs_feature == p.rank - 1:
        return False
    num, den = MAX_ROUTED_PAD_GROWTH
    return den * math.prod(p.padded_spatial) <= num * math.prod(p.lhs_spatial)


def to_channels_last(b: build.Builder, conv: ir.Operation, p: ConvParams) -> ir.Operation:
    """Replace `conv` (not yet channels-last) by its channels-last twin between transposes;
    returns the twin, which the other rewrites then take as their conv."""
    ip, loc = ir.InsertionPoint(conv), conv.location
    lhs_perm, rhs_perm, out_perm = channels_last_permutations(p)
    lhs, rhs = conv.operands[0], conv.operands[1]
    lhs_element = ir.ShapedType(lhs.type).element_type
    rhs_element = ir.ShapedType(rhs.type).element_type
    result_element = ir.ShapedType(conv.results[0].type).element_type
    lhs_t, _ = b.transpose(lhs, p.lhs_shape, lhs_element, lhs_perm, ip, loc)
    rhs_t, _ = b.transpose(rhs, p.rhs_shape, rhs_element, rhs_perm, ip, loc)
    result_shape = tuple(p.result_shape[axis] for axis in out_perm)
    twin = conv.operation.clone(ip=ip)  # every other attribute verbatim; the rewrite replaces it
    twin.operands[0] = lhs_t
    twin.operands[1] = rhs_t
    twin.results[0].set_type(b.tensor(result_shape, result_element))
    twin.attributes["dimension_numbers"] = b.dialect.channels_last_dims(p.num_spatial)
    back, _ = b.transpose(
        twin.results[0], result_shape, result_element, _inverse(out_perm), ip, loc
    )
    conv.results[0].replace_all_uses_with(back)
    conv.erase()
    return twin.operation


def lhs_channels_last(
    b: build.Builder,
    lhs: ir.Value,
    element: ir.Type,
    p: ConvParams,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[ir.Value, ConvParams, tuple[int, ...] | None]:
    """A conv's lhs moved to `[b, 0.., f]` before its pad (and fold), `p` describing that lhs,
    and the permutation that takes each (partial) conv's lhs back to the conv's layout (None:
    the lhs already is channels-last). The convs keep their dimension numbers.

    An engine that computes convs channels-last cancels the permutation back against its own
    transpose into the conv, so the pad, the fold and the lhs's producer stay in its layout.
    Folded channels-first, each phase group read from the fold is a transposed copy, and the
    lhs's producer is computed channels-first for them (on XLA CPU, wav2vec2's GELU before
    each 3/2 conv)."""
    order = channels_last_permutations(p)[0]
    if order == tuple(range(len(order))):
        return lhs, p, None
    lhs, shape = b.transpose(lhs, p.lhs_shape, element, order, ip, loc)
    n = p.num_spatial
    dims = p.dims._replace(lhs_batch=0, lhs_spatial=tuple(range(1, n + 1)), lhs_feature=n + 1)
    return lhs, replace(p, lhs_shape=shape, dims=dims), _inverse(order)
