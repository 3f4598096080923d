"""A float element list in hex (how MLIR prints NaNs, infinities and every bf16/f8 literal) is
read bit for bit, signalling NaNs and NaN payloads included, as XLA reads it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.verify.engines import reference_engine, xla_engine

# element: (width, exponent bits)
FORMATS = {"f16": (16, 5), "bf16": (16, 8), "f32": (32, 8), "f64": (64, 11)}

MODULE = """func.func @main() -> tensor<{n}xui{w}> {{
  %0 = stablehlo.constant dense<[{tokens}]> : tensor<{n}x{e}>
  %1 = stablehlo.bitcast_convert %0 : (tensor<{n}x{e}>) -> tensor<{n}xui{w}>
  return %1 : tensor<{n}xui{w}>
}}
"""


def _patterns(width: int, exponent: int) -> st.SearchStrategy[int]:
    """Any bit pattern, and often a NaN (all-ones exponent, any sign, nonzero payload): where a
    detour through another float type loses bits."""
    mantissa = width - 1 - exponent
    nans = st.builds(
        lambda sign, payload: sign << (width - 1) | ((1 << exponent) - 1) << mantissa | payload,
        st.integers(0, 1),
        st.integers(1, (1 << mantissa) - 1),
    )
    return st.one_of(st.integers(0, 2**width - 1), nans)


@pytest.mark.parametrize("element", list(FORMATS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_hex_float_literal_is_read_bit_for_bit(element: str, data: st.DataObject) -> None:
    width, exponent = FORMATS[element]
    bits = data.draw(st.lists(_patterns(width, exponent), min_size=1, max_size=6))
    tokens = ", ".join(f"0x{b:0{width // 4}X}" for b in bits)
    text = MODULE.format(n=len(bits), e=element, w=width, tokens=tokens)
    assert [int(b) for b in reference_engine(text, "m.mlir", "main", [])[0]] == bits, text
    assert [int(b) for b in xla_engine(text, "m.mlir", "main", [])[0]] == bits, text
