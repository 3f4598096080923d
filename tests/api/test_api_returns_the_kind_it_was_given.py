"""`canonicalize_conv` takes text, MLIR bytecode, a StableHLO portable artifact or a
`jax.export.Exported`, and returns the kind it was given (before, bytes were a TypeError)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import convcanon
from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.hlo.context import ir, make_context, parse_module, print_module
from convcanon.hlo.formats import artifact_version, module_bytecode

CNN = Path(__file__).resolve().parents[2] / "examples" / "small_cnn.stablehlo.mlir"


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), [(2, 1), (1, 2)])


X = jnp.asarray(np.random.default_rng(0).standard_normal((1, 3, 10, 9)), jnp.float32)
W = jnp.asarray(np.random.default_rng(1).standard_normal((5, 3, 3, 3)), jnp.float32)


def test_bytecode_in_gives_bytecode_out() -> None:
    text = CNN.read_text()
    from_text = convcanon.canonicalize_conv(text, gate="general")
    result = convcanon.canonicalize_conv(module_bytecode(parse_module(text, "cnn")), gate="general")
    assert result.serialized is not None and artifact_version(result.serialized) is None
    assert result.text == from_text.text and result.stats == from_text.stats
    back = ir.Module.parse(result.serialized, make_context())
    assert print_module(back) == from_text.text


def test_an_artifact_in_gives_an_artifact_for_the_same_version() -> None:
    exported = export.export(jax.jit(_conv))(X, W)
    given = exported.mlir_module_serialized
    result = convcanon.canonicalize_conv(given, gate="general")
    assert result.serialized is not None
    assert artifact_version(result.serialized) == artifact_version(given) is not None
    assert result.stats["rewritten-pad"] == 1
    rewritten = dataclasses.replace(exported, mlir_module_serialized=result.serialized)
    again = export.deserialize(rewritten.serialize())
    np.testing.assert_allclose(again.call(X, W), _conv(X, W), rtol=1e-5, atol=1e-5)


def test_an_exported_in_gives_an_exported_out() -> None:
    exported = export.export(jax.jit(_conv))(X, W)
    result = convcanon.canonicalize_conv(exported, gate="general")
    assert isinstance(result, export.Exported)
    assert "stablehlo.pad" in result.mlir_module()
    np.testing.assert_allclose(result.call(X, W), _conv(X, W), rtol=1e-5, atol=1e-5)


def test_an_exported_with_the_mhlo_dialect_is_refused_not_run_as_stablehlo() -> None:
    exported = export.export(jax.jit(_conv))(X, W)
    with pytest.raises(UsageError, match="holds StableHLO, not 'mhlo'"):
        convcanon.canonicalize_conv(exported, "mhlo", gate="general")


@pytest.mark.parametrize("data", [b"module {}", b"ML\xefR\x05junk"])
def test_bytes_that_are_no_bytecode_are_a_convcanon_error(data: bytes) -> None:
    with pytest.raises(ConvcanonError) as raised:
        convcanon.canonicalize_conv(data)
    assert raised.value.render().startswith("<bytes>: error: ")
