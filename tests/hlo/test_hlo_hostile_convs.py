"""Hostile convs: planning cost independent of stride, max-phases, and element types whose zero
is missing (f8E8M0FNU) or not an ordinary float (complex)."""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import numpy as np
import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.explain import explain_module

from .cases import all_conv_params, as_stablehlo_text, assert_canonical, reference, run_pass, xla

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


# Each hostile conv below is planned (or refused) in at most ~35,000 lines of Python, imports
# included (measured); a loop over its taps, phases or stride would run millions.
LINES = 200_000


class TooManySteps(Exception):
    pass


@contextmanager
def at_most_lines(limit: int) -> Iterator[None]:
    """Fail as soon as the code inside runs more than `limit` lines of Python: a bound on the
    steps a plan takes (a loop over a billion taps or a million phases goes far past it and is
    stopped there), not on time, which a loaded machine stretches."""
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> object:
        nonlocal count
        if event == "line":
            count += 1
            if count > limit:
                raise TooManySteps(f"over {limit} lines of Python")
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)  # pyright: ignore[reportArgumentType]
    try:
        yield
    finally:
        sys.settrace(previous)


HUGE_STRIDE = """
func.func public @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x1x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1000000000, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x1x6x4xf32>
  return %0 : tensor<1x1x6x4xf32>
}
"""

# 405 bytes that ask for 1024 x 1024 phases: one conv merged, a million unmerged
HUGE_KERNEL = """
func.func @main(%x: tensor<1x2048x2048x1xf32>, %w: tensor<1024x1024x1x1xf32>) -> tensor<1x2x2x1xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1024, 1024]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2048x2048x1xf32>, tensor<1024x1024x1x1xf32>) -> tensor<1x2x2x1xf32>
  return %0 : tensor<1x2x2x1xf32>
}
"""

# stride 2 with padding and lhs dilation 2 in one dim: pads in both rewrites
PADDED = """
func.func public @main(%x: tensor<1x6x5x2xT>, %w: tensor<3x3x2x2xT>) -> tensor<1x6x3x2xT> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x6x5x2xT>, tensor<3x3x2x2xT>) -> tensor<1x6x3x2xT>
  return %0 : tensor<1x6x3x2xT>
}
"""


def test_a_stride_of_a_billion_plans_at_once() -> None:
    pipeline = "stablehlo-canonicalize-conv{gate=general engine=xla-cpu}"
    with at_most_lines(LINES):  # looping over range(stride) would never end
        (row,), _ = explain_module(HUGE_STRIDE, "m.mlir", pipeline)
    assert row["decision"] == "rewrite" and row["phases"] == 1  # 3 one-tap phases, merged
    assert row["macs_after"] == row["macs_before"]


_LONG_LINE = """
func.func @main(%x: tensor<1x5x{n}x8xf32>, %w: tensor<3x{n}x8x1xf32>) -> tensor<1x2x1x1xf32> {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {{stride = [2, 1]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
    : (tensor<1x5x{n}x8xf32>, tensor<3x{n}x8x1xf32>) -> tensor<1x2x1x1xf32>
  return %0 : tensor<1x2x1x1xf32>
}}
"""


@pytest.mark.parametrize("engine", ["generic", "iree-cpu", "xla-cpu"])
def test_a_line_phase_of_twenty_thousand_taps_is_not_split_into_a_conv_per_tap(
    engine: str,
) -> None:
    """A 3x20000 conv with stride (2, 1) has a 1x20000 line phase: the policies that split line
    phases into 1x1 convs per tap split none longer than their limit, so a few hundred bytes
    of input do not become 20000 convs."""
    _, _, printed = run_pass(_LONG_LINE.format(n=20000), STABLEHLO, gate="general", engine=engine)
    assert printed.count("stablehlo.convolution") <= 2
    small = _LONG_LINE.format(n=3)  # a 3x3 kernel: its line phases are split where lines are
    after, _, printed = run_pass(small, STABLEHLO, gate="general", engine=engine)
    convs = all_conv_params(after, STABLEHLO)
    assert_canonical(convs)
    assert len(convs) == (2 if engine == "xla-cpu" else 4)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_conv_needing_a_million_partials_is_refused_with_the_reason(dialect: Dialect) -> None:
    with at_most_lines(LINES):
        _, stats, printed = run_pass(HUGE_KERNEL, dialect, gate="general", merge_phases="none")
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: needs 1048576 partial convs, over max-phases 64": 1,
    }
    assert printed.count("convolution(") == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_million_phases_fold_into_one_conv_in_a_few_ops(dialect: Dialect) -> None:
    """The 1024 x 1024 phases of a 1024/1024 conv are one space-to-depth: the ops emitted do
    not grow with the phases (joining a million slices would never end)."""
    with at_most_lines(LINES):
        after, stats, printed = run_pass(HUGE_KERNEL, dialect, gate="general")
    assert stats.counters["merged-phases"] == 1024 * 1024 - 1
    assert_canonical(all_conv_params(after, dialect))
    ops = [line for line in printed.splitlines() if line.lstrip().startswith("%")]
    assert printed.count("convolution") == 1 and len(ops) <= 8


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_million_unfoldable_phase_slices_are_refused_with_the_reason(dialect: Dialect) -> None:
    """With rhs dilation 2 and stride 1024 a dim's taps fall in 512 phases that do not fold;
    joining 512 x 512 slices is refused like too many partial convs."""
    text = HUGE_KERNEL.replace(
        "window = {stride = [1024, 1024]}", "window = {stride = [1024, 1024], rhs_dilate = [2, 2]}"
    )
    text = text.replace("1024x1024x1x1xf32", "1023x1023x1x1xf32").replace(
        "1x2x2x1xf32", "1x1x1x1xf32"
    )
    _, stats, printed = run_pass(text, dialect, gate="general")
    assert stats.counters == {
        "convs-seen": 1,
        "skipped: needs 262144 phase slices, over the limit of 4096": 1,
    }
    assert printed.count("convolution(") == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_element_type_without_zero_is_euet001_at_the_conv(dialect: Dialect) -> None:
    text = PADDED.replace("xT>", "xf8E8M0FNU>")
    with pytest.raises(ConvcanonError) as info:
        run_pass(text, dialect, gate="general")
    assert info.value.code == "EUET001"
    assert "f8E8M0FNU" in str(info.value)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("mode", ["polyphase", "interior-pad"])
def test_complex_convs_are_padded_with_a_complex_zero(dialect: Dialect, mode: str) -> None:
    text = PADDED.replace("xT>", "xcomplex<f32>>")
    after, _, _ = run_pass(text, dialect, gate="general", lhs_dilation=mode)
    assert_canonical(all_conv_params(after, dialect))
    rng = np.random.default_rng(5)
    inputs = [
        (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)
        for s in [(1, 6, 5, 2), (3, 3, 2, 2)]
    ]
    (expected,) = xla(
        text.replace("complex<f32>", "complex<f64>"), [x.astype(np.complex128) for x in inputs]
    )
    (got,) = xla(as_stablehlo_text(after, dialect), inputs)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


WRAPPED_PADDING = """
func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[9223372036854775807, 9223372036854775807], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32>
  return %0 : tensor<1x4x6x1xf32>
}
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_padding_that_wraps_int64_is_an_error_at_the_conv(dialect: Dialect) -> None:
    """The verifier infers the declared 1x4x6x1 in wrapping int64 arithmetic; the rewrite would
    build a tensor of 2^64 elements (a TypeError in MLIR's bindings). Rewrite and explain say
    so at the conv."""
    with pytest.raises(ConvcanonError) as info:
        run_pass(WRAPPED_PADDING, dialect, gate="general")
    assert "padding overflows int64" in str(info.value) and "not the declared 4" in str(info.value)
    with pytest.raises(ConvcanonError):
        explain_module(WRAPPED_PADDING, "m.mlir", "stablehlo-canonicalize-conv{gate=general}")


# a kernel extent of a billion taps, declared in a few bytes (over three input features: an
# image stem's shape, which the engine policies may zero-extend)
BILLION_TAPS = """
func.func public @main(%x: tensor<1x1000000000x8x3xf32>, %w: tensor<1000000000x3x3x4xf32>) -> tensor<1x1x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1000000000, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1000000000x8x3xf32>, tensor<1000000000x3x3x4xf32>) -> tensor<1x1x6x4xf32>
  return %0 : tensor<1x1x6x4xf32>
}
"""


@pytest.mark.parametrize("engine", ["xla-cpu", "iree-cpu", "generic"])
@pytest.mark.parametrize("merge", ["auto", "exact", "pad-kernel", "none"])
def test_a_billion_tap_kernel_is_refused_with_the_reason_at_once(engine: str, merge: str) -> None:
    """Planning visits each tap of a dim: a kernel over the tap limit is refused before any
    plan or lattice count (visiting a billion taps would never end)."""
    pipeline = f"stablehlo-canonicalize-conv{{gate=general engine={engine} merge-phases={merge}}}"
    with at_most_lines(LINES):
        (row,), _ = explain_module(BILLION_TAPS, "m.mlir", pipeline)
    assert row["decision"] == "skip"
    assert row["reason"] == "kernel extent 1000000000 over the limit of 1048576 taps"


# lhs dilation 2^31 + 1 over a one-element input: one output, 2^31 + 1 output phases
WIDE_LHS_DILATION = """
func.func public @main(%x: tensor<1x1x2xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x1x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [3], pad = [[2, 2]], lhs_dilate = [2147483649], rhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x2xf32>, tensor<3x2x2xf32>) -> tensor<1x1x2xf32>
  return %0 : tensor<1x1x2xf32>
}
"""


@pytest.mark.parametrize("merge", ["auto", "none"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_output_phase_period_longer_than_the_output_places_only_its_outputs(
    dialect: Dialect, merge: str
) -> None:
    """A period of 2^31 + 1 output phases over one output: the interleave places that output
    (it made a zero tensor for each of the 2^31 phases without one, and never ended)."""
    after, _, printed = run_pass(WIDE_LHS_DILATION, dialect, gate="general", merge_phases=merge)
    assert_canonical(all_conv_params(after, dialect))
    ops = [line for line in printed.splitlines() if line.lstrip().startswith("%")]
    assert printed.count("convolution") == 1 and len(ops) <= 4, printed
    x, w = np.arange(1, 3, dtype=np.float32).reshape(1, 1, 2), np.ones((3, 2, 2), np.float32)
    canonical = as_stablehlo_text(after, dialect)
    (expected,) = reference(WIDE_LHS_DILATION, [x, w])  # only the middle tap reads x
    np.testing.assert_array_equal(expected, [[[3.0, 3.0]]])
    np.testing.assert_array_equal(xla(canonical, [x, w])[0], expected)


# lhs dilation 2^16 over two inputs and a one-tap kernel: 2^16 + 1 outputs, 2^16 output phases,
# and only phase 0 has taps (its two outputs are the inputs)
SPARSE_PHASES = """
func.func public @main(%x: tensor<1x2x1xf32>, %w: tensor<1x1x1xf32>) -> tensor<1x65537x1xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {lhs_dilate = [65536]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x1xf32>, tensor<1x1x1xf32>) -> tensor<1x65537x1xf32>
  return %0 : tensor<1x65537x1xf32>
}
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_run_of_phases_without_taps_is_one_block_of_zeros(dialect: Dialect) -> None:
    """The interleave made one zero tensor for each phase without taps: 65,535 constants here,
    and at lhs dilation 2^24 a module that took 4.5 GB and ended in std::bad_alloc."""
    after, _, printed = run_pass(SPARSE_PHASES, dialect, gate="general")
    assert_canonical(all_conv_params(after, dialect))
    ops = [line for line in printed.splitlines() if line.lstrip().startswith("%")]
    assert printed.count("constant") == 1 and len(ops) <= 6, printed
    x, w = np.array([[[2.0], [-3.0]]], np.float32), np.array([[[0.5]]], np.float32)
    expected = np.zeros((1, 65537, 1), np.float32)
    expected[0, 0, 0], expected[0, 65536, 0] = 1.0, -1.5
    np.testing.assert_array_equal(reference(SPARSE_PHASES, [x, w])[0], expected)
    np.testing.assert_array_equal(xla(as_stablehlo_text(after, dialect), [x, w])[0], expected)
