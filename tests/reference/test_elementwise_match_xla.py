"""Every elementwise op JAX training graphs use agrees with XLA: float math (including chlo ops,
run through jaxlib's chlo-to-stablehlo expansion), integer bit ops, compare in every direction and
compare type, convert, bitcast_convert, reduce_precision, and complex parts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
import pytest
from jax import lax

from .jax_cases import check_jax, lower

RNG = np.random.default_rng(5)
X = (RNG.standard_normal((3, 7)) * 3).astype(np.float32)
Y = (RNG.standard_normal((3, 7)) * 3).astype(np.float32)
POS = np.abs(X) + np.float32(0.25)
UNIT = np.tanh(X).astype(np.float32)
SPECIAL = np.array(
    [[0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -0.5], [1.5, -2.5, 2.5, 1e-30, -1e30, 7.0, -7.0]],
    np.float32,
)
I32 = RNG.integers(-(2**31), 2**31, (3, 7), dtype=np.int64).astype(np.int32)
SHIFT = RNG.integers(-3, 40, (3, 7)).astype(np.int32)
U8 = RNG.integers(0, 256, (3, 7)).astype(np.uint8)

UNARY_FLOAT = {
    "exp": jnp.exp,
    "expm1": jnp.expm1,
    "tanh": jnp.tanh,
    "logistic": jax.nn.sigmoid,
    "cbrt": jnp.cbrt,
    "abs": jnp.abs,
    "sign": jnp.sign,
    "floor": jnp.floor,
    "ceil": jnp.ceil,
    "round_nearest_even": jnp.round,
    "round_nearest_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
    "sine": jnp.sin,
    "cosine": jnp.cos,
    "tan": jnp.tan,
    "negate": jnp.negative,
    "is_finite": jnp.isfinite,
    "square (chlo)": jnp.square,
    "sinh (chlo)": jnp.sinh,
    "cosh (chlo)": jnp.cosh,
    "atan (chlo)": jnp.arctan,
    "asinh (chlo)": jnp.arcsinh,
    "erf (chlo)": jsp.erf,
    "erfc (chlo)": jsp.erfc,
    "is_inf (chlo)": jnp.isinf,
    "gelu": jax.nn.gelu,
    "softplus": jax.nn.softplus,
}
UNARY_POSITIVE = {
    "log": jnp.log,
    "log1p": jnp.log1p,
    "sqrt": jnp.sqrt,
    "rsqrt": lax.rsqrt,
    "lgamma (chlo)": jsp.gammaln,
    "digamma (chlo)": jsp.digamma,
    "acosh (chlo)": lambda x: jnp.arccosh(x + 1),
}
UNARY_UNIT = {
    "asin (chlo)": jnp.arcsin,
    "acos (chlo)": jnp.arccos,
    "atanh (chlo)": jnp.arctanh,
    "erf_inv (chlo)": jsp.erfinv,
}
BINARY_FLOAT = {
    "atan2": jnp.arctan2,
    "power": lambda a, b: jnp.power(jnp.abs(a), b),
    "remainder": lax.rem,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "clamp": lambda a, b: lax.clamp(jnp.float32(-1), a, jnp.abs(b)),
    "select": lambda a, b: jnp.where(a > b, a, b),
    "next_after (chlo)": jnp.nextafter,
}
INTEGER = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "not": lambda a, b: ~a,
    "shift_left": lax.shift_left,
    "shift_right_logical": lax.shift_right_logical,
    "shift_right_arithmetic": lax.shift_right_arithmetic,
    "popcnt": lambda a, b: lax.population_count(a),
    "clz": lambda a, b: lax.clz(a),
    "abs": lambda a, b: jnp.abs(a),
    "negate": lambda a, b: -a,
    "multiply (wraps)": lambda a, b: a * b,
    "power": lambda a, b: lax.integer_pow(a, 3),
    "clamp": lambda a, b: lax.clamp(a.dtype.type(5), a, a.dtype.type(70)),
}


@pytest.mark.parametrize("name", list(UNARY_FLOAT))
def test_unary_float_op_matches_xla(name: str) -> None:
    fn = UNARY_FLOAT[name]
    check_jax(lambda x, s: (fn(x), fn(s)), X, SPECIAL)


@pytest.mark.parametrize("name", list(UNARY_POSITIVE))
def test_unary_op_on_positive_inputs_matches_xla(name: str) -> None:
    check_jax(UNARY_POSITIVE[name], POS)


@pytest.mark.parametrize("name", list(UNARY_UNIT))
def test_unary_op_on_unit_interval_matches_xla(name: str) -> None:
    check_jax(UNARY_UNIT[name], UNIT)


@pytest.mark.parametrize("name", list(BINARY_FLOAT))
def test_binary_float_op_matches_xla(name: str) -> None:
    check_jax(BINARY_FLOAT[name], X, Y)


@pytest.mark.parametrize("name", list(INTEGER))
def test_integer_op_matches_xla(name: str) -> None:
    fn = INTEGER[name]
    check_jax(lambda a, b, u: (fn(a, b), fn(u, u)), I32, SHIFT, U8)


def test_chlo_ops_are_expanded_before_running() -> None:
    text = lower(lambda x: jnp.square(x) + jsp.erf(x), X)
    assert "chlo.square" in text and "chlo.erf" in text
    check_jax(lambda x: jnp.square(x) + jsp.erf(x), X)


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
@pytest.mark.parametrize("compare_type", ["FLOAT", "TOTALORDER"])
def test_float_compare_matches_xla(direction: str, compare_type: str) -> None:
    """SPECIAL against its reverse covers NaN, -0 vs +0 and infinities in both orders."""
    kind = "f32"
    t = f"tensor<2x7x{kind}>"
    text = f"""func.func public @main(%a: {t}, %b: {t}) -> tensor<2x7xi1> {{
  %0 = stablehlo.compare {direction}, %a, %b, {compare_type} : ({t}, {t}) -> tensor<2x7xi1>
  return %0 : tensor<2x7xi1>
}}
"""
    from .xla_compare import assert_matches_xla

    assert_matches_xla(text, [SPECIAL, SPECIAL[:, ::-1].copy()])


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_integer_compare_matches_xla(direction: str) -> None:
    from .xla_compare import assert_matches_xla

    rows = []
    for element, compare_type, a, b in [
        ("i32", "SIGNED", I32, I32[:, ::-1]),
        ("ui8", "UNSIGNED", U8, U8[:, ::-1]),
    ]:
        t = f"tensor<3x7x{element}>"
        rows.append(
            (
                f"""func.func public @main(%a: {t}, %b: {t}) -> tensor<3x7xi1> {{
  %0 = stablehlo.compare {direction}, %a, %b, {compare_type} : ({t}, {t}) -> tensor<3x7xi1>
  return %0 : tensor<3x7xi1>
}}
""",
                [a, b.copy()],
            )
        )
    for text, inputs in rows:
        assert_matches_xla(text, inputs)


@pytest.mark.parametrize(
    "target", [jnp.int32, jnp.uint8, jnp.int8, jnp.bool_, jnp.float16, jnp.bfloat16, jnp.float32]
)
def test_convert_matches_xla(target: object) -> None:
    """Out of range floats, NaN and infinities saturate or map as XLA does."""
    big = (SPECIAL * np.float32(1e3)).astype(np.float32)
    check_jax(lambda x, s, i: (x.astype(target), s.astype(target), i.astype(target)), X, big, I32)


def test_bitcast_convert_matches_xla() -> None:
    check_jax(
        lambda x, i: (
            lax.bitcast_convert_type(x, jnp.int32),
            lax.bitcast_convert_type(i, jnp.float32),
            lax.bitcast_convert_type(x, jnp.uint8),
        ),
        X,
        I32,
    )


@pytest.mark.parametrize(("exponent", "mantissa"), [(5, 10), (8, 7), (4, 3), (2, 0), (8, 23)])
def test_reduce_precision_matches_xla(exponent: int, mantissa: int) -> None:
    tiny = (X * np.float32(1e-6)).astype(np.float32)
    check_jax(
        lambda x, s, t: tuple(lax.reduce_precision(v, exponent, mantissa) for v in (x, s, t)),
        X * np.float32(1e4),
        SPECIAL,
        tiny,
    )


def test_complex_parts_match_xla() -> None:
    check_jax(
        lambda a, b: (
            jnp.real(lax.complex(a, b) * lax.complex(b, a)),
            jnp.imag(lax.complex(a, b) * lax.complex(b, a)),
            jnp.abs(lax.complex(a, b)),
        ),
        X,
        Y,
    )


def test_bf16_and_f16_math_rounds_like_xla() -> None:
    xb, xh = X.astype(jnp.bfloat16), X.astype(np.float16)
    check_jax(
        lambda b, h: (jnp.tanh(b) * b + 1, jnp.exp(h) / (1 + h * h), jax.nn.sigmoid(b)), xb, xh
    )


@pytest.mark.parametrize("name", list(INTEGER))
def test_integer_op_on_scalars_matches_xla(name: str) -> None:
    """0-d operands stay 0-d: numpy's `ascontiguousarray` made them 1-d (a shift of two scalars
    was refused as "computed shape [1], declared []")."""
    fn = INTEGER[name]
    check_jax(lambda a, b, u: (fn(a, b), fn(u, u)), I32[0, 0], SHIFT[0, 0], U8[0, 0])


def test_bit_level_ops_on_scalars_match_xla() -> None:
    check_jax(
        lambda x, i, s: (
            lax.bitcast_convert_type(x, jnp.int32),
            lax.bitcast_convert_type(i, jnp.float32),
            lax.bitcast_convert_type(x, jnp.uint8),
            lax.reduce_precision(x, 5, 2),
            lax.reduce_precision(s, 4, 3),
            jnp.transpose(x),
        ),
        X[0, 0],
        I32[0, 0],
        SPECIAL[0, 4],
    )


@pytest.mark.parametrize("direction", ["EQ", "LT", "GE"])
def test_compare_of_scalars_matches_xla(direction: str) -> None:
    from .xla_compare import assert_matches_xla

    for element, compare_type, a, b in [
        ("f32", "TOTALORDER", SPECIAL[0, 0], SPECIAL[0, 1]),
        ("ui8", "UNSIGNED", U8[0, 0], U8[0, 1]),
    ]:
        t = f"tensor<{element}>"
        text = f"""func.func public @main(%a: {t}, %b: {t}) -> tensor<i1> {{
  %0 = stablehlo.compare {direction}, %a, %b, {compare_type} : ({t}, {t}) -> tensor<i1>
  return %0 : tensor<i1>
}}
"""
        assert_matches_xla(text, [np.asarray(a), np.asarray(b)])
