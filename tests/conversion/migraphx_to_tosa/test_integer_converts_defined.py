"""Every float->int and int->int `migraphx.convert` (si/ui 4, 8, 16, 32, 64 bits) has one meaning,
MIGraphX's, modelled here independently with Python integers:

- from an integer (or bool) the result keeps the low bits (two's complement);
- from a float it truncates toward zero where that fits the target; a NaN, an infinity or a
  truncation outside the range is undefined in MIGraphX (its GPU kernels convert with a C++
  cast): the reference refuses it, naming it undefined, and the lowering gives MIGraphX's
  reference target's values there (the bound, NaN 0).

Hypothesis draws edge values (negative, NaN, +-inf, every bound and its neighbours, +-0.5 around
integers) for each source type; the lowered TOSA runs on IREE against the model, and the
reference interpreter agrees where the result is defined (without a numpy warning)."""

from __future__ import annotations

import functools
import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.verify.iree_tosa import compile_tosa_text, run_vmfb

from .harness import as_signless, iree_opt_verify, lower, reference

# the reference and the lowering print no numpy warning, whatever the values
pytestmark = pytest.mark.filterwarnings("error")

INTEGERS = [f"{sign}i{width}" for sign in ("s", "u") for width in (4, 8, 16, 32, 64)]
FLOATS = ["f32", "f16", "bf16"]
N = 12


def _dtype(name: str) -> np.dtype:
    if name in FLOATS:
        return np.dtype({"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[name])
    width, unsigned = int(name[2:]), name[0] == "u"
    if width == 4:
        return np.dtype(ml_dtypes.uint4 if unsigned else ml_dtypes.int4)
    return np.dtype(f"{'u' if unsigned else ''}int{width}")


def _bounds(name: str) -> tuple[int, int]:
    width = int(name[2:])
    return (
        (0, (1 << width) - 1) if name[0] == "u" else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    )


def _model(value: float | int, source: str, target: str) -> tuple[int, bool]:
    """MIGraphX's result of converting `value` (and whether it is undefined)."""
    low, high = _bounds(target)
    if source not in FLOATS:
        width = int(target[2:])
        bits = int(value) % (1 << width)
        return (bits - (1 << width) if low < 0 and bits > high else bits), False
    if math.isnan(value):
        return 0, True
    if math.isinf(value):
        return (high if value > 0 else low), True
    whole = math.trunc(value)
    return min(max(whole, low), high), not low <= whole <= high


def _edges(source: str) -> list[float | int]:
    """Each target's bounds and neighbours, small integers and halves, in the source's range."""
    points: set[int] = {0, 1, -1, 2, -2, 3, 7, 8, -8, -9, 15, 16, 17}
    for target in INTEGERS:
        for bound in _bounds(target):
            points |= {bound - 1, bound, bound + 1}
    if source in FLOATS:
        dtype = _dtype(source)
        values: set[float] = {math.nan, math.inf, -math.inf, -0.0}
        for p in points:
            values |= {float(p), p + 0.5, p - 0.5, p + 0.25, p - 0.75}
        top = float(ml_dtypes.finfo(dtype).max)
        values |= {top, -top}
        with np.errstate(over="ignore"):  # beyond the source's range: its infinities
            wide = np.asarray(sorted(values, key=str), dtype=np.float64)
            cast = {float(v) for v in wide.astype(dtype).astype(np.float64)}
        return sorted(cast, key=lambda v: (math.isnan(v), v))
    low, high = _bounds(source)
    return sorted(p for p in points | {low, high} if low <= p <= high)


def _module(source: str, targets: list[str]) -> str:
    results = ", ".join(f"!migraphx.shaped<{N}x{t}, 1>" for t in targets)
    body = "".join(
        f"  %{k} = migraphx.convert %x : <{N}x{source}, 1> to <{N}x{t}, 1>\n"
        for k, t in enumerate(targets)
    )
    returned = ", ".join(f"%{k}" for k in range(len(targets)))
    return (
        f"func.func @main(%x: !migraphx.shaped<{N}x{source}, 1>) -> ({results}) {{\n"
        f"{body}  return {returned} : {results}\n}}\n"
    )


def _on_iree(source: str, target: str) -> bool:
    """IREE compiles no tosa.cast to or from i64 but i32 -> i64 (outside every profile it
    has): the other pairs of a 64-bit type run on our TOSA interpreter only."""
    if "64" not in source + target:
        return True
    return source in INTEGERS and int(source[2:]) <= 32 and target.endswith("64")


def _targets(source: str) -> list[str]:
    return [t for t in INTEGERS if t != source and _on_iree(source, t)]


@functools.cache
def _lowered(source: str, targets: tuple[str, ...]) -> str:
    text = lower(_module(source, list(targets)))
    iree_opt_verify(text)
    return text


@functools.cache
def _compiled(source: str) -> bytes:
    return compile_tosa_text(_lowered(source, tuple(_targets(source))))


@pytest.mark.parametrize("source", FLOATS + INTEGERS)
def test_every_convert_lowers_and_compiles(source: str) -> None:
    """Outside the property test, so a failure is reported once, not shrunk."""
    if _targets(source):
        assert _compiled(source)
    _lowered(source, tuple(t for t in INTEGERS if t != source))


def _values(source: str) -> st.SearchStrategy[list[float | int]]:
    return st.lists(st.sampled_from(_edges(source)), min_size=N, max_size=N)


def _as_source(values: list[float | int], source: str) -> np.ndarray:
    dtype = _dtype(source)
    if source in FLOATS:
        return np.asarray(values, dtype=np.float64).astype(dtype)
    return np.asarray(
        [int(v) for v in values], dtype=np.int64 if source[0] == "s" else np.uint64
    ).astype(dtype)


@pytest.mark.parametrize("source", FLOATS + INTEGERS)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_lowered_convert_equals_migraphx_on_iree(source: str, data: st.DataObject) -> None:
    values = data.draw(_values(source))
    x = _as_source(values, source)
    targets = _targets(source)
    if targets:
        _assert_modelled(source, targets, x, run_vmfb(_compiled(source), "main", [as_signless(x)]))
    others = tuple(t for t in INTEGERS if t != source and t not in targets)
    if others:  # the pairs IREE cannot compile, on our TOSA interpreter
        _assert_modelled(
            source, list(others), x, reference(_lowered(source, others), [as_signless(x)])
        )


def _as_target(out: np.ndarray, target: str) -> list[int]:
    """An engine's buffer (signless bits, 4-bit values unpacked) as `target`'s integers."""
    width = int(target[2:])
    wide = out.astype(np.int64) if out.dtype.name in ("int4", "uint4") else out
    bits = [int(v) % (1 << width) for v in np.asarray(wide).tolist()]
    if target[0] == "u":
        return bits
    return [b - (1 << width) if b >= 1 << (width - 1) else b for b in bits]


def _assert_modelled(source: str, targets: list[str], x: np.ndarray, got: list[np.ndarray]) -> None:
    for target, out in zip(targets, got, strict=True):
        expected = [_model(v, source, target)[0] for v in x.tolist()]
        assert _as_target(out, target) == expected, (source, target, x)


@pytest.mark.parametrize("target", INTEGERS)
@pytest.mark.parametrize("source", FLOATS + INTEGERS)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_reference_convert_is_migraphx_or_says_undefined(
    source: str, target: str, data: st.DataObject
) -> None:
    values = data.draw(_values(source))
    x = _as_source(values, source)
    modelled = [_model(v, source, target) for v in x.tolist()]
    text = _module(source, [target])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning, whatever the values
        if any(undefined for _, undefined in modelled):
            with pytest.raises(ConvcanonError, match=r"undefined in MIGraphX"):
                reference(text, [x])
            return
        (out,) = reference(text, [x])
    assert _as_target(out, target) == [v for v, _ in modelled]
