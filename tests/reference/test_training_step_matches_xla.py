"""A real training step runs on the reference engine: `jax.grad` of a cross-entropy loss through a
small flax CNN (strided, grouped and depthwise convs, BatchNorm in training mode, max and average
pooling, GELU, a dense head) with a plain SGD update, exported by `jax.jit(...).lower(...)`.
It needs gather/scatter (the labels), select_and_scatter (the max-pool gradient), chlo.square
(BatchNorm's variance) and reduce_window; the reference engine's results must be XLA's."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from convcanon.cli import main

from .xla_compare import assert_matches_xla


@cache
def _training_step() -> tuple[str, tuple[np.ndarray, ...]]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.Conv(8, (3, 3), strides=(2, 2))(x)
            x = nn.BatchNorm(use_running_average=False)(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            x = nn.Conv(8, (3, 3), feature_group_count=2, kernel_dilation=(2, 2))(x)
            x = nn.Conv(8, (3, 3), feature_group_count=8, padding="VALID")(x)
            x = nn.gelu(x)
            x = nn.avg_pool(x, (2, 2), strides=(1, 1), padding="SAME")
            return nn.Dense(10)(x.reshape(x.shape[0], -1))

    model = CNN()
    images = np.random.default_rng(0).standard_normal((4, 16, 16, 3)).astype(np.float32)
    labels = np.array([1, 2, 9, 4], np.int32)
    variables = model.init(jax.random.PRNGKey(0), images)

    def loss(params: Any, stats: Any, x: jax.Array, y: jax.Array) -> tuple[jax.Array, Any]:
        logits, updated = model.apply(
            {"params": params, "batch_stats": stats}, x, mutable=["batch_stats"]
        )
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
        return -jnp.mean(picked), updated["batch_stats"]

    def step(params: Any, stats: Any, x: jax.Array, y: jax.Array) -> Any:
        (value, stats), grads = jax.value_and_grad(loss, has_aux=True)(params, stats, x, y)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return params, stats, value

    args = (variables["params"], variables["batch_stats"], images, labels)
    text = jax.jit(step).lower(*args).as_text()
    flat = tuple(np.asarray(a) for a in jax.tree_util.tree_leaves(args))
    return text, flat


def test_flax_cnn_training_step_matches_xla() -> None:
    text, inputs = _training_step()
    for op in ("stablehlo.gather", "stablehlo.scatter", "select_and_scatter", "chlo.square"):
        assert op in text, op
    assert_matches_xla(text, list(inputs))


@pytest.mark.parametrize("canonical", [False, True])
def test_verify_with_the_reference_engine_runs_a_training_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], canonical: bool
) -> None:
    text, _ = _training_step()
    before = tmp_path / "step.mlir"
    before.write_text(text)
    after = before
    if canonical:
        from convcanon.cli import opt_main

        after = tmp_path / "step.canonical.mlir"
        code = opt_main(
            [str(before), "-p", "stablehlo-canonicalize-conv{gate=general}", "-o", str(after)]
        )
        assert code == 0, capsys.readouterr().err
    code = main(["verify", str(before), str(after), "--engine", "reference", "--trials", "1"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "ok" in out, out


def test_dropout_training_step_matches_xla() -> None:
    """Dropout draws its mask with threefry (uint32 shifts and xors inside stablehlo.while);
    LayerNorm; the gradient step must be XLA's bit for bit in the mask."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.Conv(4, (3, 3))(x)
            x = nn.Dropout(0.3, deterministic=False)(x)
            x = nn.LayerNorm()(x)
            return nn.Dense(3)(x.reshape(x.shape[0], -1))

    net = Net()
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 3)).astype(np.float32)
    params = net.init({"params": jax.random.PRNGKey(0), "dropout": jax.random.PRNGKey(1)}, x)
    key = np.asarray(jax.random.key_data(jax.random.PRNGKey(3)))

    def step(p: Any, v: jax.Array, k: jax.Array) -> Any:
        def loss(q: Any) -> jax.Array:
            out = net.apply(q, v, rngs={"dropout": jax.random.wrap_key_data(k)})
            return jnp.sum(out**2)

        grads = jax.grad(loss)(p)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)

    text = jax.jit(step).lower(params, x, key).as_text()
    assert "stablehlo.while" in text and "shift_right_logical" in text
    leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves((params, x, key))]
    assert_matches_xla(text, leaves)


def test_bf16_training_step_matches_xla() -> None:
    """bf16 parameters and activations: each op rounds to bf16 as XLA's CPU backend does."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    bf16 = {"dtype": jnp.bfloat16, "param_dtype": jnp.bfloat16}

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(
                nn.BatchNorm(use_running_average=False, **bf16)(nn.Conv(8, (3, 3), 2, **bf16)(x))
            )
            x = nn.max_pool(x, (2, 2), (2, 2))
            return nn.Dense(10, **bf16)(x.mean((1, 2)))

    net = Net()
    x = np.random.default_rng(2).standard_normal((2, 16, 16, 3)).astype(jnp.bfloat16)
    variables = net.init(jax.random.PRNGKey(0), x)

    def step(params: Any, stats: Any, v: jax.Array) -> Any:
        def loss(p: Any) -> tuple[jax.Array, Any]:
            out, upd = net.apply({"params": p, "batch_stats": stats}, v, mutable=["batch_stats"])
            return jnp.mean(out.astype(jnp.float32) ** 2), upd

        grads, updated = jax.grad(loss, has_aux=True)(params)
        return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, params, grads), updated

    args = (variables["params"], variables["batch_stats"], x)
    text = jax.jit(step).lower(*args).as_text()
    assert "bf16" in text
    assert_matches_xla(text, [np.asarray(a) for a in jax.tree_util.tree_leaves(args)])
