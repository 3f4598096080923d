"""`from_jax(compare=True)` judges NaN and infinity as the program's values: a NaN both runs
compute is no mismatch, and an infinity in an output does not make its tolerance infinite."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convcanon
import convcanon.api as api

_DIMS = ("NHWC", "HWIO", "NHWC")


def _strided_conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=_DIMS)


def _operands() -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(1, 9, 9, 8)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(3, 3, 8, 2)), jnp.float32)
    return x, w


def test_nan_that_both_modules_compute_is_not_a_mismatch():
    def log_of_conv(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.log(_strided_conv(x, w))  # NaN wherever the conv is negative

    x, w = _operands()
    assert np.isnan(np.asarray(log_of_conv(x, w))).any()
    result = convcanon.from_jax(log_of_conv, x, w, compare=True, gate="general")
    assert result.stats["rewritten-stride"] == 1
    assert result.max_abs_error is not None and result.max_abs_error < 1e-4


def test_an_infinity_in_the_output_does_not_hide_a_wrong_rewrite(
    monkeypatch: pytest.MonkeyPatch,
):
    real = api.canonicalize_conv

    def corrupt(text: str, dialect: str = "stablehlo", **options: object):
        result = real(text, dialect, **options)  # type: ignore[arg-type]
        result.text = result.text.replace("stablehlo.add", "stablehlo.subtract", 1)
        return result

    def conv_and_infinity(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.concatenate([_strided_conv(x, w).ravel(), jnp.array([jnp.inf], jnp.float32)])

    monkeypatch.setattr(api, "canonicalize_conv", corrupt)
    x, w = _operands()
    with pytest.raises(AssertionError, match="output 0 is past float tolerance"):
        api.from_jax(conv_and_infinity, x, w, compare=True, gate="general")


_SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf])


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=40),
    specials=st.lists(st.tuples(st.integers(0, 39), _SPECIAL), max_size=5),
    noise=st.floats(0.0, 0.9),
    data=st.data(),
)
def test_outputs_match_iff_their_non_finite_values_do_and_the_rest_is_close(
    values: list[float],
    specials: list[tuple[int, float]],
    noise: float,
    data: st.DataObject,
):
    want = np.array(values)
    for index, special in specials:
        want[index % len(want)] = special
    finite = np.isfinite(want)
    scale = max(float(np.max(np.abs(want[finite]), initial=0.0)), 1.0)
    got = want.copy()
    got[finite] += noise * 1e-4 * scale  # within tolerance
    error, why = api._output_difference(want, got)  # pyright: ignore[reportPrivateUsage]
    assert why == "" and error <= 1e-4 * scale

    target = data.draw(st.integers(0, len(want) - 1))
    wrong = got.copy()
    if finite[target]:
        wrong[target] += 2e-4 * scale + 2e-4 * abs(want[target])
        expected = "is past float tolerance"
    else:
        wrong[target] = data.draw(st.sampled_from([0.0, np.nan, np.inf, -np.inf]))
        if np.array_equal(wrong[target : target + 1], want[target : target + 1], equal_nan=True):
            wrong[target] = 0.0
        expected = "NaN or an infinity"
    assert expected in api._output_difference(want, wrong)[1]  # pyright: ignore[reportPrivateUsage]
