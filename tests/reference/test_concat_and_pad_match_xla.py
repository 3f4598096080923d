"""MIGraphX's concat and pad in the reference interpreter agree with XLA over random shapes and
layouts: concat of one to four inputs of any strides along any axis (negative ones too) as
`jnp.concatenate`; pad in each mode (constant, reflect, edge) with random begin and end pads,
negative ones (a crop) and ones past the dim (reflect repeats its period) included, as
`lax.pad` and `jnp.pad` compute them. The constant's clamp to the element type (MIGraphX's
`pad_clamp`) is checked value by value."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _pads import PAD_MODES, random_pads  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx import layout

from .test_migraphx_semantics import _braces, run_op

pytestmark = pytest.mark.filterwarnings("error")

TYPES = {"float_type": np.float32, "half_type": np.float16, "int32_type": np.int32}


@pytest.fixture(autouse=True)
def _x64_for_this_test():
    with jax.enable_x64(True):
        yield


def _strides(draw: st.DrawFn, lens: tuple[int, ...]) -> list[int]:
    """Random strides: a permutation of the dims with a gap after some."""
    order = draw(st.permutations(range(len(lens))))
    strides, running = [0] * len(lens), 1
    for d in reversed(order):
        strides[d] = running
        running *= lens[d] + draw(st.sampled_from([0, 0, 1]))
    return strides


def _values(rng: np.random.Generator, lens: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "i":
        return rng.integers(-100, 100, lens).astype(dtype)
    return rng.standard_normal(lens).astype(dtype)


@st.composite
def concats(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], int, list[list[int]], list[int]]:
    rank = draw(st.integers(1, 4))
    lens = [draw(st.integers(1, 4)) for _ in range(rank)]
    axis = draw(st.integers(-rank, rank - 1))
    shapes = []
    for _ in range(draw(st.integers(1, 4))):
        lens[axis] = draw(st.integers(1, 4))
        shapes.append(tuple(lens))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return shapes, axis, [_strides(draw, s) for s in shapes], _strides(draw, tuple(out))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(concats(), st.sampled_from(sorted(TYPES)), st.integers(0, 2**31))
def test_random_concat_matches_xla(case, type_name: str, seed: int) -> None:
    shapes, axis, in_strides, out_strides = case
    dtype = np.dtype(TYPES[type_name])
    rng = np.random.default_rng(seed)
    xs = [_values(rng, s, dtype) for s in shapes]
    out_lens = list(shapes[0])
    out_lens[axis] = sum(s[axis] for s in shapes)
    got = run_op(
        f"concat[axis={axis}](ARGS)",
        list(zip(xs, in_strides, strict=True)),
        out_lens,
        out_strides,
        type_name,
    )
    expected = np.asarray(jnp.concatenate([jnp.asarray(x) for x in xs], axis=axis))
    np.testing.assert_array_equal(got, expected)


MODES = PAD_MODES


def expected_pad(
    x: np.ndarray, begins: list[int], ends: list[int], mode: str, fill: float
) -> np.ndarray:
    """XLA's pad: constant as `lax.pad` (a negative pad crops there too); reflect and edge as
    `jnp.pad` by the positive pads, then the window a negative pad shifts (MIGraphX reads input
    index `o - begin` mirrored or clamped about the whole input's ends)."""
    if mode == "constant":
        config = [(b, e, 0) for b, e in zip(begins, ends, strict=True)]
        return np.asarray(jax.lax.pad(jnp.asarray(x), jnp.asarray(fill, x.dtype), config))
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
    padded = np.asarray(jnp.pad(jnp.asarray(x), widths, mode=mode))
    window = tuple(
        slice(max(b, 0) - b, max(b, 0) - b + n + b + e)
        for n, b, e in zip(x.shape, begins, ends, strict=True)
    )
    return padded[window]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(random_pads(), st.sampled_from(sorted(TYPES)), st.booleans(), st.integers(0, 2**31))
def test_random_pad_matches_xla(case, type_name: str, strided: bool, seed: int) -> None:
    lens, begins, ends, mode = case
    dtype = np.dtype(TYPES[type_name])
    rng = np.random.default_rng(seed)
    x = _values(rng, lens, dtype)
    out_lens = [n + b + e for n, b, e in zip(lens, begins, ends, strict=True)]
    in_strides = list(layout.standard_strides(lens))
    if strided:  # the input stored transposed: dim 0 innermost
        in_strides = [int(np.prod(lens[:d])) for d in range(len(lens))]
    fill = -7.0 if mode == "constant" else 0.0
    got = run_op(
        f"pad[mode={MODES.index(mode)},pads={_braces(begins + ends)},value={fill:g}](ARGS)",
        [(x, in_strides)],
        out_lens,
        None,
        type_name,
    )
    np.testing.assert_array_equal(got, expected_pad(x, begins, ends, mode, fill))


CLAMPED = [
    # type, value as MIGraphX prints it, the fill it writes
    ("half_type", "-3.40282e+38", -65504.0),  # f32's lowest, printed: below half's, clamped
    ("half_type", "-inf", -65504.0),  # an infinity is clamped to the finite extreme too
    ("half_type", "inf", 65504.0),
    ("float_type", "-inf", float(np.finfo(np.float32).min)),
    ("float_type", "0.1", float(np.float32(0.1))),
    ("int32_type", "1e+10", 2147483647),
    ("int32_type", "-2.5e+10", -2147483648),
    ("int8_type", "-7.9", -7),  # truncated toward zero
    ("uint8_type", "-1", 0),
    ("uint8_type", "300.5", 255),
    ("double_type", "-3.40282346638529e+38", float(np.finfo(np.float64).min)),  # f32's lowest
]


@pytest.mark.parametrize(("type_name", "value", "fill"), CLAMPED)
def test_the_constant_is_clamped_to_the_element_type(
    type_name: str, value: str, fill: float
) -> None:
    dtype = {"int8_type": np.int8, "uint8_type": np.uint8, "double_type": np.float64}.get(
        type_name, TYPES.get(type_name)
    )
    x = np.ones((2,), dtype=dtype)
    got = run_op(f"pad[mode=0,pads={{1, 0}},value={value}](ARGS)", [(x, [1])], [3], None, type_name)
    np.testing.assert_array_equal(got, np.asarray([fill, 1, 1], dtype=dtype))


def test_a_nan_constant_stays_nan_in_floats_and_is_refused_for_integers() -> None:
    x = np.ones((2,), dtype=np.float16)
    got = run_op("pad[mode=0,pads={0, 1},value=nan](ARGS)", [(x, [1])], [3], None, "half_type")
    assert np.isnan(got[2]) and np.array_equal(got[:2], x)
    with pytest.raises(ConvcanonError, match="a NaN pad value has no int32 value"):
        run_op(
            "pad[mode=0,pads={0, 1},value=nan](ARGS)",
            [(np.ones((2,), dtype=np.int32), [1])],
            [3],
            None,
            "int32_type",
        )


def test_reflect_past_the_dim_repeats_its_period() -> None:
    """MIGraphX mirrors about the first and last element with period 2(n - 1): [a b c] padded
    by 5 and 4 reads b a b c b | a b c | b a b c (numpy's reflect too)."""
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    got = run_op("pad[mode=1,pads={5, 4},value=0](ARGS)", [(x, [1])], [12], None)
    np.testing.assert_array_equal(got, [2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3])
    np.testing.assert_array_equal(got, np.pad(x, (5, 4), mode="reflect"))
