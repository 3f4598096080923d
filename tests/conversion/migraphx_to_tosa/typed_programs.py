"""Random migraphx programs over MIGraphX's element types and the index/shape ops: sign-explicit
integers (si/ui), comparisons, gather, scatter_none, squeeze/unsqueeze/flatten, f16 division.

Each strategy gives a `Typed`: the program text and how to make valid inputs for it (divisors
without zeros, indices in range, scatter targets written once), since those cases are undefined
in MIGraphX itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from convcanon.xdsl_io import parse_file_text

from .harness import entry, random_inputs
from .programs import Lens, Program, Val, memory_layouts, small_lens

Inputs = list[np.ndarray]
INT_TYPES = ["si8", "ui8", "si16", "ui16", "si32", "ui32"]
COMPARISONS = ["greater", "greater_or_equal", "less", "less_or_equal", "equal"]


@dataclass(frozen=True)
class Typed:
    text: str
    fix: Callable[[Inputs, np.random.Generator], Inputs] | None = None

    def inputs(self, seed: int = 0) -> Inputs:
        values = random_inputs(parse_file_text(self.text, "<typed>"), seed)
        if self.fix is not None:
            values = self.fix(values, np.random.default_rng(seed + 1))
        return values


def _strided(draw: st.DrawFn, lens: Lens) -> Lens:
    return draw(memory_layouts(lens))


def _reduce_attrs(axes: Sequence[int]) -> str:
    return f"axes = [{', '.join(map(str, axes))}]"


def _int_literal(p: Program, value: int, lens: Lens, et: str) -> Val:
    one = p.literal(f"dense<{value}> : tensor<1x{et}>", (1,), (0,), et)
    out_lens = ", ".join(map(str, lens))
    return p.op("multibroadcast", [one], lens, f"out_lens = [{out_lens}]", strides=(0,) * len(lens))


@st.composite
def integer_programs(draw: st.DrawFn, types: Sequence[str] = tuple(INT_TYPES)) -> Typed:
    """Compare (then convert to the si8 boolean), max/min, wrapping arithmetic, a reduction, a
    conversion, a division and a clip on one sign-explicit integer type, random layouts (64-bit
    types: no division or mean, which have no exact TOSA lowering, and no ui64 -> float;
    ui32: no mean)."""
    et = draw(st.sampled_from(list(types)))
    wide = et.endswith("64")
    lens = draw(small_lens(1, 3))
    p = Program()
    a = p.arg(lens, _strided(draw, lens), et=et)
    b = p.arg(lens, _strided(draw, lens), et=et)
    c = p.arg(lens, et=et)  # the divisor: no zeros (see fix)
    outs: list[Val] = []

    def out_strides() -> Lens:
        return _strided(draw, lens)

    compare = p.op(draw(st.sampled_from(COMPARISONS)), [a, b], lens)
    outs.append(p.op("convert", [compare], lens, et="si8", keyword="to", strides=out_strides()))
    outs.append(p.op(draw(st.sampled_from(["max", "min"])), [a, b], lens, strides=out_strides()))
    outs.append(p.op(draw(st.sampled_from(["add", "sub", "mul"])), [a, b], lens))
    axes = sorted(draw(st.sets(st.integers(0, len(lens) - 1), min_size=1)))
    exact_mean = et not in ("ui32", "si64", "ui64")
    reductions = ["reduce_sum", "reduce_max", "reduce_min"] + (["reduce_mean"] * exact_mean)
    reduced = tuple(1 if d in axes else n for d, n in enumerate(lens))
    outs.append(p.op(draw(st.sampled_from(reductions)), [a], reduced, _reduce_attrs(axes)))
    targets = [*INT_TYPES, "si64", "ui64"] + ([] if et == "ui64" else ["f32"])
    target = draw(st.sampled_from([t for t in targets if t != et]))
    outs.append(p.op("convert", [a], lens, et=target, keyword="to", strides=out_strides()))
    if not wide:
        outs.append(p.op("div", [a, c], lens, strides=out_strides()))
    high = (1 << (int(et[2:]) - (1 if et.startswith("s") else 0))) - 3
    lo, hi = _int_literal(p, 2, lens, et), _int_literal(p, high, lens, et)
    outs.append(p.op("clip", [a, lo, hi], lens, strides=out_strides()))

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        divisor = values[2]
        values[2] = np.where(divisor == 0, 1, divisor).astype(divisor.dtype)
        return values

    return Typed(p.text(outs), fix)


@st.composite
def float_compare_programs(draw: st.DrawFn) -> Typed:
    """leaky_relu as MIGraphX fuses it (greater + convert to si8 + mul + where) and one more
    comparison, on f32 or f16 with random layouts."""
    et = draw(st.sampled_from(["f32", "f16"]))
    lens = draw(small_lens(1, 4))
    p = Program()
    x = p.arg(lens, _strided(draw, lens), et=et)
    y = p.arg(lens, _strided(draw, lens), et=et)
    zero = p.literal(f"dense<0.0> : tensor<1x{et}>", (1,), (0,), et)
    text_lens = ", ".join(map(str, lens))
    rank0 = (0,) * len(lens)
    zeros = p.op("multibroadcast", [zero], lens, f"out_lens = [{text_lens}]", strides=rank0)
    positive = p.op("greater", [x, zeros], lens)
    flag = p.op("convert", [positive], lens, et="si8", keyword="to")
    scaled = p.op("mul", [x, y], lens)
    leaky = p.op("where", [flag, x, scaled], lens, strides=_strided(draw, lens), et=et)
    other = p.op(draw(st.sampled_from(COMPARISONS)), [x, y], lens, strides=_strided(draw, lens))

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        values[0] = (values[0] - 1.25).astype(values[0].dtype)  # both signs
        return values

    return Typed(p.text([leaky, other]), fix)


@st.composite
def gather_programs(draw: st.DrawFn) -> Typed:
    """gather along a random axis of a randomly laid out table, indices of a random integer type
    (negative ones count from the end)."""
    lens = draw(small_lens(1, 3))
    axis = draw(st.integers(0, len(lens) - 1))
    index_lens = draw(small_lens(1, 2))
    index_et = draw(st.sampled_from(["si32", "si64", "si8", "ui8"]))
    p = Program()
    data = p.arg(lens, _strided(draw, lens))
    indices = p.arg(index_lens, _strided(draw, index_lens), et=index_et)
    out_lens = (*lens[:axis], *index_lens, *lens[axis + 1 :])
    attrs = f"axis = {axis - len(lens) if draw(st.booleans()) else axis} : i64"
    out = p.op("gather", [data, indices], out_lens, attrs, strides=_strided(draw, out_lens))
    length = lens[axis]

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        low = 0 if index_et.startswith("u") else -length
        values[1] = rng.integers(low, length, values[1].shape).astype(values[1].dtype)
        return values

    return Typed(p.text([out]), fix)


@st.composite
def scatter_programs(draw: st.DrawFn) -> Typed:
    """scatter_none along a random axis; each target is written once (duplicates are undefined
    in MIGraphX), indices may be negative."""
    lens = draw(small_lens(1, 3))
    axis = draw(st.integers(0, len(lens) - 1))
    index_lens = tuple(draw(st.integers(1, n)) for n in lens)
    p = Program()
    data = p.arg(lens, _strided(draw, lens))
    indices = p.arg(index_lens, _strided(draw, index_lens), et="si32")
    updates = p.arg(index_lens, _strided(draw, index_lens))
    out = p.op("scatter_none", [data, indices, updates], lens, f"axis = {axis} : i64")
    index_strides = indices.strides
    length = lens[axis]

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        logical = np.empty(index_lens, dtype=np.int32)
        moved = np.moveaxis(logical, axis, -1)
        for fiber in np.ndindex(moved.shape[:-1]):
            picked = rng.permutation(length)[: moved.shape[-1]]
            moved[fiber] = np.where(rng.random(len(picked)) < 0.3, picked - length, picked)
        values[1] = _write(logical, index_strides)
        return values

    return Typed(p.text([out]), fix)


def _write(logical: np.ndarray, strides: Sequence[int]) -> np.ndarray:
    from convcanon.migraphx import layout

    return layout.write_buffer(logical, logical.shape, strides)


@st.composite
def unit_dim_programs(draw: st.DrawFn) -> Typed:
    """squeeze (given axes or all), unsqueeze and flatten over layouts with size-1 dims."""
    lens = draw(small_lens(2, 4).filter(lambda s: 1 in s))
    p = Program()
    x = p.arg(lens, _strided(draw, lens))
    units = [d for d, n in enumerate(lens) if n == 1]
    dropped = sorted(draw(st.sets(st.sampled_from(units)))) if draw(st.booleans()) else []
    squeezed = tuple(n for d, n in enumerate(lens) if d not in (dropped or units))
    attrs = _reduce_attrs(dropped) if dropped else ""
    s = p.op("squeeze", [x], squeezed, attrs, strides=_strided(draw, squeezed))
    position = draw(st.integers(0, len(squeezed)))
    grown = (*squeezed[:position], 1, *squeezed[position:])
    u = p.op("unsqueeze", [s], grown, f"axes = [{position}]", strides=_strided(draw, grown))
    axis = draw(st.integers(0, len(grown)))
    flat = (math.prod(grown[:axis]), math.prod(grown[axis:]))
    f = p.op("flatten", [u], flat, f"axis = {axis} : i64", strides=_strided(draw, flat))
    e = p.op("exp", [u], grown, strides=_strided(draw, grown))
    return Typed(p.text([f, e]))


_U32_EDGES = [1, 2, 3, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1, 0xAAAAAAAA, 65536]


@st.composite
def u32_values(draw: st.DrawFn, size: int, low: int) -> np.ndarray:
    """`size` u32 values >= `low`: edges, values above 2^31 and anywhere in the range."""
    choices = st.one_of(
        st.sampled_from([v for v in _U32_EDGES if v >= low]),
        st.integers(2**31, 2**32 - 1),
        st.integers(max(low, 0), 2**32 - 1),
        st.integers(max(low, 0), 300),
    )
    return np.array(draw(st.lists(choices, min_size=size, max_size=size)), np.uint64).astype(
        np.uint32
    )


@st.composite
def unsigned_division_programs(draw: st.DrawFn) -> Typed:
    """ui32 a / b over the whole range (divisors and dividends above 2^31 too), random
    layouts; no zero divisors (undefined in MIGraphX)."""
    lens = draw(small_lens(1, 3))
    p = Program()
    a = p.arg(lens, _strided(draw, lens), et="ui32")
    b = p.arg(lens, _strided(draw, lens), et="ui32")
    out = p.op("div", [a, b], lens, strides=_strided(draw, lens))
    text = p.text([out])
    sizes = [ty.flat_size() for ty in entry(parse_file_text(text, "<u32>")).function_type.inputs]
    dividends, divisors = draw(u32_values(sizes[0], 0)), draw(u32_values(sizes[1], 1))

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        return [dividends, divisors]

    return Typed(text, fix)


def f16_division_program() -> Typed:
    """a / b in f16 where a * (1 / b) overflows but the quotient is finite."""
    p = Program()
    a = p.arg((4,), et="f16")
    b = p.arg((4,), et="f16")
    out = p.op("div", [a, b], (4,))

    def fix(values: Inputs, rng: np.random.Generator) -> Inputs:
        values[0] = np.array([0.7026, 1.0, -3.0, 0.5], dtype=np.float16)
        values[1] = np.array([1.425e-05, 2.0, 6.1e-05, -1.0e-4], dtype=np.float16)
        return values

    return Typed(p.text([out]), fix)
