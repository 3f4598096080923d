"""`stablehlo.convert` from float to integer matches XLA: truncated, NaN to 0, saturated at the
bounds of the declared type. The interpreter saturated at the byte an i4 is kept in (1e10 to i4
gave -1, XLA 7) and cast f64(INT64_MAX), which is 2**63, back to i64 (+inf to i64 gave
INT64_MIN, to ui64 0). Property: random values, specials and magnitudes past every bound, every
float source and integer target, element for element against XLA."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.verify.engines import ENGINES

pytest.importorskip("jax")

SOURCES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}
TARGETS = ["i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64"]
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.0**63, -(2.0**63), 2.0**64, 1e30]


def _module(source: str, target: str, n: int) -> str:
    return (
        f"func.func @main(%a: tensor<{n}x{source}>) -> tensor<{n}x{target}> {{\n"
        f"  %0 = stablehlo.convert %a : (tensor<{n}x{source}>) -> tensor<{n}x{target}>\n"
        f"  return %0 : tensor<{n}x{target}>\n}}\n"
    )


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(SOURCES)),
    st.sampled_from(TARGETS),
    st.lists(
        st.one_of(
            st.sampled_from(SPECIAL),
            st.floats(-1e20, 1e20),
            st.integers(-(2**65), 2**65).map(float),
            st.integers(-300, 300).map(lambda k: k + 0.75),
        ),
        min_size=16,
        max_size=16,
    ),
)
def test_float_to_int_convert_matches_xla(source, target, values):
    with np.errstate(all="ignore"):
        x = np.array(values, dtype=np.float64).astype(SOURCES[source])
    text = _module(source, target, len(values))
    (ours,) = ENGINES["reference"](text, "m.mlir", "main", [x])
    (xla,) = ENGINES["xla"](text, "m.mlir", "main", [x])
    assert ours.dtype == xla.dtype and np.array_equal(ours, xla), (x, ours, xla)
