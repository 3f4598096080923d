"""Indexing, sorting and control flow agree with XLA: gather and scatter with the dimension numbers
jax.lax emits (batching dims, clamped and dropped out-of-bounds windows, duplicate indices),
dynamic_slice clamping, stable sort with JAX's total-order comparator, select_and_scatter (max-pool
gradients), reduce_window folds, while/case/if, and the same ops spelled in MHLO."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hlo.cases import parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax

from convcanon.hlo.dialects import MHLO
from convcanon.reference.run import run_hlo_text
from convcanon.verify.xla_engine import run_stablehlo_text

from .jax_cases import check_jax, lower
from .xla_compare import assert_matches_xla

PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def arrays(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 3) -> np.ndarray:
    rank = draw(st.integers(min_rank, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    seed = draw(st.integers(0, 2**16))
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _indices(draw: st.DrawFn, extent: int, shape: tuple[int, ...], margin: int) -> np.ndarray:
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    return rng.integers(-extent - margin, extent + margin, shape).astype(np.int32)


@PROPERTY
@given(st.data())
def test_gather_of_jax_indexing_matches_xla(data: st.DataObject) -> None:
    """`take` along any axis in every mode, and `take_along_axis` (operand batching dims)."""
    x = data.draw(arrays())
    axis = data.draw(st.integers(0, x.ndim - 1))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    mode = data.draw(st.sampled_from(["clip", "fill", "wrap"]))
    idx = _indices(data.draw, x.shape[axis], shape, margin=3)
    check_jax(lambda v, i: jnp.take(v, i, axis=axis, mode=mode), x, idx)
    along = _indices(data.draw, x.shape[axis], x.shape[:axis] + (2,) + x.shape[axis + 1 :], 0)
    check_jax(lambda v, i: jnp.take_along_axis(v, i, axis=axis), x, along)


@PROPERTY
@given(st.data())
def test_gather_with_slices_and_two_index_arrays_matches_xla(data: st.DataObject) -> None:
    x = data.draw(arrays(min_rank=3, max_rank=3))
    i = _indices(data.draw, x.shape[0], (4,), margin=2)
    j = _indices(data.draw, x.shape[2], (4,), margin=2)
    check_jax(lambda v, a, b: (v[a, :, b], v[a, 1:], v[:, a % v.shape[1]]), x, i, j)


@PROPERTY
@given(st.data())
def test_scatter_of_jax_updates_matches_xla(data: st.DataObject) -> None:
    """Duplicate indices fold in order; a window out of bounds is dropped (mode=drop) as XLA
    does; `set` uses distinct indices (with duplicates XLA's winner is unspecified)."""
    x = data.draw(arrays(min_rank=1, max_rank=3))
    axis = data.draw(st.integers(0, x.ndim - 1))
    count = data.draw(st.integers(1, 6))
    idx = _indices(data.draw, x.shape[axis], (count,), margin=2)
    updates_shape = x.shape[:axis] + (count,) + x.shape[axis + 1 :]
    upd = np.random.default_rng(count).standard_normal(updates_shape).astype(np.float32)
    where = (slice(None),) * axis
    kind = data.draw(st.sampled_from(["add", "mul", "min", "max"]))
    mode = data.draw(st.sampled_from(["drop", "clip", "promise_in_bounds"]))
    if mode == "promise_in_bounds":
        idx = np.abs(idx) % x.shape[axis]
    check_jax(
        lambda v, i, u: getattr(v.at[(*where, i)], kind)(u, mode=mode),
        x,
        idx,
        upd,
    )
    distinct = np.random.default_rng(count).permutation(x.shape[axis])[:count].astype(np.int32)
    check_jax(lambda v, i: v.at[(*where, i)].set(1.5), x, distinct)


def test_scatter_with_batching_dims_matches_xla() -> None:
    """The gradient of take_along_axis (the cross-entropy of every classifier) scatters with
    input batching dims."""
    logits = np.random.default_rng(0).standard_normal((6, 10)).astype(np.float32)
    labels = np.array([1, 9, 0, 3, 3, 7], np.int32)

    def loss(v: jax.Array, y: jax.Array) -> jax.Array:
        picked = jnp.take_along_axis(jax.nn.log_softmax(v), y[:, None], axis=1)
        return -jnp.mean(picked)

    text = check_jax(jax.grad(loss), logits, labels)
    assert "input_batching_dims" in text


def test_scatter_with_a_region_that_is_not_a_single_op_matches_xla() -> None:
    text = """func.func public @main(%x: tensor<5xf32>, %i: tensor<4x1xi32>, %u: tensor<4xf32>)
    -> tensor<5xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<
      inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.multiply %a, %b : tensor<f32>
    %s = stablehlo.add %m, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5xf32>, tensor<4x1xi32>, tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
"""
    x = np.arange(5, dtype=np.float32)
    idx = np.array([[1], [1], [4], [1]], np.int32)
    assert_matches_xla(text, [x, idx, np.array([2, 3, 4, 5], np.float32)])


@PROPERTY
@given(st.data())
def test_dynamic_slice_clamps_its_starts_like_xla(data: st.DataObject) -> None:
    x = data.draw(arrays(min_rank=2, max_rank=3))
    sizes = [data.draw(st.integers(1, n)) for n in x.shape]
    starts = np.array([data.draw(st.integers(-7, n + 7)) for n in x.shape], np.int32)
    update = np.full(sizes, 9.0, np.float32)

    def fn(v: jax.Array, s: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
        index = [s[k] for k in range(v.ndim)]
        sliced = lax.dynamic_slice(v, index, sizes)
        return sliced, lax.dynamic_update_slice(v, u, index)

    check_jax(fn, x, starts, update)


@st.composite
def sortable(draw: st.DrawFn) -> np.ndarray:
    """Few distinct values (many ties), with -0.0, +0.0, infinities and NaN among them."""
    x = draw(arrays(min_rank=1, max_rank=3))
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan], np.float32)
    seed = draw(st.integers(0, 2**16))
    pick = np.random.default_rng(seed).integers(0, len(pool), x.shape)
    use_pool = draw(st.booleans())
    return pool[pick] if use_pool else np.round(x, 1)


@PROPERTY
@given(sortable(), st.data())
def test_sort_is_stable_and_matches_xla(x: np.ndarray, data: st.DataObject) -> None:
    axis = data.draw(st.integers(0, x.ndim - 1))
    descending = data.draw(st.booleans())
    ints = np.random.default_rng(x.size).integers(0, 3, x.shape).astype(np.int32)
    check_jax(
        lambda v, k: (
            jnp.sort(v, axis=axis, descending=descending),
            jnp.argsort(v, axis=axis, stable=True, descending=descending),
            lax.sort((k, v), dimension=axis, num_keys=2),
        ),
        x,
        ints,
    )


def test_long_sort_and_top_k_match_xla() -> None:
    x = np.round(np.random.default_rng(3).standard_normal((3, 1000)), 2).astype(np.float32)
    check_jax(lambda v: (jnp.argsort(v, axis=1), lax.top_k(v, 7)), x)


@pytest.mark.parametrize(
    ("window", "strides", "padding"),
    [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"), ((3, 2), (1, 1), "SAME")],
)
def test_max_pool_gradient_select_and_scatter_matches_xla(window, strides, padding) -> None:
    x = np.round(np.random.default_rng(1).standard_normal((2, 7, 6, 3)), 1).astype(np.float32)

    def pooled(v: jax.Array) -> jax.Array:
        window_shape, step = (1, *window, 1), (1, *strides, 1)
        out = lax.reduce_window(v, -jnp.inf, lax.max, window_shape, step, padding)
        return jnp.sum(out * out)

    text = check_jax(jax.grad(pooled), x)
    assert "select_and_scatter" in text


def test_reduce_window_folds_match_xla() -> None:
    """avg-pool with padding and dilations, a cumulative sum and max (long windows)."""
    x = np.random.default_rng(2).standard_normal((2, 9, 8, 3)).astype(np.float32)

    def fn(v: jax.Array) -> tuple[jax.Array, ...]:
        avg = lax.reduce_window(v, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 1, 1), "SAME")
        dilated = lax.reduce_window(
            v, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), [(0, 0), (1, 2), (0, 1), (0, 0)],
            base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1),
        )  # fmt: skip
        flat = v.reshape(-1)
        return avg, dilated, lax.cumsum(flat), lax.cummax(flat, reverse=True)

    check_jax(fn, x)


def test_loops_and_branches_match_xla() -> None:
    """fori_loop and scan (while with captured values), cond and switch (case), while with a
    data-dependent trip count."""
    x = np.random.default_rng(4).standard_normal((4, 5)).astype(np.float32)

    def fn(v: jax.Array, k: jax.Array) -> tuple[jax.Array, ...]:
        looped = lax.fori_loop(0, 4, lambda i, a: a * 0.5 + v[i % 4].sum(), v)
        _, scanned = lax.scan(lambda c, row: (c + row, c * row), jnp.zeros(5), v)
        branch = lax.cond(v.sum() > 0, lambda a: a * 2, lambda a: a - 1, v)
        switched = lax.switch(k, [jnp.sin, jnp.cos, jnp.tanh], v)
        halvings = lax.while_loop(lambda a: jnp.abs(a).max() > 0.01, lambda a: a / 2, v)
        return looped, scanned, branch, switched, halvings

    for k in (0, 2, 7):
        check_jax(fn, x, np.int32(k))


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])
def test_case_out_of_range_runs_the_last_branch_like_xla(index: int) -> None:
    text = """func.func public @main(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.case"(%i) ({
    stablehlo.return %x : tensor<3xf32>
  }, {
    %n = stablehlo.negate %x : tensor<3xf32>
    stablehlo.return %n : tensor<3xf32>
  }, {
    %e = stablehlo.exponential %x : tensor<3xf32>
    stablehlo.return %e : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
    assert_matches_xla(text, [np.int32(index), np.array([1, -2, 3], np.float32)])


def test_tuples_barriers_and_sharding_pass_values_through() -> None:
    text = """func.func public @main(%x: tensor<3xf32>, %y: tensor<2xi32>)
    -> (tensor<3xf32>, tensor<2xi32>) {
  %t = stablehlo.tuple %x, %y : tuple<tensor<3xf32>, tensor<2xi32>>
  %a = stablehlo.get_tuple_element %t[1] : (tuple<tensor<3xf32>, tensor<2xi32>>) -> tensor<2xi32>
  %b = stablehlo.get_tuple_element %t[0] : (tuple<tensor<3xf32>, tensor<2xi32>>) -> tensor<3xf32>
  %c:2 = stablehlo.optimization_barrier %b, %a : tensor<3xf32>, tensor<2xi32>
  %d = stablehlo.custom_call @Sharding(%c#0) {mhlo.sharding = "{replicated}"}
    : (tensor<3xf32>) -> tensor<3xf32>
  return %d, %c#1 : tensor<3xf32>, tensor<2xi32>
}
"""
    assert_matches_xla(text, [np.array([1, 2, 3], np.float32), np.array([4, 5], np.int32)])


def test_mhlo_spellings_of_indexing_and_control_flow_match_xla() -> None:
    """The same ops legalized to MHLO (mhlo attributes, dense index arrays) give XLA's results."""
    x = np.round(np.random.default_rng(6).standard_normal((4, 6)), 1).astype(np.float32)
    idx = np.array([3, 0, 5, 9, -2], np.int32)

    def fn(v: jax.Array, i: jax.Array) -> tuple[jax.Array, ...]:
        taken = jnp.take(v, i, axis=1, mode="clip")
        added = v.at[:, i].add(1.0, mode="drop")
        ordered = jnp.argsort(v, axis=1)
        looped = lax.fori_loop(0, 3, lambda k, a: a + lax.dynamic_slice(v, (k, 0), (1, 6)), v)
        branch = lax.cond(v[0, 0] > 0, jnp.sin, jnp.cos, v)
        pooled = jax.grad(
            lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (2, 3), (2, 2), "SAME").sum()
        )
        return taken, added, ordered, looped, branch, pooled(v)

    text = lower(fn, x, idx)
    mhlo_text = str(parse(text, MHLO).module)
    assert "mhlo.gather" in mhlo_text and "mhlo.select_and_scatter" in mhlo_text
    assert "stablehlo." not in mhlo_text
    (report,) = run_hlo_text(mhlo_text, "m.mlir", inputs={"arg0": x, "arg1": idx})
    for ours, theirs in zip(report.results, run_stablehlo_text(text, [x, idx]), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_variadic_reduce_window_matches_xla() -> None:
    """Argmax pooling: (value, index) pairs folded by one region."""
    text = """func.func public @main(%x: tensor<6x8xf32>) -> (tensor<3x4xf32>, tensor<3x4xi32>) {
  %i = stablehlo.iota dim = 1 : tensor<6x8xi32>
  %n = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<-1> : tensor<i32>
  %0:2 = "stablehlo.reduce_window"(%x, %i, %n, %z) ({
  ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
    %gt = stablehlo.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %k = stablehlo.select %gt, %bi, %ai : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }) {window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 2>,
      padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>}
    : (tensor<6x8xf32>, tensor<6x8xi32>, tensor<f32>, tensor<i32>)
    -> (tensor<3x4xf32>, tensor<3x4xi32>)
  return %0#0, %0#1 : tensor<3x4xf32>, tensor<3x4xi32>
}
"""
    x = np.random.default_rng(8).permutation(48).reshape(6, 8).astype(np.float32)
    assert_matches_xla(text, [x])


def test_composite_runs_its_decomposition_and_dimension_sizes_are_static() -> None:
    text = """func.func public @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<i32>) {
  %0 = stablehlo.composite "my.gelu" %x {decomposition = @gelu}
    : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>
  return %0, %1 : tensor<2x3xf32>, tensor<i32>
}
func.func private @gelu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.logistic %x : tensor<2x3xf32>
  %1 = stablehlo.multiply %x, %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
"""
    assert_matches_xla(text, [np.arange(6, dtype=np.float32).reshape(2, 3) - 2])
