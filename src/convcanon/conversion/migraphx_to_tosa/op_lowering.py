"""What the per-op lowering modules share: a lowering's signature, what it is handed, and the
helpers of more than one op family (the declared result frame, TOSA's conv frame and stride
rule, used by the float and the quantized convs alike, and the refusal of a float-only op on
integers).

Each op family (`lowerings`, `reduce_lowerings`, `shape_lowerings`, `quant_lowerings`)
registers its lowerings against their op classes with `@lowers(FAMILY_TABLE, OpClass, ...)`
beside each function, as xDSL keys rewrite patterns by op class; the families import this and
never each other, and `function_lowering` joins their tables into the one table the pass reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from xdsl.ir import Operation, SSAValue

from convcanon.conversion.migraphx_to_tosa.emitter import Emitter, View, shape_of
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    integer_width,
    lowering_error,
    result_element,
    result_type,
)
from convcanon.migraphx import layout


class LoweringContext(Protocol):
    """What a lowering may use of the function being lowered (a `FunctionLowering`)."""

    @property
    def em(self) -> Emitter: ...


Lowering = Callable[[LoweringContext, Operation, list[View]], View]
LoweringTable = dict[type[Operation], Lowering]


def lowers(table: LoweringTable, *ops: type[Operation]) -> Callable[[Lowering], Lowering]:
    """Register the decorated lowering in `table` for each op class of `ops`."""

    def register(lowering: Lowering) -> Lowering:
        for op in ops:
            table[op] = lowering
        return lowering

    return register


def declared_frame(op: Operation) -> tuple[int, ...]:
    """The dim order of the op's declared result layout: where its consumers expect it (any
    layout: dims sorted by stride, tiled or not)."""
    ty = result_type(op)
    return layout.inverse_permutation(layout.stride_permutation(ty.lens, ty.stride_values))


def channels_last(nsp: int) -> tuple[int, ...]:
    """Frame of [N, C, *S] (and [O, I, *K]) as TOSA's [N, *S, C] ([O, *K, I])."""
    return (0, nsp + 1, *range(1, nsp + 1))


def fit_strides(
    em: Emitter,
    xt: SSAValue,
    extents: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    begins: Sequence[int],
    ends: Sequence[int],
) -> tuple[SSAValue, list[int], list[int]]:
    """Make TOSA's rule `(H - 1 + top + bottom - (K - 1) * d) % stride == 0` hold, output unchanged.

    The positions past the last window are never read: shrink the end pad by the remainder, and
    if that is not enough, slice the input's trailing rows off. When even the whole input would
    go (the windows only touch begin padding), pad explicitly and slice the padded input.
    """
    begins, ends = list(begins), list(ends)
    start = [0] * len(shape_of(xt))
    size = list(shape_of(xt))
    explicit_low, explicit_high = [0] * len(size), [0] * len(size)
    for i, extent in enumerate(extents):
        span = (kernel[i] - 1) * dilations[i]
        excess = (extent - 1 + begins[i] + ends[i] - span) % strides[i]
        if excess <= ends[i]:
            ends[i] -= excess
        elif excess - ends[i] < extent:
            size[1 + i] = extent - (excess - ends[i])
            ends[i] = 0
        else:
            needed = extent + begins[i] + ends[i] - excess
            explicit_low[1 + i], explicit_high[1 + i] = begins[i], ends[i]
            size[1 + i] = needed
            begins[i] = ends[i] = 0
    xt = em.pad_zero(xt, explicit_low, explicit_high)
    return em.slice(xt, start, size), begins, ends


def refuse_integer(op: Operation, what: str) -> None:
    """TOSA 1.0 computes `what` on floating-point values only (IREE refuses the op on integers
    as in no profile); MIGraphX computes it in double and truncates, which no TOSA op does."""
    element = result_element(op)
    if integer_width(element) is not None:
        raise lowering_error(
            op, f"on {element} has no exact TOSA lowering ({what} takes floating-point values)"
        )
