"""The migraphx interpreter agrees with JAX/numpy on conv, dot, reductions and friends, reading
and writing strided flat buffers at the function boundary."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from convcanon.migraphx import layout
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file
from convcanon.reference.migraphx_interp import run_module_text

# numpy warns of nothing in the reference, whatever the values (no RuntimeWarning of a cast)
pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def _x64_for_this_test():
    """JAX in 64 bits for these comparisons only (a global switch leaks into other tests)."""
    with jax.enable_x64(True):
        yield


def _braces(values: list[int] | tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def _nhwc_strides(lens: list[int]) -> list[int]:
    """Channels-last strides of an (N, C, *S) shape."""
    order = [0, *range(2, len(lens)), 1]  # memory order, outermost first
    strides = [0] * len(lens)
    running = 1
    for d in reversed(order):
        strides[d] = running
        running *= lens[d]
    return strides


def run_op(
    op: str,
    inputs: list[tuple[np.ndarray, list[int]]],
    out_lens: list[int],
    out_strides: list[int] | None = None,
    type_name: str = "float_type",
) -> np.ndarray:
    """Import a one-op program, feed logical inputs as flat strided buffers, read the result."""
    lines = [
        f"p{k} = @param:p{k} -> {type_name}, {_braces(x.shape)}, {_braces(s)}"
        for k, (x, s) in enumerate(inputs)
    ]
    out_strides = out_strides or list(layout.standard_strides(out_lens))
    args = ",".join(f"p{k}" for k in range(len(inputs)))
    call = op.replace("(ARGS)", f"({args})")
    lines.append(f"@r = {call} -> {type_name}, {_braces(out_lens)}, {_braces(out_strides)}")
    lines.append("@ret = @return(@r)")
    text = print_file(import_program("\n".join(lines) + "\n", "prog.txt"))
    feed = {f"arg{k}": layout.write_buffer(x, x.shape, s) for k, (x, s) in enumerate(inputs)}
    _, (flat,) = run_module_text(text, "prog.mlir", None, feed)
    return layout.read_buffer(flat, out_lens, out_strides)


CONV_CASES = [
    # spatial dims, stride, dilation, padding (begins + ends), group, nhwc
    (1, [1], [1], [0, 0], 1, False),
    (1, [2], [2], [1, 2], 2, False),
    (2, [1, 1], [1, 1], [0, 0, 0, 0], 1, True),
    (2, [2, 1], [1, 2], [1, 0, 2, 1], 1, True),
    (2, [2, 2], [1, 1], [1, 1, 1, 1], 4, False),  # depthwise
    (2, [3, 2], [2, 1], [2, 1, 0, 3], 2, True),
    (3, [1, 2, 1], [1, 1, 2], [1, 0, 1, 0, 1, 2], 1, False),
]


@pytest.mark.parametrize(("sd", "stride", "dilation", "padding", "group", "nhwc"), CONV_CASES)
def test_convolution_matches_jax(
    sd: int,
    stride: list[int],
    dilation: list[int],
    padding: list[int],
    group: int,
    nhwc: bool,
) -> None:
    rng = np.random.default_rng(sd * 10 + group)
    spatial = [7, 6, 5][:sd]
    x = rng.standard_normal((2, 4, *spatial)).astype(np.float32)
    w = rng.standard_normal((8, 4 // group, *[3, 2, 3][:sd])).astype(np.float32)
    spec = "".join("DHW"[3 - sd :])
    dn = (f"NC{spec}", f"OI{spec}", f"NC{spec}")
    expected = np.asarray(
        jax.lax.conv_general_dilated(
            jnp.asarray(x),
            jnp.asarray(w),
            window_strides=stride,
            padding=list(zip(padding[:sd], padding[sd:], strict=True)),
            rhs_dilation=dilation,
            dimension_numbers=dn,
            feature_group_count=group,
            precision=jax.lax.Precision.HIGHEST,
        )
    )
    strides_of = _nhwc_strides if nhwc else (lambda lens: list(layout.standard_strides(lens)))
    op = (
        f"convolution[padding={_braces(padding)},stride={_braces(stride)},"
        f"dilation={_braces(dilation)},group={group},padding_mode=0](ARGS)"
    )
    got = run_op(
        op,
        [(x, strides_of(list(x.shape))), (w, strides_of(list(w.shape)))],
        list(expected.shape),
        strides_of(list(expected.shape)),
    )
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("mode", "jax_padding"), [(1, "SAME"), (2, "VALID")])
def test_convolution_padding_modes_match_jax(mode: int, jax_padding: str) -> None:
    rng = np.random.default_rng(mode)
    x = rng.standard_normal((1, 3, 8, 7)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 4)).astype(np.float32)
    expected = np.asarray(
        jax.lax.conv_general_dilated(
            jnp.asarray(x), jnp.asarray(w), (2, 3), jax_padding, precision=jax.lax.Precision.HIGHEST
        )
    )
    op = (
        "convolution[padding={0, 0, 0, 0},stride={2, 3},dilation={1, 1},group=1,"
        f"padding_mode={mode}](ARGS)"
    )
    inputs = [(a, list(layout.standard_strides(a.shape))) for a in (x, w)]
    got = run_op(op, inputs, list(expected.shape))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_seed_program_nhwc_conv_exp_matches_jax() -> None:
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "migraphx" / "fixtures" / "seed003_nhwc_conv.txt"
    text = print_file(import_program(fixture.read_text(), str(fixture)))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32) * 0.2
    w = rng.standard_normal((2, 16, 3, 3)).astype(np.float32) * 0.2
    feed = {
        "arg0": layout.write_buffer(x, x.shape, [256, 1, 64, 16]),
        "arg1": layout.write_buffer(w, w.shape, [144, 1, 48, 16]),
    }
    _, (flat,) = run_module_text(text, "seed.mlir", "main", feed)
    expected = np.exp(
        jax.lax.conv_general_dilated(
            jnp.asarray(x), jnp.asarray(w), (1, 1), "VALID", precision=jax.lax.Precision.HIGHEST
        )
    )
    assert flat.shape == (8,)
    # the result comes back NHWC: strides {8, 1, 4, 2}
    np.testing.assert_allclose(
        layout.read_buffer(flat, [1, 2, 2, 2], [8, 1, 4, 2]), expected, rtol=1e-5
    )
    np.testing.assert_allclose(flat, np.transpose(expected, (0, 2, 3, 1)).reshape(-1), rtol=1e-5)


def test_batched_dot_with_transposed_operand_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 3))
    b = rng.standard_normal((2, 3, 5))
    got = run_op(
        "dot(ARGS)",
        [(a, [12, 3, 1]), (b, [15, 1, 3])],
        [2, 4, 5],
        [20, 1, 4],
        type_name="double_type",
    )
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-12)


REDUCTIONS = [
    ("reduce_sum", jnp.sum),
    ("reduce_mean", jnp.mean),
    ("reduce_max", jnp.max),
    ("reduce_min", jnp.min),
]


@pytest.mark.parametrize(("name", "fn"), REDUCTIONS)
@pytest.mark.parametrize("axes", [(0,), (1, 2), (-1,), (0, 1, 2), ()])
def test_reductions_match_jax(
    name: str, fn: Callable[..., jax.Array], axes: tuple[int, ...]
) -> None:
    """`axes={}` reduces every axis (MIGraphX's reduce_op::tune_axes); it was the identity."""
    x = np.random.default_rng(len(axes)).standard_normal((3, 4, 5))
    expected = np.asarray(fn(x, axis=axes or None, keepdims=True))
    got = run_op(
        f"{name}[axes={_braces(axes)}](ARGS)",
        [(x, [1, 3, 12])],
        list(expected.shape),
        type_name="double_type",
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_softmax_and_elementwise_match_jax() -> None:
    x = np.random.default_rng(1).standard_normal((3, 4))
    t = [1, 3]  # column-major input
    cases = {
        "softmax[axis=1](ARGS)": jax.nn.softmax(x, axis=1),
        "sigmoid(ARGS)": jax.nn.sigmoid(x),
        "erf(ARGS)": jax.scipy.special.erf(x),
        "relu(ARGS)": jax.nn.relu(x),
        "tanh(ARGS)": jnp.tanh(x),
        "recip(ARGS)": 1 / x,
        "rsqrt(ARGS)": jax.lax.rsqrt(jnp.abs(x)),
    }
    for op, expected in cases.items():
        arg = np.abs(x) if op.startswith("rsqrt") else x
        got = run_op(op, [(arg, t)], [3, 4], type_name="double_type")
        np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-12, err_msg=op)


def test_views_slice_transpose_broadcast_and_clip() -> None:
    x = np.arange(12.0).reshape(3, 4)
    got = run_op(
        "slice[axes={0, 1},starts={1, -3},ends={3, 100}](ARGS)",
        [(x, [4, 1])],
        [2, 3],
        type_name="double_type",
    )
    np.testing.assert_array_equal(got, x[1:3, 1:4])
    got = run_op(
        "transpose[permutation={1, 0}](ARGS)", [(x, [1, 3])], [4, 3], type_name="double_type"
    )
    np.testing.assert_array_equal(got, x.T)
    v = np.arange(4.0)
    got = run_op(
        "broadcast[axis=1,out_lens={2, 4, 3}](ARGS)",
        [(v, [1])],
        [2, 4, 3],
        [12, 3, 1],
        type_name="double_type",
    )
    np.testing.assert_array_equal(got, np.broadcast_to(v[None, :, None], (2, 4, 3)))
    got = run_op(
        "clip(ARGS)",
        [(x, [4, 1]), (np.full((3, 4), 2.0), [4, 1]), (np.full((3, 4), 9.0), [4, 1])],
        [3, 4],
        type_name="double_type",
    )
    np.testing.assert_array_equal(got, np.clip(x, 2, 9))


def test_writing_a_broadcast_result_is_an_error() -> None:
    from convcanon.diagnostics import ConvcanonError

    v = np.arange(3.0)
    with pytest.raises(ConvcanonError, match="broadcast layout"):
        run_op(
            "multibroadcast[out_lens={4, 3}](ARGS)",
            [(v, [1])],
            [4, 3],
            [0, 1],
            type_name="double_type",
        )


def _run_program(lines: list[str], feed: list[np.ndarray]) -> list[np.ndarray]:
    text = print_file(import_program("\n".join(lines) + "\n", "prog.txt"))
    return run_module_text(text, "prog.mlir", None, {f"arg{k}": x for k, x in enumerate(feed)})[1]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_of_a_strided_table_matches_jax_take(axis: int) -> None:
    rng = np.random.default_rng(axis + 7)
    data = rng.normal(size=(3, 4, 5)).astype(np.float32)
    strides = [1, 15, 3]  # dim 0 innermost: a transposed table
    n = data.shape[axis]
    ids = rng.integers(-n, n, size=(2, 3)).astype(np.int32)
    out_lens = list(np.take(data, ids, axis=axis).shape)
    lines = [
        f"d = @param:d -> float_type, {{3, 4, 5}}, {_braces(strides)}",
        "i = @param:i -> int32_type, {2, 3}, {3, 1}",
        f"@2 = gather[axis={axis}](d,i) -> float_type, {_braces(out_lens)}, "
        f"{_braces(layout.standard_strides(out_lens))}",
        "@3 = @return(@2)",
    ]
    (flat,) = _run_program(lines, [layout.write_buffer(data, data.shape, strides), ids.ravel()])
    expected = jnp.take(jnp.asarray(data), jnp.asarray(ids), axis=axis, mode="wrap")
    np.testing.assert_array_equal(flat.reshape(out_lens), np.asarray(expected))


def test_scatter_none_matches_jax_scatter_along_the_axis() -> None:
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[3, 0, 1], [-4, 2, 3]], dtype=np.int32)  # -4 is row 0
    updates = -np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    lines = [
        "d = @param:d -> float_type, {4, 3}, {1, 4}",
        "i = @param:i -> int32_type, {2, 3}, {3, 1}",
        "u = @param:u -> float_type, {2, 3}, {3, 1}",
        "@3 = scatter_none[axis=0](d,i,u) -> float_type, {4, 3}, {3, 1}",
        "@4 = @return(@3)",
    ]
    feed = [layout.write_buffer(data, (4, 3), (1, 4)), ids.ravel(), updates.ravel()]
    (flat,) = _run_program(lines, feed)
    columns = jnp.broadcast_to(jnp.arange(3), (2, 3))
    expected = jnp.asarray(data).at[jnp.asarray(ids) % 4, columns].set(jnp.asarray(updates))
    np.testing.assert_array_equal(flat.reshape(4, 3), np.asarray(expected))


def test_unsigned_comparison_and_max_keep_unsigned_order() -> None:
    a = np.array([200, 7, 128, 0], dtype=np.uint8)
    b = np.array([100, 9, 127, 255], dtype=np.uint8)
    lines = [
        "a = @param:a -> uint8_type, {4}, {1}",
        "b = @param:b -> uint8_type, {4}, {1}",
        "@2 = greater(a,b) -> bool_type, {4}, {1}",
        "@3 = max(a,b) -> uint8_type, {4}, {1}",
        "@4 = @return(@2,@3)",
    ]
    greater, largest = _run_program(lines, [a, b])
    assert greater.tolist() == [1, 0, 1, 0]
    assert largest.tolist() == [200, 9, 128, 255]


def test_f16_division_is_the_f32_quotient_rounded_once() -> None:
    a = np.array([0.7026, -3.0, 1.0, 65504.0], dtype=np.float16)
    b = np.array([1.425e-05, 6.1e-05, 3.0, 0.5], dtype=np.float16)
    lines = [
        "a = @param:a -> half_type, {4}, {1}",
        "b = @param:b -> half_type, {4}, {1}",
        "@2 = div(a,b) -> half_type, {4}, {1}",
        "@3 = @return(@2)",
    ]
    (quotient,) = _run_program(lines, [a, b])
    with np.errstate(over="ignore"):
        expected = (a.astype(np.float32) / b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(quotient, expected)
    assert np.isfinite(quotient[:3]).all() and np.isinf(quotient[3])
