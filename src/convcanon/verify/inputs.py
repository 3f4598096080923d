"""The random inputs `verify` draws: families tried in turn (N(0,1) first, then network-like and
positive ones), each value cast to its argument's type, and the perturbation that asks whether an
output responds to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc


@dataclass(frozen=True)
class Distribution:
    """How random float inputs are drawn. N(0,1) first; the later ones keep finite what N(0,1)
    makes non-finite (`rsqrt(variance)`, `log`, division: positive values) and keep activations
    in range where N(0,1) weights make them grow by sqrt(fan-in) per layer until a softmax
    saturates (weights drawn fan-in-normalised, then scaled down further)."""

    name: str
    low: float | None  # None: normal
    high: float = 0.0
    network: bool = False  # weights N(0,1)/sqrt(fan-in) * weight_scale; vectors uniform[0.5,2)
    weight_scale: float = 1.0


NETWORK_LIKE = (
    "network-like (weights N(0,1)/sqrt(fan-in){}, other tensors N(0,1), vectors uniform[0.5,2))"
)
DISTRIBUTIONS = (
    Distribution("N(0,1)", None),
    Distribution(NETWORK_LIKE.format(""), None, 0.0, True),
    Distribution(NETWORK_LIKE.format(" x 1/4"), None, 0.0, True, 0.25),
    Distribution("uniform[0.5,2)", 0.5, 2.0),
    Distribution("uniform[0.1,0.5)", 0.1, 0.5),
)


def random_inputs(
    args: list,
    rng: np.random.Generator,
    dist: Distribution = DISTRIBUTIONS[0],
    weights: dict[int, int] | None = None,
) -> list[np.ndarray]:
    """Inputs for HLO arguments, drawn from `dist` and cast to each argument's type; `weights`
    (argument -> fan-in) are the conv kernels and dot weights, which a network-like draw
    normalises (None: unknown, every tensor is normalised by a fan-in guessed from its shape)."""
    from convcanon.reference.hlo_interp import normalize

    return [
        normalize(
            random_array(tt.declared_dtype, tt.shape, rng, dist, _fan_in(i, tt.shape, weights)), tt
        )
        for i, tt in enumerate(args)
    ]


class InputsTooLarge(ConvcanonError):
    """Random inputs that would take more memory than the limit: refused before any is drawn
    (`run` says so too, rather than that inputs are missing)."""


def check_drawn_bytes(args: list, entry: str, limit: int, loc: SourceLoc) -> None:
    """Refuse, before anything is drawn, arguments whose random values take over `limit` bytes
    together: each is drawn in 64 bits (complex: 128) and kept in its own type, and verify
    holds an f64 copy of them all. Each argument under the limit was not enough: ten of them
    were drawn whole. `args`: anything with `shape` and `dtype` (HLO and flat arguments)."""
    total = sum(
        math.prod(a.shape) * (a.dtype.itemsize + (16 if a.dtype.kind == "c" else 8)) for a in args
    )
    if total > limit:
        raise InputsTooLarge(
            f"@{entry}'s {len(args)} argument(s) take {total} bytes drawn at random (each in its"
            f" type and in 64 bits), over the memory limit of {limit}",
            loc,
        )


def _fan_in(index: int, shape: tuple[int, ...], weights: dict[int, int] | None) -> int | None:
    """The fan-in a network-like draw divides argument `index` by; None: not a weight."""
    if weights is None or not weights:  # no weights found: guess HWIO, OIHW, [in, out] alike
        return max(1, math.prod(shape) // max(1, max(shape, default=1)))
    return weights.get(index)


def perturbed(inputs: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Every float input scaled element-wise by a random factor near 1 (`judge.perturbation`;
    signs kept: a positive family stays positive); integers and bools unchanged."""
    from convcanon.verify.judge import is_float, perturbation

    moved = []
    for x in inputs:
        if is_float(x.dtype) and x.size:
            wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
            reach = perturbation(x.dtype)
            factor = 1.0 + rng.uniform(-reach, reach, x.shape)
            with np.errstate(all="ignore"):
                x = (wide * factor).astype(x.dtype)
        moved.append(x)
    return moved


def _draw(
    shape: tuple[int, ...], rng: np.random.Generator, dist: Distribution, fan_in: int | None
) -> np.ndarray:
    if dist.network:
        if len(shape) <= 1:
            return rng.uniform(0.5, 2.0, shape)
        if fan_in is None:
            return rng.standard_normal(shape)
        return rng.standard_normal(shape) * (dist.weight_scale / math.sqrt(fan_in))
    if dist.low is None:
        return rng.standard_normal(shape)
    return rng.uniform(dist.low, dist.high, shape)


def random_array(
    dtype: np.dtype,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    dist: Distribution = DISTRIBUTIONS[0],
    fan_in: int | None = None,
) -> np.ndarray:
    """One random value of `shape` (not yet cast): small ints (-4..4, unsigned 0..8; 1..4 for a
    positive distribution; inside the type: i2 holds -2..1), fair bools, floats from `dist`
    (`fan_in`: a weight's, for a network-like draw)."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    integers = _integer_range(dtype, dist)
    if integers is not None:
        low, high = integers
        return rng.integers(low, high + 1, shape)
    real = _draw(shape, rng, dist, fan_in)
    return real + 1j * _draw(shape, rng, dist, fan_in) if dtype.kind == "c" else real


def _integer_range(dtype: np.dtype, dist: Distribution) -> tuple[int, int] | None:
    """The closed range integers of `dtype` are drawn from (None: not an integer type): small,
    so that sums stay exact, and inside the type (i2 holds -2..1: a 4 drawn there wrapped)."""
    import ml_dtypes

    from convcanon.verify.judge import is_narrow_int

    if dtype == np.bool_ or not (dtype.kind in "ui" or is_narrow_int(dtype)):
        return None
    if dist.low is not None or dist.network:  # a positive family
        low, high = 1, 4
    else:
        low, high = (0, 8) if _unsigned(dtype) else (-4, 4)
    held = ml_dtypes.iinfo(dtype)
    return max(low, int(held.min)), min(high, int(held.max))


def _unsigned(dtype: np.dtype) -> bool:
    return dtype.kind == "u" or dtype.name.startswith("uint")


def drawn_description(dist: Distribution, args: list) -> str:
    """What `dist` draws for arguments `args` (anything with `declared_dtype`: HLO and flat
    arguments), by their element types: its name for floats (alone when every input is a
    float), the integers' ranges, fair booleans. An integer program is not drawn N(0,1), and
    its report must not say so."""
    from convcanon.verify.judge import is_float

    kinds: dict[str, None] = {}
    dtypes = [a.declared_dtype for a in args]
    floats_only = all(is_float(d) for d in dtypes)
    for dtype in dtypes:
        integers = _integer_range(dtype, dist)
        if is_float(dtype):
            kinds[dist.name if floats_only else f"{dist.name} floats"] = None
        elif integers is not None:
            low, high = integers
            unsigned = "unsigned " if _unsigned(dtype) and low == 0 else ""
            kinds[f"{unsigned}integers in [{low}, {high}]"] = None
        else:
            kinds["fair booleans"] = None
    return " and ".join(kinds) or "none (no arguments)"


def widen_inputs(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The same values in f64 (complex in c128) for a widened module; others unchanged."""
    from convcanon.verify.judge import is_float

    return [
        x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) if is_float(x.dtype) else x
        for x in inputs
    ]


def random_buffers(
    args: list, rng: np.random.Generator, dist: Distribution = DISTRIBUTIONS[0]
) -> list[np.ndarray]:
    """Inputs for migraphx/TOSA flat buffers (`args`: `migraphx_interp.FlatArg`), drawn from
    `dist` and cast to each buffer's type (a value past a narrow type's range is no error)."""
    with np.errstate(all="ignore"):
        return [
            random_array(a.dtype, a.shape, rng, dist, _fan_in(i, a.shape, None)).astype(a.dtype)
            for i, a in enumerate(args)
        ]
