"""`from_jax` has no side effects on JAX and accepts every function `jax.jit` accepts."""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

import convcanon


def _strided_conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (1, 1)])


def _inputs() -> tuple[jax.Array, jax.Array]:
    x = jax.random.normal(jax.random.PRNGKey(0), (1, 3, 8, 8), jnp.float32)
    w = jax.random.normal(jax.random.PRNGKey(1), (4, 3, 3, 3), jnp.float32)
    return x, w


def test_compare_leaves_jax_config_as_it_found_it():
    before = dict(jax.config.values)
    assert before["jax_enable_x64"] is False  # the default this test guards
    out = convcanon.from_jax(_strided_conv, *_inputs(), compare=True, gate="general")
    assert out.max_abs_error is not None and out.max_abs_error < 1e-4
    assert dict(jax.config.values) == before
    assert jnp.ones(2).dtype == jnp.float32  # user code after the call still gets float32
    assert (jnp.ones(2, jnp.float32) + np.ones(2)).dtype == jnp.float32


def test_unused_argument_is_dropped_as_jit_drops_it():
    def conv_ignoring_bias(x: jax.Array, w: jax.Array, bias: jax.Array) -> jax.Array:
        return _strided_conv(x, w)

    out = convcanon.from_jax(conv_ignoring_bias, *_inputs(), jnp.ones(4), compare=True)
    assert out.max_abs_error is not None and out.max_abs_error < 1e-4
    assert out.stats["rewritten-stride"] == 1


def test_float64_numpy_input_is_fed_as_the_float32_jax_lowered():
    x, w = _inputs()
    out = convcanon.from_jax(_strided_conv, np.asarray(x, np.float64), w, compare=True)
    assert out.max_abs_error is not None and out.max_abs_error < 1e-4


def test_without_jax_the_error_names_the_xla_extra():
    code = (
        "import sys; sys.modules['jax'] = None\n"
        "import convcanon\n"
        "try:\n"
        "    convcanon.from_jax(lambda x: x, 1.0)\n"
        "except ModuleNotFoundError as err:\n"
        "    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "pip install 'convcanon[xla]'" in result.stdout


def test_the_xla_engine_runs_64_bit_inputs_without_changing_jax_config():
    from convcanon.verify.xla_engine import run_stablehlo_text

    before = dict(jax.config.values)
    module = (
        "func.func @main(%arg0: tensor<2xf64>) -> tensor<2xf64> {\n"
        "  %0 = stablehlo.add %arg0, %arg0 : tensor<2xf64>\n"
        "  return %0 : tensor<2xf64>\n}\n"
    )
    x = np.array([1.0 + 2.0**-40, 3.0])
    (result,) = run_stablehlo_text(module, [x])
    assert result.dtype == np.float64 and np.array_equal(result, 2 * x)
    assert dict(jax.config.values) == before
