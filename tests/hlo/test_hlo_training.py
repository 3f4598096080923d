"""Training graphs from JAX: `jax.grad` through small flax CNNs, canonicalized in both dialects.

The gradient of a strided conv is a lhs-dilated conv (input gradient) and a rhs-dilated one
(weight gradient); grouped convs give batch-grouped weight gradients. Every output conv must be
canonical, cost exactly the lattice multiply-adds, and compute what XLA computes on the original.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.phase_plan import lattice_macs

from .cases import (
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    mac_ceiling,
    parse,
    run_pass,
    xla,
)


class Net2D(nn.Module):
    """Strided, grouped, depthwise and dilated convs, then a ConvTranspose decoder."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME")(x))
        x = nn.Conv(8, (3, 3), padding="SAME", feature_group_count=2)(x)
        x = nn.Conv(8, (3, 3), strides=(2, 1), padding=((1, 0), (2, 1)), feature_group_count=8)(x)
        x = nn.relu(nn.Conv(6, (3, 3), kernel_dilation=(2, 2), padding="VALID")(x))
        x = nn.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME")(x)
        return nn.ConvTranspose(3, (4, 4), strides=(2, 2), padding="VALID")(x)


class Net1D(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Conv(4, (5,), strides=(3,), padding="SAME")(x))
        return nn.ConvTranspose(2, (3,), strides=(2,), padding="VALID")(x)


class Net3D(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Conv(4, (3, 3, 3), strides=(2, 2, 2), padding="SAME")(x))
        return nn.ConvTranspose(2, (2, 3, 3), strides=(2, 1, 2), padding="SAME")(x)


MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "2d": (Net2D, (2, 21, 19, 4)),
    "1d": (Net1D, (2, 23, 3)),
    "3d": (Net3D, (1, 7, 9, 8, 2)),
}


def training_step(model: nn.Module, shape: tuple[int, ...]) -> tuple[str, list[np.ndarray]]:
    """StableHLO of `grad` of a squared-error loss w.r.t. the params and the input, and inputs."""
    x = jax.ShapeDtypeStruct(shape, jnp.float32)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0), x)
    flat, tree = jax.tree_util.tree_flatten(params)

    def loss(leaves: list[jax.Array], x: jax.Array) -> jax.Array:
        y = cast(jax.Array, model.apply(jax.tree_util.tree_unflatten(tree, leaves), x))
        return jnp.mean(jnp.square(y - 0.5))

    text = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(flat, x).as_text()
    rng = np.random.default_rng(11)
    inputs = [rng.standard_normal(a.shape).astype(np.float32) for a in [*flat, x]]
    return text, inputs


@pytest.fixture(scope="module", params=list(MODELS))
def step(request: pytest.FixtureRequest) -> tuple[str, list[np.ndarray]]:
    make, shape = MODELS[request.param]
    return training_step(make(), shape)


@pytest.mark.parametrize(
    "dialect", [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]
)
def test_training_step_is_canonical_costs_the_lattice_and_matches_xla(
    step: tuple[str, list[np.ndarray]], dialect: Dialect
) -> None:
    text, inputs = step
    before = all_conv_params(parse(text, dialect), dialect)
    assert any(d > 1 for p in before for d in p.lhs_dilation)  # input gradients of strided convs
    after, stats, _ = run_pass(text, dialect, gate="general")
    assert stats.counters["convs-seen"] == len(before)
    skipped = {k for k in stats.counters if k.startswith("skipped")}
    assert skipped <= {"skipped: already canonical (zero padding, unit stride, no lhs dilation)"}
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    # the lattice floor; a strided conv over a few input features (the image) may zero-extend
    # its kernel, as the engine policy chooses, within max-mac-ratio
    floor = sum(lattice_macs(p) for p in before)
    assert floor <= sum(p.macs for p in params) <= mac_ceiling(before, gate="general")
    expected = xla(text, inputs)
    got = xla(as_stablehlo_text(after, dialect), inputs)
    for e, g in zip(expected, got, strict=True):
        assert e.shape == g.shape
        scale = max(1e-3, float(np.max(np.abs(e))))
        np.testing.assert_allclose(g, e, atol=2e-5 * scale, rtol=0)
