"""The reference convolution copies its im2col windows in chunks of at most
`contraction.IM2COL_CHUNK_BYTES` (whole groups, batch items or output rows), so its scratch is
bounded by its operands and result: the result is the same however many chunks it takes, and a
conv3d with a small output but a window copy far over the memory limit runs under the default
limit (it was refused, "im2col buffer needs 4346707968 bytes"), on the migraphx and HLO
interpreters and after migraphx-to-tosa."""
# ruff: noqa: E501  (MLIR fixtures are one op per line)

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hlo.cases import DTYPES, ConvCase, conv_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main
from convcanon.reference.kernels import contraction
from convcanon.reference.run import run_hlo_text

_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def _chunks_counted(budget: int) -> Iterator[list[int]]:
    """Lower the chunk budget; the list counts the chunks the convs take."""
    count = [0]
    real = contraction.im2col_chunks

    def counted(rows: Sequence[int], row_bytes: int, limit: int | None = None):
        for index in real(rows, row_bytes, limit):
            count[0] += 1
            yield index

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(contraction, "IM2COL_CHUNK_BYTES", budget)
        patch.setattr(contraction, "im2col_chunks", counted)
        yield count


def _exact_inputs(case: ConvCase, seed: int) -> list[np.ndarray]:
    """Small integers in the case's type: every sum is exact, so any accumulation order (BLAS
    blocks over fewer rows included) gives the same bits, and a misplaced chunk shows."""
    rng = np.random.default_rng(seed)
    dtype = DTYPES[case.element]
    return [rng.integers(-3, 4, s).astype(dtype) for s in (case.lhs_shape, case.rhs_shape)]


def _run(case: ConvCase, inputs: list[np.ndarray]) -> np.ndarray:
    named = {f"arg{n}": x for n, x in enumerate(inputs)}
    (report,) = run_hlo_text(case.text, "conv.mlir", inputs=named)
    return report.results[0]


@_SETTINGS
@given(
    case=conv_cases(),
    budget=st.one_of(st.just(1), st.integers(2, 2048)),
    seed=st.integers(0, 3),
)
def test_conv_in_many_chunks_equals_one_chunk(case: ConvCase, budget: int, seed: int) -> None:
    """Drawn convs in full generality (dimension numbers, dilations, padding, reversal, feature
    and batch groups) on the HLO interpreter: many chunks give the one-chunk result."""
    inputs = _exact_inputs(case, seed)
    with _chunks_counted(1 << 40) as whole:
        expected = _run(case, inputs)
    with _chunks_counted(budget) as chunked:
        got = _run(case, inputs)
    assert whole[0] <= 1
    if budget == 1 and expected.size > 6:  # > 6 outputs (6 features at most): >= 2 rows
        assert chunked[0] > 1  # one output position per chunk
    np.testing.assert_array_equal(got, expected)


@st.composite
def _direct_convs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """A grouped 1-3-D NCHW conv for contraction.conv_general, with random (non-integer) floats."""
    nsp = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 2, 3]))
    n, cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    ksz = [draw(st.integers(1, 3)) for _ in range(nsp)]
    size = [k + draw(st.integers(0, 4)) for k in ksz]
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    x = rng.standard_normal((n, groups * cg, *size)).astype(np.float32)
    w = rng.standard_normal((groups * og, cg, *ksz)).astype(np.float32)
    spatial = tuple(range(2, 2 + nsp))
    options: dict[str, Any] = {
        "window_strides": [draw(st.integers(1, 2)) for _ in range(nsp)],
        "padding": [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nsp)],
        "lhs_dilation": [1] * nsp,
        "rhs_dilation": [1] * nsp,
        "window_reversal": [False] * nsp,
        "lhs_spec": (0, 1, spatial),
        "rhs_spec": (1, 0, spatial),
        "out_spec": (0, 1, spatial),
        "feature_group_count": groups,
        "batch_group_count": 1,
    }
    return x, w, options


@_SETTINGS
@given(conv=_direct_convs(), budget=st.integers(1, 4096))
def test_ordered_conv_in_chunks_is_bit_identical(
    conv: tuple[np.ndarray, np.ndarray, dict[str, Any]],
    budget: int,
) -> None:
    """`ordered` (the StableHLO reference's rounding order) sums each output's products one at a
    time, so chunking over output positions keeps every bit of real-valued floats."""
    x, w, options = conv
    with _chunks_counted(1 << 40):
        expected = contraction.conv_general(
            x, w, contraction.ConvAttributes(**options), ordered=True
        )
    with _chunks_counted(budget):
        got = contraction.conv_general(x, w, contraction.ConvAttributes(**options), ordered=True)
    np.testing.assert_array_equal(got, expected)


def test_chunks_stay_within_the_budget_or_one_row() -> None:
    rows, row_bytes = (3, 2, 5, 7), 40
    for budget in (1, 39, 40, 41, 280, 1399, 1400, 4200, 10**6):
        chunks = list(contraction.im2col_chunks(rows, row_bytes, budget))
        covered = np.zeros(rows, dtype=int)
        for index in chunks:
            covered[index] += 1
            assert covered[index].size * row_bytes <= max(budget, row_bytes)
            assert isinstance(index[0], slice)  # the group dim stays a batch dim
        np.testing.assert_array_equal(covered, 1)  # every row exactly once
        largest = max(covered[index].size for index in chunks) * row_bytes
        assert contraction.im2col_chunk_bytes(rows, row_bytes, budget) == largest


# -- a conv3d whose whole im2col is far over the limit -------------------------------------------

X5, W5, Y5 = "1x8x40x40x40", "2x8x24x24x24", "1x2x17x17x17"
CONV3D_MIGRAPHX = f"""\
func.func @main(%x: !migraphx.shaped<{X5}xf32, 512000x64000x1600x40x1>, %w: !migraphx.shaped<{W5}xf32, 110592x13824x576x24x1>) -> !migraphx.shaped<{Y5}xf32, 9826x4913x289x17x1> {{
  %0 = migraphx.convolution %x, %w {{dilation = [1, 1, 1], group = 1 : i64, padding = [0, 0, 0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1, 1]}} : <{X5}xf32, 512000x64000x1600x40x1>, <{W5}xf32, 110592x13824x576x24x1> -> <{Y5}xf32, 9826x4913x289x17x1>
  return %0 : !migraphx.shaped<{Y5}xf32, 9826x4913x289x17x1>
}}
"""


def _conv3d_inputs(dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, w and their conv on XLA, exact: small integers, whose f32 sums of 110592 products
    stay below 2^24."""
    import jax

    rng = np.random.default_rng(3)
    x = rng.integers(-1, 2, (1, 8, 40, 40, 40)).astype(np.float32)
    w = rng.integers(-1, 2, (2, 8, 24, 24, 24)).astype(np.float32)
    lhs, rhs = jax.numpy.asarray(x), jax.numpy.asarray(w)
    exact = np.asarray(jax.lax.conv_general_dilated(lhs, rhs, (1, 1, 1), "VALID"))
    return x.astype(dtype), w.astype(dtype), exact.astype(dtype)


def test_conv3d_with_a_window_copy_over_the_limit_runs_in_migraphx_and_tosa(
    tmp_path: Path,
) -> None:
    from convcanon.driver import transform_text

    x, w, expected = _conv3d_inputs(np.float32)
    full_im2col = 17**3 * 8 * 24**3 * 8  # f64 worst case, as the limit check counts it
    assert full_im2col > 4 << 30  # the default --memory-limit
    feed = tmp_path / "in.npz"
    np.savez(feed, arg0=x.reshape(-1), arg1=w.reshape(-1))
    tosa = transform_text(CONV3D_MIGRAPHX, "m.mlir", "migraphx-to-tosa")
    assert isinstance(tosa, str)  # text out, as text came in
    for name, text in (("m.mlir", CONV3D_MIGRAPHX), ("t.mlir", tosa)):  # same flat buffers
        source, result = tmp_path / name, tmp_path / f"{name}.npz"
        source.write_text(text)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["run", str(source), "--inputs", str(feed), "--output", str(result)])
        assert code == 0, err.getvalue()
        with np.load(result) as data:
            got = data["result0"]
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_conv3d_with_a_window_copy_over_the_limit_runs_in_hlo() -> None:
    """In f64 (8-byte im2col rows) so that the whole copy is over the default limit."""
    x, w, expected = _conv3d_inputs(np.float64)
    t_x, t_w, t_y = (f"tensor<{s}xf64>" for s in (X5, W5, Y5))
    text = (
        f"func.func @main(%x: {t_x}, %w: {t_w}) -> {t_y} {{\n"
        "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1, 2]x[o, i, 0, 1, 2]->"
        "[b, f, 0, 1, 2], window = {stride = [1, 1, 1]} {batch_group_count = 1 : i64, "
        f"feature_group_count = 1 : i64}} : ({t_x}, {t_w}) -> {t_y}\n"
        f"  return %0 : {t_y}\n}}\n"
    )
    (report,) = run_hlo_text(text, "conv3d.mlir", inputs={"arg0": x, "arg1": w})
    np.testing.assert_array_equal(report.results[0], expected)
