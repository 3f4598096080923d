"""Half-B parse cost: `convcanon run`, `convcanon-opt -p migraphx-to-tosa` and `convcanon verify
-p migraphx-to-tosa` on a chain of N `migraphx.relu` ops on `!migraphx.shaped<4xf32, 1>`.

The values are 4 floats, so the time is parsing, verifying and the per-op bookkeeping, not the
kernels. Each command runs as a subprocess with PYTHONPATH at each `--version LABEL=SRC`'s `src`
(e.g. a `git archive` of the branch point), in turn, `--reps` rounds; the table keeps the fastest
wall time and the CPU time (user+sys of the child) of that run.

Run: python bench/bench_migraphx_parse.py --version before=/tmp/base/src --version after=src
Writes bench/RESULTS_migraphx_parse.md (markdown, also printed) unless --no-write.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"
KEPT_MARKER = "<!-- kept when the table above is regenerated -->"
TYPE = "<4xf32, 1>"

# argv after the script: `run` and `verify` are `convcanon`'s, `opt` is `convcanon-opt`
COMMANDS: dict[str, tuple[str, list[str]]] = {
    "run": ("main", ["run", "{file}"]),
    "opt -p migraphx-to-tosa": (
        "opt_main",
        ["{file}", "-p", "migraphx-to-tosa", "-o", "/dev/null"],
    ),
    "verify -p migraphx-to-tosa --trials 1": (
        "main",
        ["verify", "{file}", "-p", "migraphx-to-tosa", "--trials", "1"],
    ),
}


def relu_chain(size: int) -> str:
    """@main: `size` relus in a chain on one shaped argument."""
    body = "".join(f"  %{i + 1} = migraphx.relu %{i} : {TYPE} -> {TYPE}\n" for i in range(size))
    shaped = f"!migraphx.shaped{TYPE}"
    return f"func.func @main(%0: {shaped}) -> {shaped} {{\n{body}  return %{size} : {shaped}\n}}\n"


def time_command(src: str, entry: str, argv: list[str]) -> tuple[float, float]:
    """(wall, child CPU) seconds of one command with `src` first on the path."""
    # as the console scripts call them: no argv (convcanon-opt then ends the process itself)
    code = f"import sys; from convcanon.cli import {entry}; sys.exit({entry}())"
    env = {**os.environ, "PYTHONPATH": src}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, stdout=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv} with PYTHONPATH={src} exited {done.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def environment(reps: int) -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs), load average "
        f"{os.getloadavg()[0]:.2f} at the start; Python {platform.python_version()}; fastest of "
        f"{reps}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--version", action="append", metavar="LABEL=SRC", required=True)
    parser.add_argument("--commands", nargs="*", default=list(COMMANDS), choices=list(COMMANDS))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    versions = [tuple(v.split("=", 1)) for v in args.version]
    OUT.mkdir(exist_ok=True)
    module = OUT / f"relu_chain_{args.size}.mlir"
    module.write_text(relu_chain(args.size))
    header = environment(args.reps)
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for _ in range(args.reps):
        for command in args.commands:
            entry, argv = COMMANDS[command]
            for label, src in versions:
                timed = time_command(src, entry, [a.format(file=module) for a in argv])
                key = (command, label)
                best[key] = min(best.get(key, timed), timed)
    lines = [
        f"# Half-B parse cost (`python bench/bench_migraphx_parse.py --size {args.size}`)",
        "",
        f"Input: @main, a chain of {args.size} `migraphx.relu` on `!migraphx.shaped{TYPE}`.",
        f"Environment: {header}.",
        "",
        "| command | " + " | ".join(f"{label} wall / CPU (s)" for label, _ in versions) + " |",
        "|---|" + "---:|" * len(versions),
    ]
    for command in args.commands:
        cells = [
            f"{best[command, label][0]:.2f} / {best[command, label][1]:.2f}"
            for label, _ in versions
        ]
        lines.append(f"| `{command}` | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    if not args.no_write:
        results = BENCH / "RESULTS_migraphx_parse.md"
        kept = ""
        if results.exists() and KEPT_MARKER in results.read_text():
            kept = "\n" + KEPT_MARKER + results.read_text().split(KEPT_MARKER, 1)[1]
        results.write_text(table + kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
