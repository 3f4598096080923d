"""Import benchmark: `convcanon import-migraphx` of a printed MIGraphX program of N instructions.

The program is an elementwise chain (one parameter, N - 2 unary ops cycling exp/relu/neg/abs, one
@return), the shape of a long fused graph as `program::print` writes it. Each repetition runs the
CLI as a subprocess, end to end (start-up, read, import, verify, print, write), and records wall
and CPU (user+sys of the child) time. Target: 10^5 instructions in < 5 s.

Run: python bench/bench_import.py [--size 100000] [--reps 5] [--no-write]
Writes bench/RESULTS_import.md (markdown, also printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"
TARGET_SECONDS = 5.0
KEPT_MARKER = "<!-- kept when the table above is regenerated -->"
UNARY = ("exp", "relu", "neg", "abs")


def chain_program(size: int) -> str:
    """`size` instructions: a parameter, `size - 2` unary ops, a @return."""
    lines = ["x = @param:x -> float_type, {4, 3}, {3, 1}"]
    previous = "x"
    for k in range(1, size - 1):
        lines.append(f"@{k} = {UNARY[k % 4]}({previous}) -> float_type, {{4, 3}}, {{3, 1}}")
        previous = f"@{k}"
    lines.append(f"@{size - 1} = @return({previous})")
    return "\n".join(lines) + "\n"


def time_import(program: Path, output: Path) -> tuple[float, float]:
    """(wall, child CPU) seconds of one `convcanon import-migraphx` run."""
    binary = Path(sys.executable).with_name("convcanon")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(binary), "import-migraphx", str(program), "-o", str(output)], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    program = OUT / f"migraphx_chain_{args.size}.txt"
    program.write_text(chain_program(args.size))
    output = OUT / f"migraphx_chain_{args.size}.mlir"
    runs = [time_import(program, output) for _ in range(args.reps)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    verdict = "met" if wall < TARGET_SECONDS else "not met"
    report = "\n".join(
        [
            "# Import benchmark (`python bench/bench_import.py`)",
            "",
            f"Environment: {platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {args.reps} reps.",
            "",
            "| input | wall (median) | CPU (median) | target |",
            "|---|---|---|---|",
            f"| elementwise chain of {args.size} instructions ({program.stat().st_size // 1024} KB)"
            f" | {wall:.2f} s | {cpu:.2f} s | < {TARGET_SECONDS:.0f} s: {verdict} |",
            "",
        ]
    )
    print(report)
    if not args.no_write:
        out = BENCH / "RESULTS_import.md"
        old = out.read_text() if out.exists() else ""
        if KEPT_MARKER in old:  # keep the hand-written sections below the marker
            report += "\n" + old[old.index(KEPT_MARKER) :]
        out.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
