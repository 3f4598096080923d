"""Interpreter benchmark (DESIGN §6, issue 3 "Speed"): `convcanon run` vs XLA CPU, same module.

The module is the flax ResNet-50 export (batch 1) in bench/models/ (or examples/small_cnn if it is
missing). Both engines get the same random inputs (1-D parameters such as batch-norm scales and
variances in [0.5, 1.5], everything else N(0, 0.1^2)), and the results are compared.

Two numbers:
- steady state: one forward pass, module already parsed (ours) / compiled (XLA). The two are
  timed alternately in one process so machine noise hits both; ratio = median of paired ratios.
- end to end: `convcanon run FILE --inputs in.npz` as a subprocess (start-up, parse, run, write)
  vs XLA compile + run in this process.

Run: python bench/bench_run.py [--reps 7] [--model PATH] [--no-write]
Writes bench/RESULTS_run.md (markdown, also printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESNET = BENCH / "models" / "resnet50.stablehlo.mlir"
FALLBACK = REPO / "examples" / "small_cnn.stablehlo.mlir"
TARGET = 5.0


def random_inputs(text: str, filename: str, seed: int = 0) -> list[np.ndarray]:
    from convcanon.hlo.context import parse_module
    from convcanon.reference.hlo_interp import Interpreter, normalize, tensor_type

    interp = Interpreter(parse_module(text, filename), filename)
    rng = np.random.default_rng(seed)
    inputs = []
    for arg in interp.functions["main"].regions[0].blocks[0].arguments:
        tt = tensor_type(arg.type)
        if len(tt.shape) == 1:
            value = rng.uniform(0.5, 1.5, tt.shape)
        else:
            value = rng.standard_normal(tt.shape) * 0.1
        inputs.append(normalize(value, tt))
    return inputs


def main() -> int:
    parser = argparse.ArgumentParser(description="convcanon run vs XLA CPU")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--model", type=Path, default=RESNET if RESNET.exists() else FALLBACK)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    import jax

    from convcanon.hlo.context import parse_module
    from convcanon.reference.hlo_interp import Env, Interpreter
    from convcanon.reference.kernels.blas import blas_threads
    from convcanon.verify.xla_engine import _cpu_client, compile_stablehlo_text

    text = args.model.read_text()
    name = args.model.name
    inputs = random_inputs(text, name)

    # ours: parse once, then forward passes
    t0 = time.perf_counter()
    module = parse_module(text, name)
    parse_s = time.perf_counter() - t0
    interp = Interpreter(module, name, env=Env())
    convs = str(module).count("stablehlo.convolution")

    # XLA: compile once, then executions
    _, device = _cpu_client()
    t0 = time.perf_counter()
    executable = compile_stablehlo_text(text)
    compile_s = time.perf_counter() - t0
    buffers = [jax.device_put(x, device) for x in inputs]

    def ours_once() -> tuple[float, np.ndarray]:
        start = time.perf_counter()
        with blas_threads(), np.errstate(all="ignore"):
            result = interp.call("main", inputs)[0]
        return time.perf_counter() - start, result

    def xla_once() -> tuple[float, np.ndarray]:
        start = time.perf_counter()
        out = executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
        result = np.asarray(out[0][0])
        return time.perf_counter() - start, result

    ours_once()  # warm-up (first-touch allocations, thread pools)
    xla_once()
    ours_t, xla_t, ratios = [], [], []
    ours_out = xla_out = np.zeros(())
    for _ in range(args.reps):
        a, ours_out = ours_once()
        b, xla_out = xla_once()
        ours_t.append(a)
        xla_t.append(b)
        ratios.append(a / b)
    scale = float(np.abs(xla_out).max())
    rel_err = float(np.abs(ours_out.astype(np.float64) - xla_out).max()) / max(scale, 1e-30)

    # end to end: the CLI as a user runs it
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "in.npz"
        np.savez(npz, **{f"arg{i}": x for i, x in enumerate(inputs)})  # pyright: ignore[reportArgumentType]
        cli_t = []
        for _ in range(max(1, args.reps // 3)):
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "convcanon.cli",
                    "run",
                    str(args.model),
                    "--inputs",
                    str(npz),
                    "--output",
                    str(Path(tmp) / "out.npz"),
                ],
                check=True,
                capture_output=True,
            )
            cli_t.append(time.perf_counter() - start)
    xla_e2e = compile_s + statistics.median(xla_t)
    cli_s = statistics.median(cli_t)

    ratio = statistics.median(ratios)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [
        "# `convcanon run` vs XLA CPU (interpreter speed)",
        "",
        f"Module: `{args.model.relative_to(REPO)}` ({convs} convolutions), batch 1, f32, random "
        "inputs. Generated by `python bench/bench_run.py --reps "
        f"{args.reps}` on: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at the end; Python {platform.python_version()}, "
        f"numpy {np.__version__}, jax {jax.__version__}.",
        "",
        "| measure | convcanon run (s) | XLA CPU (s) | ratio | target | met |",
        "|---|---:|---:|---:|---|---|",
        f"| forward, steady state (median of {args.reps}, paired) | "
        f"{statistics.median(ours_t):.3f} | {statistics.median(xla_t):.4f} | **{ratio:.2f}x** | "
        f"<= {TARGET:.0f}x | {'yes' if ratio <= TARGET else '**no**'} |",
        f"| end to end (CLI process incl. start-up, parse, npz I/O / XLA compile + run) | "
        f"{cli_s:.3f} | {xla_e2e:.3f} | {cli_s / xla_e2e:.2f}x"
        " | | |",
        "",
        f"Parse (ours): {parse_s:.3f} s; XLA compile: {compile_s:.3f} s. "
        f"Paired ratios: {', '.join(f'{r:.2f}' for r in ratios)}.",
        f"Agreement: max |ours - XLA| / max |XLA| = {rel_err:.2e}.",
        "",
        "Notes: convolutions run as im2col + one OpenBLAS GEMM per conv (group). The interpreter "
        "uses one OpenBLAS thread unless `OPENBLAS_NUM_THREADS` is set: with OpenBLAS's default "
        "2 threads the GEMMs ran ~10x slower on this shared, oversubscribed 2-core machine "
        "(spinning worker threads), while XLA's own thread pool uses both cores.",
    ]
    report = "\n".join(rows) + "\n"
    print(report)
    if not args.no_write:
        (BENCH / "RESULTS_run.md").write_text(report)
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
