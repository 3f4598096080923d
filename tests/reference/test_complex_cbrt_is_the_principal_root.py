"""`stablehlo.cbrt` of a complex tensor is its principal cube root, exp(log(z) / 3), as
StableHLO's reference interpreter computes it (neither XLA nor IREE lowers a complex cbrt, so
the oracle is Python's `cmath`). The interpreter handed it to numpy's cbrt, which refuses
complex numbers: every such module failed "ufunc 'cbrt' not supported"."""

from __future__ import annotations

import cmath

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convcanon.verify.engines import ENGINES

PARTS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, -8.0, 27.0]),
    st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False),
)


def _module(element: str, n: int) -> str:
    tensor = f"tensor<{n}xcomplex<{element}>>"
    return (
        f"func.func @main(%a: {tensor}) -> {tensor} {{\n"
        f"  %0 = stablehlo.cbrt %a : {tensor}\n"
        f"  return %0 : {tensor}\n}}\n"
    )


def _principal(z: complex) -> complex:
    return 0j if z == 0 else cmath.exp(cmath.log(z) / 3)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([("f32", np.complex64), ("f64", np.complex128)]),
    st.lists(st.tuples(PARTS, PARTS), min_size=1, max_size=8),
)
@example(("f64", np.complex128), [(0.0, 3.5761200908219354e-255)])  # far from 1: |log z| ~ 586
def test_complex_cbrt_is_the_principal_cube_root(element, parts) -> None:
    name, dtype = element
    z = np.array([complex(re, im) for re, im in parts], dtype=dtype)
    (ours,) = ENGINES["reference"](_module(name, len(z)), "m.mlir", "main", [z])
    expected = np.array([_principal(complex(v)) for v in z], dtype=dtype)
    assert ours.dtype == dtype
    # exp(log(z) / 3) rounds within ~|log z| steps of the root (~70 at 1e30, ~590 at 1e-255,
    # where a random draw found 128 steps too few): a wrong branch or a lost part is off by far
    # more
    logs = [abs(cmath.log(abs(complex(v)))) for v in z if v != 0]
    steps = 16 + max(logs, default=0.0)
    np.testing.assert_allclose(ours, expected, rtol=steps * np.finfo(dtype).eps, atol=0)
