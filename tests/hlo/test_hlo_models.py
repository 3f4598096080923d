"""Real models: the bundled JAX-exported CNN and a flax CNN exported here, canonicalized and run."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from convcanon.hlo.dialects import MHLO, STABLEHLO
from convcanon.hlo.explain import explain_module
from convcanon.hlo.phase_plan import lattice_macs

from .cases import (
    EXAMPLES,
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    mac_ceiling,
    parse,
    run_pass,
    total_macs,
    xla,
)


class TinyCNN(nn.Module):
    """Strided, dilated, grouped, SAME/VALID and 1-D/3-D convs, like a real network's mix."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.Conv(6, (5, 5), strides=(2, 2), padding="SAME")(x)
        x = nn.relu(x)
        x = nn.Conv(6, (3, 3), strides=(3, 2), padding=((2, 0), (1, 1)), feature_group_count=3)(x)
        x = nn.Conv(4, (2, 2), kernel_dilation=(2, 1), padding="VALID")(x)
        y = nn.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME")(x)
        y = jnp.mean(y, axis=(1, 2))
        z = nn.Conv(3, (3,), strides=(2,), padding="CIRCULAR")(x.reshape(x.shape[0], -1, 4))
        return jnp.concatenate([y, z.mean(axis=1)], axis=-1)


@pytest.fixture(scope="module")
def flax_export() -> tuple[str, list[np.ndarray]]:
    model = TinyCNN()
    x = jax.ShapeDtypeStruct((2, 23, 19, 3), jnp.float32)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0), x)  # shapes only: no compile
    flat, tree = jax.tree_util.tree_flatten(params)

    def apply(leaves: list[jax.Array], x: jax.Array) -> jax.Array:
        return model.apply(jax.tree_util.tree_unflatten(tree, leaves), x)

    text = jax.jit(apply).lower(flat, x).as_text()
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(a.shape).astype(np.float32) for a in [*flat, x]]
    return text, inputs


def _main_inputs(text: str, seed: int) -> list[np.ndarray]:
    signature = re.search(r"func\.func public @main\((.*?)\) ->", text)
    assert signature is not None
    shapes = re.findall(r"tensor<([\dx]*)f32>", signature[1])
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal(tuple(int(d) for d in s.split("x") if d)).astype(np.float32)
        for s in shapes
    ]


@pytest.mark.parametrize("dialect", [STABLEHLO, MHLO], ids=["stablehlo", "mhlo"])
def test_small_cnn_example_matches_xla_after_canonicalization(dialect) -> None:
    text = (EXAMPLES / "small_cnn.stablehlo.mlir").read_text()
    after, _, _ = run_pass(text, dialect, gate="general")
    params = all_conv_params(after, dialect)
    # 6 convs: the 7x7/2 RGB stem split into its 4 phases (the default policy zero-extends a
    # stem's kernel only where a phase is a line), two 3x3/2 convs into 2x2 and 1x1 phases with
    # their 2x1 and 1x2 line phases one 1x1 conv per tap (4 + 2 x 6 + 3 unit-stride convs)
    assert len(params) == 19
    assert_canonical(params)
    before = all_conv_params(parse(text, dialect), dialect)
    assert total_macs(before) == total_macs(params) == 687104
    inputs = _main_inputs(text, seed=0)
    assert_same_results(xla(text, inputs), xla(as_stablehlo_text(after, dialect), inputs), "f32")
    # engine=xla-cpu: the stem is one conv over its fold with the kernel zero-extended to 8x8
    # (64/49 of its floor), the 3x3/2 convs four phase convs each
    after, _, _ = run_pass(text, dialect, gate="general", engine="xla-cpu")
    params = all_conv_params(after, dialect)
    assert len(params) == 12 and total_macs(params) == 779264
    assert total_macs(params) <= mac_ceiling(before, gate="general", engine="xla-cpu")
    inputs = _main_inputs(text, seed=0)
    assert_same_results(xla(text, inputs), xla(as_stablehlo_text(after, dialect), inputs), "f32")


def test_flax_cnn_matches_xla_after_canonicalization(flax_export) -> None:
    text, inputs = flax_export
    before = parse(text)
    n_convs = len(all_conv_params(before, STABLEHLO))
    assert n_convs == 5
    after, stats, printed = run_pass(text, STABLEHLO, gate="general")
    assert stats.counters["convs-seen"] == n_convs
    params = all_conv_params(after, STABLEHLO)
    assert_canonical(params)
    convs = all_conv_params(before, STABLEHLO)
    lattice = sum(lattice_macs(p) for p in convs)
    assert lattice < total_macs(convs)  # the ConvTranspose's inserted zeros are never multiplied
    assert lattice <= total_macs(params) <= mac_ceiling(convs, gate="general")
    assert_same_results(xla(text, inputs), xla(printed, inputs), "f32")


def test_explain_predicts_exactly_the_ops_the_pass_adds(flax_export) -> None:
    text, _ = flax_export
    rows, _ = explain_module(text, "flax.mlir", "stablehlo-canonicalize-conv{gate=general}")
    predicted = Counter(op for row in rows for op in row["ops_added"])
    predicted["convolution"] -= len(rows)  # each rewritten conv replaces the original
    predicted["convolution"] += sum(row["decision"] == "skip" for row in rows)
    _, _, printed = run_pass(text, STABLEHLO, gate="general")
    count = Counter(re.findall(r"= stablehlo\.(\w+)", printed))
    original = Counter(re.findall(r"= stablehlo\.(\w+)", str(parse(text).module)))
    added = {k: count[k] - original[k] for k in set(count) | set(original)}
    assert {k: v for k, v in added.items() if v} == {k: v for k, v in predicted.items() if v}
    assert all(
        row["macs_after"] == row["lattice_macs_before"]
        for row in rows
        if row["merge"] == "exact" or row["decision"] == "skip"
    )
    assert any(row["lattice_macs_before"] < row["macs_before"] for row in rows)  # ConvTranspose
