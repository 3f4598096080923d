"""A constant written as a `dense_resource` blob (how torch-mlir writes every weight) computes the
same as the same constant written as an element list, on the reference interpreter and on XLA."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

from convcanon.verify.engines import reference_engine, xla_engine

from .resource_modules import add_constant_pair, element_dtype

ELEMENTS = ["f32", "f16", "bf16", "i8", "i32", "i64", "i1", "f64"]


@st.composite
def constants(draw: st.DrawFn) -> tuple[str, np.ndarray, np.ndarray]:
    """An element type, then a constant and an input of one shape, of any bit patterns."""
    element = draw(st.sampled_from(ELEMENTS))
    dtype = element_dtype(element)
    shape = draw(array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    count = int(np.prod(shape))

    def draw_array() -> np.ndarray:
        if element == "i1":
            return np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), bool)
        raw = draw(st.binary(min_size=count * dtype.itemsize, max_size=count * dtype.itemsize))
        return np.frombuffer(raw, dtype)

    return element, draw_array().reshape(shape), draw_array().reshape(shape)


def _bits(arrays: list[np.ndarray]) -> list[tuple[tuple[int, ...], bytes]]:
    return [(a.shape, np.ascontiguousarray(a).tobytes()) for a in arrays]


@settings(max_examples=40, deadline=None)
@given(constants())
def test_a_resource_constant_computes_like_its_element_list(
    case: tuple[str, np.ndarray, np.ndarray],
) -> None:
    element, weight, x = case
    resource, dense = add_constant_pair(weight, element)
    for engine in (reference_engine, xla_engine):
        got = engine(resource, "resource.mlir", "main", [x])
        want = engine(dense, "dense.mlir", "main", [x])
        assert got[0].dtype == want[0].dtype == x.dtype, engine.__name__
        assert _bits(got) == _bits(want), (engine.__name__, resource)
