"""`from_jax` on a training step: a jitted `jax.grad` of a flax CNN with a ConvTranspose, end to
end (lowered, canonicalized with the polyphase lhs-dilation rewrite, checked on XLA)."""

from __future__ import annotations

import re
from typing import Any, cast

import jax
import jax.numpy as jnp
from flax import linen as nn

import convcanon


class AutoEncoder(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME")(x))
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME", feature_group_count=2)(x))
        x = nn.relu(nn.ConvTranspose(8, (3, 3), strides=(2, 2), padding="SAME")(x))
        return nn.ConvTranspose(3, (4, 4), strides=(2, 2), padding="VALID")(x)


def test_from_jax_canonicalizes_a_training_step_and_it_matches_xla() -> None:
    model = AutoEncoder()
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 16, 16, 3))
    params = model.init(jax.random.PRNGKey(0), x)

    def loss(params: Any, x: jax.Array) -> jax.Array:
        y = cast(jax.Array, model.apply(params, x))
        return jnp.mean(jnp.square(y[:, : x.shape[1], : x.shape[2]] - x))

    step = jax.grad(loss)
    result = convcanon.from_jax(step, params, x, compare=True, gate="general")
    assert result.max_abs_error is not None
    assert result.stats["rewritten-lhs-dilation"] >= 3  # input gradients and the decoder
    assert not [k for k in result.stats if k.startswith("skipped") and "already" not in k]
    units = re.findall(r"(?:stride|lhs_dilate) = \[([^\]]*)\]", result.text)
    assert units and {v for u in units for v in u.split(", ")} == {"1"}
    pads = re.findall(r"pad = \[(\[.*?\])\]", result.text)
    assert all(set(re.findall(r"-?\d+", pad)) == {"0"} for pad in pads)
    assert "lhs_dilate" in result.original_text
