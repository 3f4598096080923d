"""MIGraphX's pooling in the reference interpreter agrees with XLA (`lax.reduce_window`) over
random windows: max, average (with and without count_include_pad) and lpnorm, 1 to 3 spatial
dims, symmetric and asymmetric padding, strides, dilations and ceil_mode, NCHW and NHWC inputs.

XLA computes every expected value, the divisors too: the window sum of a mask of what MIGraphX
counts. With count_include_pad MIGraphX counts padding up to the BEGIN pad past the input (its
reference's clip, whatever the end pad): the mask is that stretch of ones."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx import layout

from .test_migraphx_semantics import _braces, _nhwc_strides, run_op

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def _x64_for_this_test():
    with jax.enable_x64(True):
        yield


@dataclass(frozen=True)
class Pool:
    mode: str
    spatial: tuple[int, ...]
    lengths: tuple[int, ...]
    stride: tuple[int, ...]
    dilations: tuple[int, ...]
    begins: tuple[int, ...]
    ends: tuple[int, ...]
    ceil_mode: bool
    count_include_pad: bool
    lp_order: int
    symmetric: bool

    def span(self, i: int) -> int:
        return self.dilations[i] * (self.lengths[i] - 1) + 1

    @property
    def out(self) -> tuple[int, ...]:
        out = []
        for i, n in enumerate(self.spatial):
            total = n + self.begins[i] + self.ends[i] - self.span(i)
            s = self.stride[i]
            out.append((-(-total // s) if self.ceil_mode else total // s) + 1)
        return tuple(out)

    def field_text(self) -> str:
        padding = self.begins if self.symmetric else self.begins + self.ends
        return (
            f"pooling[mode={self.mode},padding={_braces(padding)},padding_mode=0,"
            f"stride={_braces(self.stride)},lengths={_braces(self.lengths)},"
            f"dilations={_braces(self.dilations)},ceil_mode={int(self.ceil_mode)},"
            f"count_include_pad={int(self.count_include_pad)},lp_order={self.lp_order},"
            "dyn_global=0](ARGS)"
        )


@st.composite
def pools(draw: st.DrawFn) -> Pool:
    nsp = draw(st.integers(1, 3))
    lengths = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    dilations = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    symmetric = draw(st.booleans())
    begins = tuple(draw(st.integers(0, 2)) for _ in range(nsp))
    ends = begins if symmetric else tuple(draw(st.integers(0, 2)) for _ in range(nsp))
    spatial = tuple(
        draw(st.integers(max(1, d * (k - 1) + 1 - b - e), 7 if nsp < 3 else 5))
        for k, d, b, e in zip(lengths, dilations, begins, ends, strict=True)
    )
    return Pool(
        mode=draw(st.sampled_from(["max", "average", "average", "lpnorm"])),
        spatial=spatial,
        lengths=lengths,
        stride=tuple(draw(st.integers(1, 3)) for _ in range(nsp)),
        dilations=dilations,
        begins=begins,
        ends=ends,
        ceil_mode=draw(st.booleans()),
        count_include_pad=draw(st.booleans()),
        lp_order=draw(st.integers(1, 3)),
        symmetric=symmetric,
    )


def _windows(x: jnp.ndarray, init: float, fn, pool: Pool, begins, reach) -> np.ndarray:
    """XLA's fold over every window, padded at the end so that the last window fits (then the
    first `out` windows per dim kept)."""
    ends = [max(0, r) for r in reach]
    folded = jax.lax.reduce_window(
        x,
        init,
        fn,
        window_dimensions=(1, 1, *pool.lengths),
        window_strides=(1, 1, *pool.stride),
        padding=((0, 0), (0, 0), *zip(begins, ends, strict=True)),
        window_dilation=(1, 1, *pool.dilations),
    )
    return np.asarray(folded)[(slice(None), slice(None), *(slice(0, o) for o in pool.out))]


def expected_pool(x: np.ndarray, pool: Pool, dtype: np.dtype) -> np.ndarray:
    """MIGraphX's pooling by XLA, in f64, converted as C++ converts a double."""
    wide = jnp.asarray(x.astype(np.float64))
    reach = [
        (o - 1) * s + pool.span(i) - n - b
        for i, (o, s, n, b) in enumerate(
            zip(pool.out, pool.stride, pool.spatial, pool.begins, strict=True)
        )
    ]
    if pool.mode == "max":
        lowest = float(np.iinfo(dtype).min if dtype.kind in "iu" else np.finfo(dtype).min)
        got = np.maximum(_windows(wide, -np.inf, jax.lax.max, pool, pool.begins, reach), lowest)
    elif pool.mode == "lpnorm":
        powers = jnp.abs(wide) ** pool.lp_order
        got = _windows(powers, 0.0, jax.lax.add, pool, pool.begins, reach) ** (1 / pool.lp_order)
    else:
        total = _windows(wide, 0.0, jax.lax.add, pool, pool.begins, reach)
        got = total / np.maximum(_divisors(pool, reach), 1)
        got = np.where(_divisors(pool, reach) > 0, got, 0.0)
    if dtype.kind in "iu":
        return np.trunc(got).astype(dtype)
    return got.astype(dtype)


def _divisors(pool: Pool, reach: list[int]) -> np.ndarray:
    """The taps MIGraphX counts, summed by XLA over a mask: the input's positions, or with
    count_include_pad the positions from the begin pad to the input's end plus the begin pad."""
    if not pool.count_include_pad:
        ones = jnp.ones((1, 1, *pool.spatial))
        return _windows(ones, 0.0, jax.lax.add, pool, pool.begins, reach)
    counted = jnp.ones((1, 1, *(n + 2 * b for n, b in zip(pool.spatial, pool.begins, strict=True))))
    return _windows(counted, 0.0, jax.lax.add, pool, [0] * len(pool.spatial), reach)


def _refused_by_migraphx(pool: Pool) -> bool:
    """A window starting past where MIGraphX clips it: its reference throws."""
    for o, s, n, b in zip(pool.out, pool.stride, pool.spatial, pool.begins, strict=True):
        clip = n + b if pool.count_include_pad and pool.mode != "max" else n
        if (o - 1) * s - b > clip:
            return True
    return False


TYPES = {"float_type": np.float32, "half_type": np.float16, "int32_type": np.int32}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(pools(), st.sampled_from(sorted(TYPES)), st.booleans(), st.integers(0, 2**31))
def test_random_pooling_matches_xla(pool: Pool, type_name: str, nhwc: bool, seed: int) -> None:
    dtype = np.dtype(TYPES[type_name])
    rng = np.random.default_rng(seed)
    lens = (2, 3, *pool.spatial)
    if dtype.kind == "i":
        x = rng.integers(-50, 50, lens).astype(dtype)
    else:
        x = rng.standard_normal(lens).astype(dtype)
    out_lens = [2, 3, *pool.out]
    strides_of = _nhwc_strides if nhwc else (lambda ls: list(layout.standard_strides(ls)))
    run = lambda: run_op(  # noqa: E731
        pool.field_text(), [(x, strides_of(list(lens)))], out_lens, strides_of(out_lens), type_name
    )
    if _refused_by_migraphx(pool):
        with pytest.raises(ConvcanonError, match="POOLING: invalid attributes"):
            run()
        return
    expected = expected_pool(x, pool, dtype)
    got = run()
    if dtype.kind == "i":
        np.testing.assert_array_equal(got, expected)
    else:
        tol = 1e-3 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def test_max_pool_skips_nan_and_never_goes_below_the_lowest_value() -> None:
    """MIGraphX folds std::max from lowest(): padding alone, -inf, and NaNs alone give it; a
    NaN beside a number is skipped."""
    x = np.array([[[-np.inf, 1.0, np.nan, np.nan]]], dtype=np.float32)
    got = run_op(
        "pooling[mode=max,padding={2, 0},stride={1},lengths={2}](ARGS)",
        [(x, [4, 4, 1])],
        [1, 1, 5],
        None,
    )
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(got, [[[lowest, lowest, 1.0, 1.0, lowest]]])
