"""Regenerate the bundled example models (StableHLO text exported by JAX).

Run: python tools/export_examples.py   (needs jax and flax; the outputs are committed)
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from flax import linen as nn

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class SmallCNN(nn.Module):
    """A ResNet-style stem and block: 7x7/2 conv, 3x3/2 conv, 1x1/2 projection, pooling, dense."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.Conv(8, (7, 7), strides=(2, 2), padding=((3, 3), (3, 3)))(x)
        x = nn.relu(x)
        y = nn.Conv(16, (3, 3), strides=(2, 2), padding="SAME")(x)
        y = nn.relu(y)
        y = nn.Conv(16, (3, 3), padding=((1, 1), (1, 1)))(y)
        y = nn.Conv(16, (3, 3), padding=((2, 2), (2, 2)), kernel_dilation=(2, 2))(y)
        shortcut = nn.Conv(16, (1, 1), strides=(2, 2))(x)
        x = nn.relu(y + shortcut)
        x = nn.Conv(16, (3, 3), strides=(2, 2), padding=((1, 0), (0, 1)), feature_group_count=4)(x)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(10)(x)


def export_small_cnn() -> str:
    model = SmallCNN()
    x = jnp.zeros((1, 32, 32, 3), jnp.float32)
    params = model.init(jax.random.PRNGKey(0), x)
    lowered = jax.jit(lambda p, x: model.apply(p, x)).lower(params, x)
    return lowered.as_text()


if __name__ == "__main__":
    EXAMPLES.mkdir(exist_ok=True)
    (EXAMPLES / "small_cnn.stablehlo.mlir").write_text(export_small_cnn())
    print("wrote", EXAMPLES / "small_cnn.stablehlo.mlir")
