"""Property: for any f32 values (the whole range, subnormals, infinities, NaN), the conformant
encodings equal MIGraphX's rules, and decoding them gives back each code's value; on IREE (one
compile per type, every example a run) and on our TOSA interpreter."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from convcanon.tosa.storage import value_dtype

from .test_conformant_codes import FLOATS, lowered, migraphx_codes, on_both_engines

N = 64

# f32 -> T -> f32, returning both the codes and their decoded values
ROUND_TRIP = """\
func.func @main(%x: !migraphx.shaped<{n}xf32, 1>) -> (!migraphx.shaped<{n}x{t}, 1>, \
!migraphx.shaped<{n}xf32, 1>) {{
  %0 = migraphx.convert %x : <{n}xf32, 1> to <{n}x{t}, 1>
  %1 = migraphx.convert %0 : <{n}x{t}, 1> to <{n}xf32, 1>
  return %0, %1 : !migraphx.shaped<{n}x{t}, 1>, !migraphx.shaped<{n}xf32, 1>
}}
"""


@cache
def round_trip(element: str) -> str:
    return lowered(ROUND_TRIP.format(n=N, t=element))


f32_arrays = arrays(np.float32, N, elements=st.floats(width=32, allow_nan=True))


@pytest.mark.parametrize("element", FLOATS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=f32_arrays)
def test_any_f32_encodes_as_migraphx_does_and_decodes_back(element: str, x: np.ndarray) -> None:
    expected = migraphx_codes(x, element)
    decoded = expected.view(value_dtype(element)).astype(np.float32)
    for engine, (codes, back) in on_both_engines(round_trip(element), [x]).items():
        np.testing.assert_array_equal(codes.view(np.uint8), expected, err_msg=engine)
        np.testing.assert_array_equal(np.isnan(back), np.isnan(decoded), err_msg=engine)
        same = ~np.isnan(decoded)
        np.testing.assert_array_equal(
            back.view(np.uint32)[same], decoded.view(np.uint32)[same], err_msg=engine
        )
