"""A run's work is bounded as its memory is: both interpreters count each op's steps (its
elements, a contraction's multiply-adds, a kernel's whole-array calls per window tap) before
doing them, and stop at the op that would pass `--max-work` with a located error. Buffers within
the memory limit do not bound time: each hostile program below holds a few MB and ran for
minutes before the limit existed (the conv's 2.5e11 multiply-adds); ten times wider, hours."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import parse_module
from convcanon.reference.hlo_interp import Env, Interpreter, normalize, tensor_type
from convcanon.reference.kernels import budget, indexing, reduction, sort


def _conv(n: int, k: int, features: int) -> str:
    x, w, r = f"1x1x{n}xf32", f"{features}x1x{k}xf32", f"1x{features}x{n - k + 1}xf32"
    return (
        f"func.func @main(%x: tensor<{x}>, %w: tensor<{w}>) -> tensor<{r}> {{\n"
        f"  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],"
        f" window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}"
        f" : (tensor<{x}>, tensor<{w}>) -> tensor<{r}>\n"
        f"  return %0 : tensor<{r}>\n}}\n"
    )


HLO_CONV = _conv(1_000_000, 500_000, 1)  # 2.5e11 multiply-adds

REDUCE_WINDOW = """\
func.func @main(%x: tensor<2000000xf32>) -> tensor<1000001xf32> {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %g = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %g, %a, %b : tensor<i1>, tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1000000>} \
: (tensor<2000000xf32>, tensor<f32>) -> tensor<1000001xf32>
  return %0 : tensor<1000001xf32>
}
"""

X, W, R = (
    "1x1x1x1000000xf32, 1000000x1000000x1000000x1",
    "1x1x1x500000xf32, 500000x500000x500000x1",
    "1x1x1x500001xf32, 500001x500001x500001x1",
)
MIGRAPHX_CONV = f"""\
func.func @main(%x: !migraphx.shaped<{X}>, %w: !migraphx.shaped<{W}>) -> !migraphx.shaped<{R}> {{
  %0 = migraphx.convolution %x, %w {{dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], \
padding_mode = 0 : i64, stride = [1, 1]}} : <{X}>, <{W}> -> <{R}>
  return %0 : !migraphx.shaped<{R}>
}}
"""

P, Q = "1x1x1x1000000xf32, 1000000x1000000x1000000x1", "1x1x1x500001xf32, 500001x500001x500001x1"
MIGRAPHX_POOL = f"""\
func.func @main(%x: !migraphx.shaped<{P}>) -> !migraphx.shaped<{Q}> {{
  %0 = migraphx.pooling %x {{length = [1, 500000], mode = "max", padding = [0, 0], \
stride = [1, 1]}} : <{P}> -> <{Q}>
  return %0 : !migraphx.shaped<{Q}>
}}
"""

LOOP = """\
func.func @main(%x: tensor<i64>) -> tensor<i64> {{
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %r:2 = stablehlo.while(%a = %zero, %b = %x) : tensor<i64>, tensor<i64>
  cond {{
    %n = stablehlo.constant dense<{trips}> : tensor<i64>
    %c = stablehlo.compare LT, %a, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i64>
    %a1 = stablehlo.add %a, %one : tensor<i64>
    %b1 = stablehlo.add %b, %a : tensor<i64>
    stablehlo.return %a1, %b1 : tensor<i64>, tensor<i64>
  }}
  return %r#1 : tensor<i64>
}}
"""

VARIADIC_REDUCE = """\
func.func @main() -> (tensor<1xf32>, tensor<1xi32>) {
  %x = stablehlo.constant dense<1.0> : tensor<1x1000000xf32>
  %i = stablehlo.constant dense<1> : tensor<1x1000000xi32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %z), (%i init: %zi) across dimensions = [1] \
: (tensor<1x1000000xf32>, tensor<1x1000000xi32>, tensor<f32>, tensor<i32>) \
-> (tensor<1xf32>, tensor<1xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
      stablehlo.return %a, %c : tensor<f32>, tensor<i32>
    }
  return %r#0, %r#1 : tensor<1xf32>, tensor<1xi32>
}
"""

REMAINDER = """\
func.func @main() -> tensor<1000000xf64> {{
  %a = stablehlo.constant dense<{a}> : tensor<1000000xf64>
  %b = stablehlo.constant dense<{b}> : tensor<1000000xf64>
  %0 = stablehlo.remainder %a, %b : tensor<1000000xf64>
  return %0 : tensor<1000000xf64>
}}
"""

MIGRAPHX_ERF = """\
func.func @main(%x: !migraphx.shaped<1000000xf32, 1>) -> !migraphx.shaped<1000000xf32, 1> {
  %0 = migraphx.erf %x : <1000000xf32, 1> -> <1000000xf32, 1>
  return %0 : !migraphx.shaped<1000000xf32, 1>
}
"""

MIGRAPHX_DOT = """\
func.func @main(%a: !migraphx.shaped<64x64xf32, 64x1>) -> !migraphx.shaped<64x64xf32, 64x1> {
  %0 = migraphx.dot %a, %a : <64x64xf32, 64x1>, <64x64xf32, 64x1> -> <64x64xf32, 64x1>
  return %0 : !migraphx.shaped<64x64xf32, 64x1>
}
"""


def _refused(tmp_path: Path, capsys, text: str, *flags: str, lower: bool = False) -> str:
    """`convcanon run` of `text` (lowered to TOSA first, if `lower`): its one error line."""
    path = tmp_path / "m.mlir"
    path.write_text(text)
    if lower:
        assert opt_main(["-p", "migraphx-to-tosa", str(path), "-o", str(tmp_path / "t.mlir")]) == 0
        path = tmp_path / "t.mlir"
        capsys.readouterr()
    code = main(["run", str(path), *flags])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    (line, _) = diagnostic_lines(err)  # the error, and the empty line after stderr's end
    return line.replace(str(path), "m.mlir")


@pytest.mark.parametrize(
    ("text", "lower", "where"),
    [
        (
            _conv(1_000_000, 500_000, 1),
            False,
            "m.mlir:2:8: error: work limit reached: stablehlo.convolution: ",
        ),
        (REDUCE_WINDOW, False, "m.mlir:3:8: error: work limit reached: stablehlo.reduce_window: "),
        (MIGRAPHX_CONV, False, "m.mlir:2:3: error: work limit reached: 'migraphx.convolution': "),
        (MIGRAPHX_CONV, True, "error: work limit reached: 'tosa.conv2d': "),
        (MIGRAPHX_POOL, False, "m.mlir:2:3: error: work limit reached: 'migraphx.pooling': "),
        (MIGRAPHX_POOL, True, "error: work limit reached: 'tosa.max_pool2d': "),
    ],
    ids=[
        "stablehlo-conv",
        "reduce-window",
        "migraphx-conv",
        "tosa-conv",
        "migraphx-pool",
        "tosa-pool",
    ],
)
def test_a_huge_window_is_refused_at_its_op_before_it_runs(
    tmp_path: Path, capsys, text: str, lower: bool, where: str
):
    line = _refused(tmp_path, capsys, text, lower=lower)
    assert where in line
    assert "would take the run past its limit of 200000000000 steps" in line
    assert line.endswith("(`--max-work N` sets it)")


def test_a_long_loop_stops_at_the_limit_the_flag_sets(tmp_path: Path, capsys):
    line = _refused(tmp_path, capsys, LOOP.format(trips=10**9), "--max-work", "1000000000")
    assert line.startswith("m.mlir:")
    assert "error: work limit reached: stablehlo." in line
    assert "past its limit of 1000000000 steps" in line


def test_a_variadic_reduce_pays_a_call_per_reduced_element(tmp_path: Path, capsys):
    """Its body runs once per reduced element: one that computes nothing (it returns its
    accumulators) cost nothing, and 1e6 elements ran for 6 s (1e8: ten minutes) under any
    limit; 1e6 calls cost 2e10 steps."""
    line = _refused(tmp_path, capsys, VARIADIC_REDUCE, "--max-work", "1e9")
    assert line.startswith("m.mlir:6:26: error: work limit reached: stablehlo.reduce: ")
    assert "(a call per reduced element)" in line


def test_a_remainder_pays_for_its_long_division(tmp_path: Path, capsys):
    """C's fmod takes 0.7 ns a bit `a`'s exponent is above `b`'s: 1e300 % 3e-300 took 1.4 us an
    element (1e6 elements: 1.4 s for 3e6 steps; a loop of them, hours under the default limit).
    A remainder of numbers alike costs only what the benchmark measured of its elements."""
    line = _refused(
        tmp_path, capsys, REMAINDER.format(a="1.0e300", b="3.0e-300"), "--max-work", "1e9"
    )
    assert line.startswith("m.mlir:4:8: error: work limit reached: stablehlo.remainder: ")
    assert "(its long divisions)" in line
    path = tmp_path / "alike.mlir"
    path.write_text(REMAINDER.format(a="7.0", b="3.0"))
    assert main(["run", str(path), "--max-work", "2e8"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(
    ("lower", "where", "steps"),
    [
        (False, "m.mlir:2:3: ", "erf': 400000000 steps (a Python call per element)"),
        # TOSA's erf also pays what the benchmark measured past its Python calls (under load)
        (True, "m.mlir:3:5: ", "'tosa.erf': "),
    ],
)
def test_erf_pays_for_its_python_call_per_element(
    tmp_path: Path, capsys, lower: bool, where: str, steps: str
):
    """migraphx and TOSA `erf` is `math.erf` called on each element (190 ns): 1e6 of them
    cost 2e6 steps and ran under any limit over that; now 4e8, refused under 1e8."""
    line = _refused(tmp_path, capsys, MIGRAPHX_ERF, "--max-work", "1e8", lower=lower)
    assert line.startswith(f"{where}error: work limit reached: "), line
    assert steps in line, line


GATHER = """\
func.func @main(%x: tensor<10x8xf32>, %i: tensor<1000x1xi32>) -> tensor<1000x8xf32> {
  %0 = "stablehlo.gather"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], \
collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, \
slice_sizes = array<i64: 1, 8>} : (tensor<10x8xf32>, tensor<1000x1xi32>) -> tensor<1000x8xf32>
  return %0 : tensor<1000x8xf32>
}
"""

SCATTER = """\
func.func @main(%x: tensor<10x8xf32>, %i: tensor<1000x1xi32>, %u: tensor<1000x8xf32>) \
-> tensor<10x8xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], \
inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} \
: (tensor<10x8xf32>, tensor<1000x1xi32>, tensor<1000x8xf32>) -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}
"""


@pytest.mark.parametrize("text", [GATHER, SCATTER], ids=["gather", "scatter"])
def test_gather_and_scatter_pay_for_their_index_arithmetic(text: str):
    """numpy's advanced indexing takes about 9 ns an element per operand dim: a gather of 1e6
    rows ran 0.25 s for 9e6 steps (27 ns a step). Each element now costs INDEX_STEPS a dim."""
    _, steps = _run(text, 1 << 62)
    assert steps >= indexing.INDEX_STEPS * 2 * 8000


@pytest.mark.parametrize(
    ("spelled", "steps"), [("2e11", 2 * 10**11), ("40000", 40_000), ("4.0e4", 40_000)]
)
def test_the_limit_is_a_whole_number_in_digits_or_exponent_notation(
    tmp_path: Path, capsys, spelled: str, steps: int
):
    """As the default is written (2e11): a dot of 64x64 matrices fits 2e11 steps, not 4e4."""
    path = tmp_path / "m.mlir"
    path.write_text(MIGRAPHX_DOT)
    code = main(["run", str(path), "--max-work", spelled])
    capsys.readouterr()
    assert code == (0 if steps > 10**6 else 1)


def test_a_migraphx_dot_counts_its_multiply_adds(tmp_path: Path, capsys):
    line = _refused(tmp_path, capsys, MIGRAPHX_DOT, "--max-work", "40000")
    assert line.startswith("m.mlir:2:3: error: work limit reached: 'migraphx.dot': ")
    assert "(its multiply-adds)" in line


def _run(text: str, limit: int) -> tuple[list[np.ndarray], int]:
    with budget.work_limit(limit):
        env = Env()
    interp = Interpreter(parse_module(text, "m.mlir"), "m.mlir", env=env)
    block = interp.functions["main"].regions[0].blocks[0]
    rng = np.random.default_rng(0)
    types = [tensor_type(a.type) for a in block.arguments]
    args = [normalize(rng.integers(-3, 4, t.shape), t) for t in types]
    return interp.call("main", args), env.meter.spent


@settings(max_examples=25, deadline=None)
@given(
    st.one_of(
        st.builds(lambda t: LOOP.format(trips=t), st.integers(0, 40)),
        st.builds(
            lambda n, k, f: _conv(n, min(k, n), f),
            st.integers(1, 64),
            st.integers(1, 16),
            st.integers(1, 4),
        ),
    )
)
def test_a_run_fits_a_limit_of_exactly_its_steps_and_not_one_fewer(text: str):
    results, steps = _run(text, 1 << 62)
    again, same = _run(text, steps)
    assert same == steps
    for a, b in zip(results, again, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ConvcanonError, match="work limit reached") as refused:
        _run(text, steps - 1)
    assert refused.value.loc is not None and refused.value.loc.line > 0


class _Counted:
    """A kernel's body that counts its calls (each one whole-array numpy call)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, *arrays: np.ndarray) -> Any:
        self.calls += 1
        return self.fn(*arrays)


def _loops(kind: str, n: int, k: int) -> tuple[Callable[[], object], list[_Counted]]:
    """A kernel that calls its body in a Python loop, on n elements with k taps (or rounds)."""
    x = np.arange(n, dtype=np.float32)
    if kind == "reduce":
        body = _Counted(np.add)
        zero = np.zeros((), np.float32)
        return lambda: reduction.reduce(x, zero, [0], body, ordered=True), [body]
    if kind == "reduce_variadic":  # an argmax's body, or one that returns its accumulators
        body = _Counted(lambda a, i, b, j: [a, i])
        accs = [np.zeros((), np.float32), np.zeros((), np.int64)]
        return lambda: reduction.fold_in_order([x, x.astype(np.int64)], accs, body), [body]
    if kind == "reduce_window":
        body = _Counted(lambda a, b: [np.maximum(a, b)])
        window = dict(window_strides=[1], base_dilations=[1], window_dilations=[1])
        run = lambda: reduction.reduce_window(  # noqa: E731
            [x],
            [np.zeros((), np.float32)],
            window_dimensions=[k],
            padding=[(0, 0)],
            body=body,
            **window,
        )
        return run, [body]
    if kind == "sort":
        less = _Counted(lambda a, b: a < b)
        return lambda: sort.sort([x[::-1].copy()], 0, less), [less]
    if kind == "scatter":
        combine = _Counted(lambda t, v: [t + v])
        target = [np.zeros(max(n // k, 1), np.float32)]
        flat = np.arange(n) % len(target[0])  # each element hit about k times: k rounds
        return lambda: indexing.combine_in_rounds(target, flat, [x], combine), [combine]
    select, combine = _Counted(np.greater_equal), _Counted(lambda t, v: [t + v])
    run = lambda: indexing.select_and_scatter(  # noqa: E731
        x,
        np.ones(n - k + 1, np.float32),
        np.zeros((), np.float32),
        window_dimensions=[k],
        window_strides=[1],
        padding=[(0, 0)],
        select=select,
        combine=combine,
    )
    return run, [select, combine]


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(
        ["reduce", "reduce_variadic", "reduce_window", "sort", "scatter", "select_and_scatter"]
    ),
    n=st.integers(1, 300),
    k=st.integers(1, 40),
    share=st.floats(0, 1),
)
def test_a_kernels_loop_pays_for_each_call_before_making_it(
    kind: str, n: int, k: int, share: float
):
    """Each whole-array call of a kernel's loop costs its steps, counted before it is made: a
    run counts at least those of all its calls, and under any smaller limit the calls made
    before the refusal fit in it."""
    k = min(k, n)
    run, bodies = _loops(kind, n, k)
    meter = budget.Meter(1 << 62)
    with budget.metered(meter):
        run()
    assert meter.spent >= sum(body.calls for body in bodies) * budget.OP_STEPS
    limit = int(share * meter.spent)
    run, bodies = _loops(kind, n, k)
    try:
        with budget.metered(budget.Meter(limit)):
            run()
        refused = False
    except budget.OverWork:
        refused = True
    assert refused == (limit < meter.spent)
    assert sum(body.calls for body in bodies) * budget.OP_STEPS <= limit


def test_a_reflect_pad_pays_for_its_outer_indexing():
    """A reflect or edge pad reads each output element through numpy's outer indexing, 1.15 ns
    an element per dim: counted as an element read and written (1 ns), a 4-d pad of huge
    output ran 5 times longer than the limit allows."""
    from convcanon.reference.kernels import movement

    t, r = (
        "!migraphx.shaped<1x2x8x8xf32, 128x64x8x1>",
        "!migraphx.shaped<1x2x40x40xf32, 3200x1600x40x1>",
    )
    text = (
        f"func.func @main(%x: {t}) -> {r} {{\n"
        f'  %0 = migraphx.pad %x {{mode = "reflect", pads = [0, 0, 16, 16, 0, 0, 16, 16], '
        f"value = 0.0 : f32}} : {t} -> {r}\n  return %0 : {r}\n}}\n"
    )
    from convcanon.reference.migraphx_interp import Interpreter
    from convcanon.xdsl_io import parse_file_text

    interp = Interpreter(parse_file_text(text, "m.mlir"), "m.mlir", {})
    interp.call("main", [np.ones((1, 2, 8, 8), np.float32)])
    outer = 1 * 2 * 40 * 40 * 4 * movement.OUTER_INDEX_STEPS
    assert interp.meter.spent == budget.OP_STEPS + 2 * 8 * 8 + 2 * 40 * 40 + outer
