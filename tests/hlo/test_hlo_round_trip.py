"""Every form JAX prints (pretty or generic, with or without locations) prints back unchanged."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from convcanon.driver import transform_text


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    y = jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 2), (0, 1)], rhs_dilation=(1, 2))
    return jnp.maximum(y, 0.0)


@pytest.fixture(scope="module")
def jax_module():
    x, w = jnp.ones((1, 3, 9, 9), jnp.float32), jnp.ones((4, 3, 3, 3), jnp.float32)
    return jax.jit(_conv).lower(x, w).compiler_ir("stablehlo")


@pytest.mark.parametrize(
    "form",
    [
        {},
        {"print_generic_op_form": True},
        {"enable_debug_info": True},
        {"enable_debug_info": True, "print_generic_op_form": True},
    ],
    ids=["pretty", "generic", "debug-info", "generic-debug-info"],
)
def test_no_pass_prints_jax_output_unchanged(jax_module, form: dict[str, bool]):
    text = jax_module.operation.get_asm(**form)
    assert transform_text(text, "jax.mlir", "") == text


def test_generic_input_stays_generic_after_the_pass(jax_module):
    text = jax_module.operation.get_asm(print_generic_op_form=True)
    out = transform_text(text, "jax.mlir", "stablehlo-canonicalize-conv{gate=general}")
    assert out.startswith('"builtin.module"()')
    assert '"stablehlo.pad"' in out and '"stablehlo.slice"' in out
    assert transform_text(out, "jax.mlir", "") == out
