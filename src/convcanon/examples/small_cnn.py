"""The small ResNet-style CNN of the README: a flax model, its parameters and an input.

The repository's `examples/small_cnn.stablehlo.mlir` is `export_stablehlo()`'s output (regenerate
it with `tools/export_examples.py`). Every conv kind the rewrite handles appears once: a 7x7/2
stem, a 3x3/2 "SAME" conv, a plain and a dilated 3x3, a 1x1/2 projection and a grouped strided conv.
"""

from __future__ import annotations

from typing import Any

try:
    import jax
    import jax.numpy as jnp
    from flax import linen as nn
except ModuleNotFoundError as err:  # the core install has neither
    raise ModuleNotFoundError(
        f"convcanon.examples.small_cnn needs JAX and flax ({err.name} is not installed): "
        "pip install 'convcanon[examples]'",
        name=err.name,
    ) from None

INPUT_SHAPE = (1, 32, 32, 3)  # NHWC


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


model = SmallCNN()


def example_input(seed: int = 0) -> jax.Array:
    """A random NHWC image batch of `INPUT_SHAPE` (float32)."""
    return jax.random.normal(jax.random.PRNGKey(seed), INPUT_SHAPE, jnp.float32)


def params(seed: int = 0) -> Any:
    """The model's parameters, initialized deterministically from `seed`."""
    return model.init(jax.random.PRNGKey(seed), jnp.zeros(INPUT_SHAPE, jnp.float32))


def apply(variables: Any, x: jax.Array) -> jax.Array:
    """The forward pass: `apply(params(), example_input())` is a (1, 10) array of logits."""
    return model.apply(variables, x)  # type: ignore[return-value]  # flax types it as Any


def example_arguments(seed: int = 0) -> list[Any]:
    """The exported module's arguments in order (`arg0`, `arg1`, ...): the parameter leaves as
    `jax.jit` flattens them, then the input; `examples/small_cnn.inputs.npz` holds these."""
    return jax.tree_util.tree_leaves((params(seed), example_input(seed)))


def export_stablehlo() -> str:
    """The StableHLO text JAX lowers the forward pass to (the bundled example file's contents)."""
    x = jnp.zeros(INPUT_SHAPE, jnp.float32)
    return jax.jit(lambda p, x: model.apply(p, x)).lower(params(), x).as_text()
