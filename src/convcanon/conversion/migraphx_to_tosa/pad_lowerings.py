"""The lowering of `migraphx.pad`, exact in all three of MIGraphX's modes, in the operand's own
stored dim order (no transpose):

- constant: a `tosa.slice` of what negative pads crop, then one `tosa.pad` whose pad value is
  MIGraphX's clamp of its f32 `value` to the element type (`PadOp.fill`), typed as the element;
  a dim cropped away entirely leaves the fill alone, a tiled constant;
- edge, per padded dim: the first and last element tiled beside the slice the pads keep, one
  `tosa.concat`;
- reflect, per padded dim: one period of the mirrored dim (the input, then its inner elements
  reversed: 2(n - 1) long), tiled and sliced at the begin pad's phase.

Its own table, not a storage op: the fill is a value of the element type, so a type TOSA's
profiles hold only as storage (fp8 FNUZ, int4) is padded decoded and encoded back, exactly.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import (
    Emitter,
    View,
    element_type_of,
    in_frame,
    shape_of,
)
from convcanon.conversion.migraphx_to_tosa.op_lowering import LoweringContext, LoweringTable, lowers
from convcanon.conversion.migraphx_to_tosa.type_conversion import result_type
from convcanon.migraphx.pad_ops import PadOp
from convcanon.migraphx.shaped_type import numpy_dtype
from convcanon.tosa import ops as tosa
from convcanon.tosa import quant_ops as tq

# The lowerings of this family, each registered against its op class by `@lowers`.
PAD_LOWERINGS: LoweringTable = {}


@lowers(PAD_LOWERINGS, PadOp)
def _pad(lw: LoweringContext, op: Operation, args: list[View]) -> View:
    """Padded where the operand is stored: its base dims in their order; a broadcast dim no pad
    touches stays broadcast."""
    assert isinstance(op, PadOp)
    em = lw.em
    (x,) = args
    begins, ends = op.begins_ends()
    mode = op.pad_mode()
    padded = [d for d in range(len(x.lens)) if begins[d] or ends[d]]
    base = _tiled(em, x, padded)
    low, high = [0] * len(x.perm), [0] * len(x.perm)  # per base dim
    for d in padded:
        low[x.perm[d]], high[x.perm[d]] = begins[d], ends[d]
    if mode == "constant":
        return View(_constant(em, op, base, low, high), x.perm, result_type(op).lens)
    step = _edge if mode == "edge" else _reflect
    for b, (lo, hi) in enumerate(zip(low, high, strict=True)):
        if lo or hi:
            base = step(em, base, b, lo, shape_of(base)[b] + lo + hi)
    return View(base, x.perm, result_type(op).lens)


def _tiled(em: Emitter, x: View, padded: list[int]) -> SSAValue:
    """The operand's base, broadcast dims tiled where a pad reads them."""
    base = in_frame(em, x, x.perm)
    multiples = [1] * len(x.perm)
    for d in padded:
        multiples[x.perm[d]] = x.lens[d] // shape_of(base)[x.perm[d]]
    return em.tile(base, multiples)


def _constant(em: Emitter, op: PadOp, base: SSAValue, low: list[int], high: list[int]) -> SSAValue:
    """Crop what negative pads cut, then pad with the fill (where nothing is kept: the fill)."""
    shape = shape_of(base)
    element = element_type_of(base)
    fill = _fill(op)
    starts = [max(0, -lo) for lo in low]
    sizes = [min(n, n + hi) - s for n, hi, s in zip(shape, high, starts, strict=True)]
    out_shape = [n + lo + hi for n, lo, hi in zip(shape, low, high, strict=True)]
    if min(sizes, default=1) <= 0:  # a dim is cropped away: every element is the fill
        return em.tile(em.scalar(element, fill, len(shape)), out_shape)
    kept = em.slice(base, starts, sizes)
    below = [max(0, lo) for lo in low]
    above = [m - b - k for m, b, k in zip(out_shape, below, sizes, strict=True)]
    if not any(below) and not any(above):
        return kept
    padding = [v for lo, hi in zip(below, above, strict=True) for v in (lo, hi)]
    ty = TensorType(element, out_shape)
    pad_value = em.scalar(element, fill, 1)
    return em.add(tosa.PadOp([kept, em.shape_const(padding), pad_value], ty))


def _fill(op: PadOp) -> float | int:
    """The fill as a TOSA constant of the (signless) element: MIGraphX's clamp to the result
    type, an unsigned integer's bits read as TOSA's signless (two's complement) integer."""
    value = op.fill(numpy_dtype(result_type(op).element_type))
    if value.dtype.kind == "u":
        return int(value.view(np.dtype(f"i{value.itemsize}")))
    if value.dtype.kind in "ib":
        return int(value)
    return float(value)


def _edge(em: Emitter, base: SSAValue, b: int, begin: int, out_len: int) -> SSAValue:
    """Base dim `b` padded by repeating its first and last element: `begin` (or none, if
    negative) copies of the first, the elements the pads keep, the last to fill `out_len`."""
    shape = list(shape_of(base))
    n = shape[b]
    first = min(max(begin, 0), out_len)
    last = out_len - min(max(n + begin, 0), out_len)
    middle = out_len - first - last
    parts = []
    if first:
        parts.append(_repeat(em, _take(em, base, b, 0, 1), b, first))
    if middle:
        parts.append(_take(em, base, b, first - begin, middle))
    if last:
        parts.append(_repeat(em, _take(em, base, b, n - 1, 1), b, last))
    return em.concat(parts, b)


def _reflect(em: Emitter, base: SSAValue, b: int, begin: int, out_len: int) -> SSAValue:
    """Base dim `b` mirrored about its first and last element: output position o reads the
    period [x0 .. x(n-1), x(n-2) .. x1] at (o - begin) mod 2(n - 1); a dim of one repeats."""
    n = shape_of(base)[b]
    if n == 1:
        return _repeat(em, base, b, out_len)
    period = 2 * (n - 1)
    one = base
    if n > 2:
        inner = _take(em, base, b, 1, n - 2)
        reversed_inner = em.add(tq.ReverseOp([inner], inner.type, tosa.axis_attr(b)))
        one = em.concat([base, reversed_inner], b)
    phase = -begin % period
    copies = -(-(phase + out_len) // period)
    return _take(em, _repeat(em, one, b, copies), b, phase, out_len)


def _take(em: Emitter, base: SSAValue, b: int, start: int, size: int) -> SSAValue:
    shape = list(shape_of(base))
    starts = [0] * len(shape)
    starts[b], shape[b] = start, size
    return em.slice(base, starts, shape)


def _repeat(em: Emitter, base: SSAValue, b: int, copies: int) -> SSAValue:
    multiples = [1] * len(shape_of(base))
    multiples[b] = copies
    return em.tile(base, multiples)
