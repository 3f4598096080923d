"""Export a flax ResNet-50 (NHWC, batch 1, 224x224x3, inference BatchNorm) to StableHLO text.

The benchmarks need a real, large model that JAX itself produced. Parameters and batch statistics
are function arguments (not constants), so the file stays small (~1k lines) and can be committed.

Run: python tools/export_resnet50.py [OUT]   (needs jax and flax; default bench/models/...)
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
from flax import linen as nn

DEFAULT_OUT = (
    Path(__file__).resolve().parent.parent / "bench" / "models" / "resnet50.stablehlo.mlir"
)

Norm = partial(nn.BatchNorm, use_running_average=True, momentum=0.9, epsilon=1e-5)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carries the stride, as in torchvision's v1.5), 1x1 expand, residual add."""

    features: int
    strides: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        residual = x
        y = nn.Conv(self.features, (1, 1), use_bias=False)(x)
        y = nn.relu(Norm()(y))
        y = nn.Conv(
            self.features,
            (3, 3),
            strides=(self.strides, self.strides),
            padding=((1, 1), (1, 1)),
            use_bias=False,
        )(y)
        y = nn.relu(Norm()(y))
        y = nn.Conv(self.features * 4, (1, 1), use_bias=False)(y)
        y = Norm(scale_init=nn.initializers.zeros)(y)
        if residual.shape != y.shape:
            residual = nn.Conv(
                self.features * 4, (1, 1), strides=(self.strides, self.strides), use_bias=False
            )(residual)
            residual = Norm()(residual)
        return nn.relu(residual + y)


class ResNet50(nn.Module):
    """Stem 7x7/2 + 3x3/2 max pool, stages [3, 4, 6, 3] of bottlenecks, global mean pool, dense."""

    num_classes: int = 1000
    stage_sizes: tuple[int, ...] = (3, 4, 6, 3)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.Conv(64, (7, 7), strides=(2, 2), padding=((3, 3), (3, 3)), use_bias=False)(x)
        x = nn.relu(Norm()(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))  # pyright: ignore[reportArgumentType]
        for stage, blocks in enumerate(self.stage_sizes):
            for block in range(blocks):
                strides = 2 if stage > 0 and block == 0 else 1
                x = Bottleneck(64 * 2**stage, strides)(x)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes)(x)


def export_resnet50() -> str:
    """StableHLO text of `apply(variables, x)`; weights and running statistics are arguments."""
    model = ResNet50()
    x = jnp.zeros((1, 224, 224, 3), jnp.float32)
    variables = jax.eval_shape(model.init, jax.random.PRNGKey(0), x)
    lowered = jax.jit(lambda v, x: model.apply(v, x)).lower(variables, x)
    return lowered.as_text()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(export_resnet50())
    print("wrote", out)
