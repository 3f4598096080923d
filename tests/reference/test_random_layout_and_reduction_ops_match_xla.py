"""The interpreter's layout, reduction and contraction ops agree with XLA on random
configurations (hypothesis), lowered from jax.lax so each module is what JAX emits: pad (negative
and interior), slice, transpose, reverse, broadcast_in_dim, concatenate, reshape, iota,
dynamic_update_slice (starts clamped), bitcast_convert across widths, reduce_precision, reduce
over random dimensions with each monoid, reduce_window (padding, base and window dilation,
strides) and dot_general (batch and contracting dimensions, mixed result types). The fixed
tests drew one configuration of each. Data movement must be bit-exact; sums within the
rounding of a different order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax

from .jax_cases import lower
from .test_random_elementwise_match_xla import (
    EXACT,
    _dtype,
    _type,
    _values,
    assert_same_as_xla,
    run_both,
)

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ELEMENTS = ["f16", "bf16", "f32", "f64", "i8", "i32", "i64", "ui8", "ui32", "i1"]
NUMBERS = [e for e in ELEMENTS if e != "i1"]


def _array(data: st.DataObject, element: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    return _values(rng, element, shape)


def _shape(data: st.DataObject, min_rank: int = 1, max_rank: int = 4, low: int = 1):
    rank = data.draw(st.integers(min_rank, max_rank), label="rank")
    return tuple(data.draw(st.lists(st.integers(low, 4), min_size=rank, max_size=rank)))


def _check(fn: Callable[..., Any], *args: np.ndarray, exact: bool = True) -> None:
    """`fn` lowered by JAX, run on the interpreter and on XLA (verify's engine process)."""
    with jax.enable_x64(True):
        text = lower(fn, *args)
    ours, xla = run_both(text, list(args))
    for i, (mine, theirs) in enumerate(zip(ours, xla, strict=True)):
        if exact or mine.dtype.kind in "biu":
            element = {"bfloat16": "bf16"}.get(mine.dtype.name, mine.dtype.name)
            assert_same_as_xla(mine, theirs, element, EXACT, f"result {i}\n{text}")
            continue
        wide, ref = mine.astype(np.float64), theirs.astype(np.float64)
        finite = np.isfinite(ref)
        assert np.array_equal(np.isnan(wide), np.isnan(ref)), text
        assert np.array_equal(wide[~finite & ~np.isnan(ref)], ref[~finite & ~np.isnan(ref)]), text
        scale = max(float(np.abs(ref[finite]).max(initial=0.0)), 1.0)
        eps = float(ml_dtypes.finfo(mine.dtype).eps)
        assert np.allclose(wide[finite], ref[finite], rtol=0, atol=64 * eps * scale), (
            f"result {i}: ours {mine}, XLA {theirs}\n{text}"
        )


@PROPERTY
@given(data=st.data())
def test_random_pad_slice_transpose_reverse_match_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(ELEMENTS), label="element")
    shape = _shape(data)
    x = _array(data, element, shape)
    rank = len(shape)
    config = []
    for d in shape:
        interior = data.draw(st.integers(0, 2))
        extent = d + (d - 1) * interior
        low = data.draw(st.integers(-min(3, extent), 3))
        high = data.draw(st.integers(-min(3, extent + low), 3))
        config.append((low, high, interior))
    starts = [data.draw(st.integers(0, d - 1)) for d in shape]
    limits = [data.draw(st.integers(s + 1, d)) for s, d in zip(starts, shape, strict=True)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    perm = data.draw(st.permutations(range(rank)))
    flips = data.draw(st.lists(st.sampled_from(range(rank)), unique=True))
    value = _array(data, element, ())
    _check(
        lambda a, v: (
            lax.pad(a, v, config),
            lax.slice(a, starts, limits, strides),
            lax.transpose(a, perm),
            lax.rev(a, flips),
        ),
        x,
        value,
    )


@PROPERTY
@given(data=st.data())
def test_random_broadcast_concatenate_reshape_iota_match_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(ELEMENTS), label="element")
    shape = _shape(data, max_rank=3)
    x = _array(data, element, shape)
    extra = data.draw(st.integers(0, 2))
    rank = len(shape) + extra
    dims = sorted(
        data.draw(
            st.lists(
                st.sampled_from(range(rank)), min_size=len(shape), max_size=len(shape), unique=True
            )
        )
    )
    out = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    for d, size in zip(dims, shape, strict=True):
        out[d] = size if size != 1 or data.draw(st.booleans()) else out[d]
    axis = data.draw(st.integers(0, len(shape) - 1))
    others = [
        _array(data, element, shape[:axis] + (data.draw(st.integers(0, 3)),) + shape[axis + 1 :])
        for _ in range(data.draw(st.integers(0, 2)))
    ]
    size = int(np.prod(shape))
    factors = [f for f in range(1, size + 1) if size % f == 0]
    first = data.draw(st.sampled_from(factors))
    iota_element = data.draw(st.sampled_from(NUMBERS))
    iota_dim = data.draw(st.integers(0, len(shape) - 1))
    iota_type = _dtype(iota_element)
    _check(
        lambda a, *rest: (
            lax.broadcast_in_dim(a, tuple(out), tuple(dims)),
            lax.concatenate([a, *rest], axis),
            lax.reshape(a, (first, size // first)),
            lax.broadcasted_iota(iota_type, shape, iota_dim),
        ),
        x,
        *others,
    )


@PROPERTY
@given(data=st.data())
def test_random_dynamic_update_slice_matches_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(ELEMENTS), label="element")
    shape = _shape(data)
    update_shape = tuple(data.draw(st.integers(0, d)) for d in shape)
    index = data.draw(st.sampled_from(["i32", "i64", "ui32", "i8"]))
    starts = [
        _values(np.random.default_rng(data.draw(st.integers(0, 2**16))), index, ()) for _ in shape
    ]
    starts = [
        s if data.draw(st.booleans()) else s.dtype.type(data.draw(st.integers(0, 5)))
        for s in starts
    ]
    _check(
        lambda a, u, *s: lax.dynamic_update_slice(a, u, s),
        _array(data, element, shape),
        _array(data, element, update_shape),
        *[np.asarray(s) for s in starts],
    )


@PROPERTY
@given(data=st.data())
def test_random_bitcast_and_reduce_precision_match_xla(data: st.DataObject) -> None:
    pairs = {
        "f32": ["i32", "ui32", "i8", "ui8", "f16", "bf16", "f64", "i64"],
        "f16": ["i16", "bf16", "i8", "f32"],
        "i64": ["f64", "f32", "ui8", "i32"],
        "ui8": ["i8", "f32", "f16"],
    }
    source = data.draw(st.sampled_from(sorted(pairs)), label="source")
    target = data.draw(st.sampled_from(pairs[source]), label="target")
    src, dst = _dtype(source), _dtype(target)
    ratio = max(src.itemsize, dst.itemsize) // min(src.itemsize, dst.itemsize)
    shape = _shape(data, max_rank=2)
    if src.itemsize < dst.itemsize:
        shape = (*shape, ratio)
    x = _array(data, source, shape)
    exponent, mantissa = data.draw(st.integers(1, 11)), data.draw(st.integers(0, 52))
    floating = data.draw(st.sampled_from(["f16", "bf16", "f32", "f64"]))
    y = _array(data, floating, _shape(data, max_rank=2))
    _check(
        lambda a, b: (
            lax.bitcast_convert_type(a, dst),
            lax.reduce_precision(b, exponent, min(mantissa, np.finfo(np.float64).nmant)),
        ),
        x,
        y,
    )


MONOIDS = {
    "add": (lax.add, 0),
    "mul": (lax.mul, 1),
    "max": (lax.max, None),
    "min": (lax.min, None),
}


def _identity(name: str, dtype: np.dtype) -> Any:
    if name in ("add", "mul"):
        return np.array(MONOIDS[name][1], dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array(info.min if name == "max" else info.max, dtype)
    return np.array(-np.inf if name == "max" else np.inf, dtype)


@PROPERTY
@given(data=st.data())
def test_random_reduce_matches_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(NUMBERS), label="element")
    monoid = data.draw(st.sampled_from(sorted(MONOIDS)), label="monoid")
    shape = _shape(data, low=0)
    x = _array(data, element, shape)
    if monoid == "mul" and x.dtype.kind == "f":
        x = np.where(np.abs(x.astype(np.float64)) > 4, 1, x).astype(x.dtype)
    axes = tuple(data.draw(st.lists(st.sampled_from(range(len(shape))), unique=True)))
    init = _identity(monoid, x.dtype)
    fn = MONOIDS[monoid][0]
    _check(lambda a, i: lax.reduce(a, i, fn, axes), x, init, exact=monoid in ("max", "min"))


@PROPERTY
@given(data=st.data())
def test_random_reduce_window_matches_xla(data: st.DataObject) -> None:
    element = data.draw(st.sampled_from(NUMBERS), label="element")
    monoid = data.draw(st.sampled_from(["add", "max", "min"]), label="monoid")
    shape = _shape(data, max_rank=3)
    x = _array(data, element, shape)
    window, strides, padding, base, dilation = [], [], [], [], []
    for d in shape:
        base.append(data.draw(st.integers(1, 2)))
        dilation.append(data.draw(st.integers(1, 2)))
        padding.append((data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))))
        extent = (d - 1) * base[-1] + 1 + sum(padding[-1])
        most = max(1, (extent - 1) // dilation[-1] + 1)
        window.append(data.draw(st.integers(1, min(3, most))))
        strides.append(data.draw(st.integers(1, 3)))
    init = _identity(monoid, x.dtype)
    fn = MONOIDS[monoid][0]
    _check(
        lambda a, i: lax.reduce_window(a, i, fn, window, strides, padding, base, dilation),
        x,
        init,
        exact=monoid != "add",
    )


@PROPERTY
@given(data=st.data())
def test_random_dot_general_matches_xla(data: st.DataObject) -> None:
    element, result = data.draw(
        st.sampled_from(
            [
                ("f32", None),
                ("f64", None),
                ("f16", None),
                ("bf16", None),
                ("bf16", "f32"),
                ("f16", "f32"),
                ("i8", "i32"),
                ("i32", None),
                ("ui8", "ui32"),
                ("i64", None),
            ]
        ),
        label="types",
    )
    batch = [data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2)))]
    contract = [data.draw(st.integers(0, 4)) for _ in range(data.draw(st.integers(0, 2)))]
    lhs_free = [data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2)))]
    rhs_free = [data.draw(st.integers(1, 3)) for _ in range(data.draw(st.integers(0, 2)))]
    lhs_order = data.draw(st.permutations(range(len(batch) + len(contract) + len(lhs_free))))
    rhs_order = data.draw(st.permutations(range(len(batch) + len(contract) + len(rhs_free))))
    lhs_dims, rhs_dims = batch + contract + lhs_free, batch + contract + rhs_free
    lhs_shape = tuple(lhs_dims[i] for i in lhs_order)
    rhs_shape = tuple(rhs_dims[i] for i in rhs_order)
    where_l = {k: lhs_order.index(k) for k in range(len(lhs_dims))}
    where_r = {k: rhs_order.index(k) for k in range(len(rhs_dims))}
    nb, nc = len(batch), len(contract)
    dims = (
        (
            tuple(where_l[nb + i] for i in range(nc)),
            tuple(where_r[nb + i] for i in range(nc)),
        ),
        (tuple(where_l[i] for i in range(nb)), tuple(where_r[i] for i in range(nb))),
    )
    lhs, rhs = _array(data, element, lhs_shape), _array(data, element, rhs_shape)
    if lhs.dtype.kind in "iu":  # small integers: no overflow to disagree on
        lhs, rhs = (
            np.clip(v, 0 if v.dtype.kind == "u" else -9, 9).astype(v.dtype) for v in (lhs, rhs)
        )
    else:  # finite operands: an inf times a zero makes the sum's NaN order-dependent
        lhs, rhs = (
            np.where(np.isfinite(v.astype(np.float64)), v, 1).astype(v.dtype) for v in (lhs, rhs)
        )
    preferred = None if result is None else _dtype(result)
    _check(
        lambda a, b: lax.dot_general(a, b, dims, preferred_element_type=preferred),
        lhs,
        rhs,
        exact=False,
    )


def test_reduce_keeping_an_empty_dimension_matches_xla() -> None:
    """Found by the property test: reducing a [0, 0] (or [0, 3]) tensor over dimension 1 was
    "cannot reshape array of size 0 into shape (0,newaxis)", single and variadic (argmax)."""
    for shape in ((0, 0), (0, 3), (2, 0)):
        x = np.zeros(shape, np.float32)
        index = np.zeros(shape, np.int32)
        _check(lambda a: lax.reduce(a, np.float32(0), lax.add, (1,)), x)
        _check(
            lambda a, i: lax.reduce(
                (a, i),
                (np.float32(-np.inf), np.int32(0)),
                lambda p, q: (lax.max(p[0], q[0]), lax.max(p[1], q[1])),
                (1,),
            ),
            x,
            index,
        )


def test_dot_general_of_two_scalars_matches_xla() -> None:
    """Found by the property test: no batch, contracting or free dimensions was
    "reshape() takes exactly 1 argument (0 given)"."""
    for dtype in (np.float32, np.int32):
        _check(lambda a, b: lax.dot_general(a, b, (((), ()), ((), ()))), *_scalars(dtype))


def _scalars(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    return np.array(3, dtype), np.array(-2, dtype)


@PROPERTY
@given(data=st.data())
def test_random_max_pool_gradient_matches_xla(data: st.DataObject) -> None:
    """select_and_scatter as jax.grad of a max or min pool emits it: random windows, strides
    and padding, ties (values on a coarse grid: the first of equal elements is selected)."""
    element = data.draw(st.sampled_from(["f16", "bf16", "f32", "f64"]), label="element")
    shape = _shape(data, max_rank=3)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = (np.round(rng.standard_normal(shape) * 2) / 2).astype(_dtype(element))
    window = [data.draw(st.integers(1, min(3, d + 1))) for d in shape]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    padding = [(data.draw(st.integers(0, w - 1)), data.draw(st.integers(0, w - 1))) for w in window]
    fold, init = data.draw(st.sampled_from([(lax.max, -np.inf), (lax.min, np.inf)]))

    def pooled(v: jax.Array) -> jax.Array:
        out = lax.reduce_window(v, np.array(init, v.dtype), fold, window, strides, padding)
        return (out * out).sum()

    with jax.enable_x64(True):
        text = lower(jax.grad(pooled), x)
    assert "select_and_scatter" in text, text
    _check(jax.grad(pooled), x, exact=False)


@PROPERTY
@given(data=st.data())
def test_random_map_broadcast_and_dot_match_xla(data: st.DataObject) -> None:
    """Ops JAX does not emit, written as text: map with a body of one op or two, broadcast
    (new leading dimensions), and dot (matrix-vector and matrix-matrix)."""
    element = data.draw(st.sampled_from(NUMBERS), label="element")
    shape = _shape(data, max_rank=3, low=0)
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    vector = data.draw(st.booleans())
    body = data.draw(st.sampled_from(["add", "multiply", "maximum", "two"]))
    t, s = _type(element, shape), f"tensor<{element}>"
    b = _type(element, lead + shape)
    a_type, rhs = _type(element, (m, k)), _type(element, (k,) if vector else (k, n))
    out = _type(element, (m,) if vector else (m, n))
    ops = (
        f"      %s = stablehlo.subtract %x, %y : {s}\n      %r = stablehlo.multiply %s, %x : {s}\n"
        if body == "two"
        else f"      %r = stablehlo.{body} %x, %y : {s}\n"
    )
    text = (
        f"func.func @main(%a: {t}, %b: {t}, %l: {a_type}, %v: {rhs}) -> ({t}, {b}, {out}) {{\n"
        f'  %0 = "stablehlo.map"(%a, %b) ({{\n    ^bb0(%x: {s}, %y: {s}):\n{ops}'
        f'      "stablehlo.return"(%r) : ({s}) -> ()\n'
        f"  }}) {{dimensions = array<i64{': ' if shape else ''}"
        f"{', '.join(map(str, range(len(shape))))}>}} : ({t}, {t}) -> {t}\n"
        f'  %1 = "stablehlo.broadcast"(%a) {{broadcast_sizes = array<i64'
        f"{': ' if lead else ''}{', '.join(map(str, lead))}>}} : ({t}) -> {b}\n"
        f"  %2 = stablehlo.dot %l, %v : ({a_type}, {rhs}) -> {out}\n"
        f"  return %0, %1, %2 : {t}, {b}, {out}\n}}\n"
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    small = [
        np.clip(_values(rng, element, sh), -9, 9) for sh in ((m, k), (k,) if vector else (k, n))
    ]
    small = [
        np.where(np.isfinite(v.astype(np.float64)), v, 1).astype(_dtype(element)) for v in small
    ]
    inputs = [_values(rng, element, shape), _values(rng, element, shape), *small]
    ours, xla = run_both(text, inputs)
    for i, (mine, theirs) in enumerate(zip(ours, xla, strict=True)):
        exact = i < 2 or mine.dtype.kind in "iu"
        if exact:
            assert_same_as_xla(mine, theirs, element, EXACT, f"result {i}\n{text}")
        else:
            eps = float(ml_dtypes.finfo(mine.dtype).eps)
            wide, ref = mine.astype(np.float64), theirs.astype(np.float64)
            assert np.allclose(wide, ref, rtol=0, atol=64 * eps * max(1.0, np.abs(ref).max())), text


@PROPERTY
@given(data=st.data())
def test_random_argmax_and_argmin_match_xla(data: st.DataObject) -> None:
    """Variadic reduce as jnp.argmax/argmin emit it: ties (the first index wins) and NaN
    (which JAX's comparator selects) over a random axis and element type."""
    element = data.draw(st.sampled_from(NUMBERS), label="element")
    shape = _shape(data, max_rank=3)
    axis = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = _values(rng, element, shape)
    if x.dtype.kind not in "iu":  # a coarse grid: ties
        x = np.where(rng.random(shape) < 0.5, np.round(x.astype(np.float64)), x).astype(x.dtype)
    _check(lambda a: (jnp.argmax(a, axis=axis), jnp.argmin(a, axis=axis)), x)
