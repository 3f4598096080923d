"""MIGraphX's batch_norm_inference in the reference interpreter agrees with XLA (its formula in
f64, rounded once) over random shapes, both modes (spatial: one parameter per channel;
per_activation: one per element of a batch entry), layouts and element types."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.migraphx import layout

from .test_migraphx_semantics import _nhwc_strides, run_op

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def _x64_for_this_test():
    with jax.enable_x64(True):
        yield


TYPES = {"float_type": np.float32, "half_type": np.float16, "double_type": np.float64}


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(
    st.lists(st.integers(1, 4), min_size=2, max_size=5),
    st.sampled_from([0, 1]),
    st.sampled_from(sorted(TYPES)),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_random_batch_norm_matches_xla(
    lens: list[int], bn_mode: int, type_name: str, nhwc: bool, seed: int
) -> None:
    dtype = np.dtype(TYPES[type_name])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(lens).astype(dtype)
    plens = [lens[1]] if bn_mode == 1 else lens[1:]
    scale, bias, mean = (rng.standard_normal(plens).astype(dtype) for _ in range(3))
    variance = rng.uniform(0.1, 2.0, plens).astype(dtype)
    strides = _nhwc_strides(lens) if nhwc else list(layout.standard_strides(lens))
    params = [(p, list(layout.standard_strides(plens))) for p in (scale, bias, mean, variance)]
    got = run_op(
        f"batch_norm_inference[epsilon=1e-05,momentum=0.9,bn_mode={bn_mode}](ARGS)",
        [(x, strides), *params],
        lens,
        strides,
        type_name,
    )
    shape = [1, lens[1], *([1] * (len(lens) - 2))] if bn_mode == 1 else [1, *lens[1:]]
    s, b, m, v = (
        jnp.asarray(p.astype(np.float64).reshape(shape)) for p in (scale, bias, mean, variance)
    )
    eps = float(np.float32(1e-5))
    expected = np.asarray(s * (jnp.asarray(x.astype(np.float64)) - m) / jnp.sqrt(v + eps) + b)
    tol = {"half_type": 2e-3, "float_type": 1e-6, "double_type": 1e-12}[type_name]
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)
