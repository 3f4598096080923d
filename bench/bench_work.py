"""What one step of the interpreters' work limit costs (`convcanon run --max-work`).

Both interpreters count a run's steps before doing them: an op's dispatch and its elements, a
contraction's multiply-adds, a whole-array numpy call in a kernel's loop (a window tap, a round
of duplicate scatter indices, a comparator call). The limit is meant to stop hostile programs
(huge windows, long loops of tiny ops) after minutes, not hours, and never to stop a real
model. This runs one program per kind of step, each near its slowest per step, and the flax
ResNet-50 export (bench/models, if present), and prints the steps each took, its time and the
nanoseconds per step. The default limit is chosen from the slowest kind.

Run: python bench/bench_work.py [--no-write]
Writes bench/RESULTS_work.md (markdown, also printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
RESNET = BENCH / "models" / "resnet50.stablehlo.mlir"


def _conv(n: int, k: int, features: int) -> str:
    """A 1-D conv of an n-wide input with a k-wide kernel into `features` outputs (n-k+1 wide)."""
    x, w, r = f"1x1x{n}xf32", f"{features}x1x{k}xf32", f"1x{features}x{n - k + 1}xf32"
    return (
        f"func.func @main(%x: tensor<{x}>, %w: tensor<{w}>) -> tensor<{r}> {{\n"
        f"  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],"
        f" window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}"
        f" : (tensor<{x}>, tensor<{w}>) -> tensor<{r}>\n"
        f"  return %0 : tensor<{r}>\n}}\n"
    )


def _dot(n: int, element: str = "f32") -> str:
    t = f"tensor<{n}x{n}x{element}>"
    return (
        f"func.func @main(%a: {t}, %b: {t}) -> {t} {{\n"
        f"  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}\n"
        f"  return %0 : {t}\n}}\n"
    )


def _adds(n: int, count: int) -> str:
    t = f"tensor<{n}xf32>"
    body = "".join(f"  %{i + 1} = stablehlo.add %{i}, %{i} : {t}\n" for i in range(count))
    return (
        f"func.func @main(%a: {t}) -> {t} {{\n  %0 = stablehlo.negate %a : {t}\n{body}"
        f"  return %{count} : {t}\n}}\n"
    )


def _loop(iterations: int) -> str:
    """A while loop of `iterations` trips whose body is four scalar ops."""
    i = "tensor<i64>"
    return (
        f"func.func @main(%x: {i}) -> {i} {{\n"
        f"  %zero = stablehlo.constant dense<0> : {i}\n"
        f"  %r:2 = stablehlo.while(%a = %zero, %b = %x) : {i}, {i}\n"
        f"  cond {{\n"
        f"    %n = stablehlo.constant dense<{iterations}> : {i}\n"
        f"    %c = stablehlo.compare LT, %a, %n : ({i}, {i}) -> tensor<i1>\n"
        f"    stablehlo.return %c : tensor<i1>\n"
        f"  }} do {{\n"
        f"    %one = stablehlo.constant dense<1> : {i}\n"
        f"    %a1 = stablehlo.add %a, %one : {i}\n"
        f"    %b1 = stablehlo.multiply %b, %one : {i}\n"
        f"    stablehlo.return %a1, %b1 : {i}, {i}\n"
        f"  }}\n"
        f"  return %r#1 : {i}\n}}\n"
    )


def _reduce_window(n: int, window: int) -> str:
    """A max over windows `window` wide, by a body of two ops (no single-op shortcut)."""
    x, r, s = f"tensor<{n}xf32>", f"tensor<{n - window + 1}xf32>", "tensor<f32>"
    return (
        f"func.func @main(%x: {x}) -> {r} {{\n"
        f"  %init = stablehlo.constant dense<0xFF800000> : {s}\n"
        f'  %0 = "stablehlo.reduce_window"(%x, %init) ({{\n'
        f"  ^bb0(%a: {s}, %b: {s}):\n"
        f"    %g = stablehlo.compare GT, %a, %b : ({s}, {s}) -> tensor<i1>\n"
        f"    %m = stablehlo.select %g, %a, %b : tensor<i1>, {s}\n"
        f"    stablehlo.return %m : {s}\n"
        f"  }}) {{window_dimensions = array<i64: {window}>}} : ({x}, {s}) -> {r}\n"
        f"  return %0 : {r}\n}}\n"
    )


def _sort(n: int) -> str:
    x, s = f"tensor<{n}xf32>", "tensor<f32>"
    return (
        f"func.func @main(%x: {x}) -> {x} {{\n"
        f'  %0 = "stablehlo.sort"(%x) ({{\n'
        f"  ^bb0(%a: {s}, %b: {s}):\n"
        f"    %c = stablehlo.compare LT, %a, %b : ({s}, {s}) -> tensor<i1>\n"
        f"    stablehlo.return %c : tensor<i1>\n"
        f"  }}) {{dimension = 0 : i64}} : ({x}) -> {x}\n"
        f"  return %0 : {x}\n}}\n"
    )


def _mgx_chain(count: int) -> str:
    t = "<4xf32, 1>"
    body = "".join(
        f"  %{i + 1} = migraphx.add %{i}, %{i} : {t}, {t} -> {t}\n" for i in range(count)
    )
    return (
        f"func.func @main(%0: !migraphx.shaped{t}) -> !migraphx.shaped{t} {{\n{body}"
        f"  return %{count} : !migraphx.shaped{t}\n}}\n"
    )


def _run_hlo(text: str) -> tuple[float, int]:
    from convcanon.hlo.context import parse_module
    from convcanon.reference.hlo_interp import Env, Interpreter, normalize, tensor_type

    env = Env()  # its meter, at the limit of `work_limit` around the call
    interp = Interpreter(parse_module(text, "bench.mlir"), "bench.mlir", env=env)
    rng = np.random.default_rng(0)
    args = []
    for arg in interp.functions["main"].regions[0].blocks[0].arguments:
        tt = tensor_type(arg.type)
        scale = 0.5 if len(tt.shape) == 1 else 0.1  # batch-norm variances stay positive
        args.append(normalize(rng.uniform(scale, 3 * scale, tt.shape), tt))
    start = time.perf_counter()
    interp.call("main", args)
    return time.perf_counter() - start, env.meter.spent


def _run_migraphx(text: str) -> tuple[float, int]:
    from convcanon.reference.migraphx_interp import Interpreter
    from convcanon.xdsl_io import parse_file_text

    interp = Interpreter(parse_file_text(text, "bench.mlir"), "bench.mlir", {})
    start = time.perf_counter()
    interp.call("main", [np.ones(4, np.float32)])
    return time.perf_counter() - start, interp.meter.spent


CASES: list[tuple[str, Callable[[], str], str]] = [
    ("conv, one output feature, 20000-wide kernel", lambda: _conv(40_000, 20_000, 1), "hlo"),
    ("conv, 64 output features, 2000-wide kernel", lambda: _conv(40_000, 2_000, 64), "hlo"),
    ("dot_general 1024x1024x1024 f32", lambda: _dot(1024), "hlo"),
    ("dot_general 256x256x256 i32", lambda: _dot(256, "i32"), "hlo"),
    ("100 adds of 1e6 elements", lambda: _adds(1_000_000, 100), "hlo"),
    ("while loop, 20000 trips of 4 scalar ops", lambda: _loop(20_000), "hlo"),
    (
        "reduce_window, two-op body, 20000-wide window",
        lambda: _reduce_window(40_000, 20_000),
        "hlo",
    ),
    ("sort of 1e6 with a comparator", lambda: _sort(1_000_000), "hlo"),
    ("migraphx: 20000 adds of 4 elements", lambda: _mgx_chain(20_000), "migraphx"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description="cost of a step of the interpreters' work limit")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from convcanon.diagnostics import DEFAULT_WORK_LIMIT
    from convcanon.reference.kernels.budget import work_limit

    unlimited = 1 << 62
    rows = []
    cases = list(CASES)
    if RESNET.exists():
        cases.append(("flax ResNet-50, batch 1 (bench/models)", RESNET.read_text, "hlo"))
    for title, make, kind in cases:
        run = _run_hlo if kind == "hlo" else _run_migraphx
        text = make()
        with work_limit(unlimited):  # the fastest of 3: the machine's noise only adds time
            seconds, steps = min(run(text) for _ in range(3))
        rows.append((title, steps, seconds))
        print(f"{title}: {steps:.3g} steps, {seconds:.2f} s, {1e9 * seconds / steps:.2f} ns/step")
    slowest = max(seconds / steps for _, steps, seconds in rows)
    lines = [
        "# What a step of the work limit costs (`bench/bench_work.py`)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}. Fastest of 3 runs each, module "
        "parsed.",
        "",
        "| program | steps | time (s) | ns per step |",
        "|---|---|---|---|",
        *(
            f"| {title} | {steps:.3g} | {seconds:.2f} | {1e9 * seconds / steps:.2f} |"
            for title, steps, seconds in rows
        ),
        "",
        f"The default limit, {DEFAULT_WORK_LIMIT:.0e} steps, stops a run after about "
        f"{DEFAULT_WORK_LIMIT * slowest / 60:.0f} minutes of the slowest kind of step above "
        "(less for the others).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        (BENCH / "RESULTS_work.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
