"""Compile-time benchmark: convcanon-opt vs iree-opt, end to end.

For each input (the flax ResNet-50 export and synthetic modules of 1k/10k/100k ops of two kinds:
resnet-mix = ResNet-50 repeated, which the 100k target is judged on; conv-dense = a conv stress
test, see synthetic.py) we run, in one process and alternating so that noise hits both equally:
  convcanon-opt -p PIPELINE FILE -o /dev/null     (process start, parse, pass, print)
  iree-opt FILE -o /dev/null                      (C++ MLIR parsing and printing the same file)
  iree-opt OUR-OUTPUT -o /dev/null                (the same for our output: the fair floor, since
                                                   the rewrite's output can be 2.5x its input)
and report medians and the median of the paired ratios. A second, in-process run splits
convcanon-opt's time into start-up (imports), parse, pass and print, so a miss says where to look.

The bytecode path is measured beside it, on the same input as MLIR bytecode (written once by
iree-opt --emit-bytecode, a producer other than us), in the same alternation:
  convcanon-opt -p PIPELINE FILE.mlirbc --emit-bytecode -o /dev/null
  convcanon-opt -p '' FILE.mlirbc --emit-bytecode -o /dev/null   (our own read + write)
  iree-opt FILE.mlirbc --emit-bytecode -o /dev/null              (C++ MLIR reading and writing it)

Every Python run reads cached bytecode, as an installed package does: the runs get their own
bytecode cache in bench/out/pycache (PYTHONPYCACHEPREFIX), filled by the untimed first runs, also
when the caller's environment sets PYTHONDONTWRITEBYTECODE (which would otherwise make each run
compile every convcanon module from source, ~25 ms of a ResNet-50 job).

Run: python bench/bench_opt.py [--reps 5] [--sizes 1000 10000 100000]
     [--kinds resnet-mix conv-dense] [--no-write]
Writes bench/RESULTS_opt.md (a markdown table, also printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
RESNET = BENCH / "models" / "resnet50.stablehlo.mlir"
PIPELINE = "stablehlo-canonicalize-conv{gate=general}"
# The 100k target is judged on ResNet-50's op mix scaled up; conv-dense is a stress row (4x the
# convs of ResNet-50, so the rewrite's output, not parsing, sets its cost).
# Issue 29's goals (end to end vs iree-opt on the input); earlier ones were 10x and 2x.
TARGETS = {"resnet50": 4.0, "resnet-mix-100k": 1.5}
KINDS = {"resnet-mix": "resnet_mix", "conv-dense": "synthetic"}  # kind -> file name stem
ANALYSIS_MARKER = "<!-- analysis: kept when the tables above are regenerated -->"

sys.path.insert(0, str(BENCH))
from synthetic import write_synthetic  # noqa: E402

# The environment of every timed command (see the module docstring).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")


def iree_opt() -> str:
    """The iree-opt binary shipped in iree-base-compiler (the C++ MLIR baseline)."""
    from iree.compiler.tools import binaries

    path = binaries.find_tool("iree-opt")
    if path is None:
        sys.exit("bench_opt: iree-opt not found; install iree-base-compiler")
    return str(path)


def convcanon_opt() -> list[str]:
    """The console script next to this interpreter (same venv), else the one on PATH."""
    local = Path(sys.executable).with_name("convcanon-opt")
    found = str(local) if local.exists() else shutil.which("convcanon-opt")
    if found is None:
        sys.exit("bench_opt: convcanon-opt not found; pip install -e . first")
    return [found]


def resnet_file() -> Path:
    """The committed export, or a fresh one in bench/out/ if it is missing."""
    if RESNET.exists():
        return RESNET
    out = OUT / RESNET.name
    if not out.exists():
        subprocess.run(
            [sys.executable, str(REPO / "tools" / "export_resnet50.py"), str(out)], check=True
        )
    return out


def count_ops(path: Path) -> tuple[int, int]:
    """(ops in function bodies, convolutions) by a line scan of the pretty form: `%x = ...` lines
    plus returns (module and func.func ops are not counted; a synthetic N-op module gives N)."""
    ops = convs = 0
    with path.open() as f:
        for line in f:
            s = line.lstrip()
            if s.startswith("%") or s.startswith("return") or s.startswith("stablehlo.return"):
                ops += 1
                convs += "stablehlo.convolution" in s
    return ops, convs


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU time is less disturbed by other jobs on the machine."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench_opt: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, _children_cpu() - cpu


@dataclass
class Row:
    name: str
    ops: int
    convs: int
    iree: list[float]  # wall seconds per repetition
    ours: list[float]
    ours_noop: list[float]
    iree_cpu: list[float]  # CPU seconds (user + sys) per repetition
    ours_cpu: list[float]
    phases: dict[str, float]
    stats: str
    iree_output: list[float]  # iree-opt parsing and printing our output, wall seconds
    output_ops: int
    # the bytecode path (bytecode in, bytecode out), wall seconds
    iree_bc: list[float] = field(default_factory=list)
    ours_bc: list[float] = field(default_factory=list)
    ours_noop_bc: list[float] = field(default_factory=list)

    @property
    def output_ratios(self) -> list[float]:
        return [o / i for o, i in zip(self.ours, self.iree_output, strict=True)]

    @property
    def ratios(self) -> list[float]:
        return [o / i for o, i in zip(self.ours, self.iree, strict=True)]

    @property
    def cpu_ratios(self) -> list[float]:
        return [o / i for o, i in zip(self.ours_cpu, self.iree_cpu, strict=True)]


def pass_stats(path: Path, pipeline: str) -> str:
    """One untimed run with --stats, checked; also warms the page cache."""
    cmd = [*convcanon_opt(), "-p", pipeline, str(path), "-o", os.devnull, "--stats"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        sys.exit(f"bench_opt: {' '.join(cmd)} failed:\n{proc.stderr}")
    # MLIR's report: `  (S)       53 convs-seen`; names may contain spaces (skip reasons)
    counters = re.findall(r"^\s+\(S\)\s+(\d+)\s+(.+)$", proc.stderr, re.M)
    return ", ".join(f"{name}={n}" for n, name in counters)


_PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
from convcanon.driver import FRAMEWORKS, run_pipeline
from convcanon.pipeline import parse_pipeline
adapter = FRAMEWORKS["hlo"]
adapter.parse_text("module {}", "-")  # import the parser and build one context
t1 = time.perf_counter()
path, pipeline = sys.argv[1], sys.argv[2]
text = open(path).read()
passes = parse_pipeline(pipeline)
if passes:
    passes[0].info.load()
t2 = time.perf_counter()
with adapter.job():  # as convcanon-opt runs it (driver.transform_text)
    module = adapter.parse_text(text, path)
    t3 = time.perf_counter()
    run_pipeline(module, passes)
    t4 = time.perf_counter()
    out = adapter.print_module(module)
    t5 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "read+load pass": t2 - t1, "parse+verify": t3 - t2,
                  "pass": t4 - t3, "print": t5 - t4, "out_bytes": len(out)}))
"""


def phases(path: Path, pipeline: str, reps: int) -> dict[str, float]:
    """Median in-process time of each phase (a separate interpreter per repetition)."""
    runs = []
    for _ in range(reps):
        proc = subprocess.run(
            [sys.executable, "-c", _PHASES, str(path), pipeline],
            capture_output=True,
            text=True,
            check=True,
            env=ENV,
        )
        runs.append(json.loads(proc.stdout))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def our_output(path: Path, pipeline: str) -> Path:
    """Our output for `path`, written once (untimed) next to the benchmark inputs."""
    out = OUT / f"{path.stem}.canonical.mlir"
    OUT.mkdir(exist_ok=True)
    subprocess.run(
        [*convcanon_opt(), "-p", pipeline, str(path), "-o", str(out)], check=True, env=ENV
    )
    return out


def as_bytecode(path: Path) -> Path:
    """`path` as MLIR bytecode, written once (untimed) by iree-opt: a producer other than us."""
    out = OUT / f"{path.stem}.mlirbc"
    OUT.mkdir(exist_ok=True)
    subprocess.run([iree_opt(), str(path), "--emit-bytecode", "-o", str(out)], check=True)
    return out


def measure(name: str, path: Path, pipeline: str, reps: int) -> Row:
    ops, convs = count_ops(path)
    stats = pass_stats(path, pipeline)
    output = our_output(path, pipeline)
    bytecode = str(as_bytecode(path))
    iree = [iree_opt(), str(path), "-o", os.devnull]
    iree_output = [iree_opt(), str(output), "-o", os.devnull]
    ours = [*convcanon_opt(), "-p", pipeline, str(path), "-o", os.devnull]
    noop = [*convcanon_opt(), "-p", "", str(path), "-o", os.devnull]
    emit = ["--emit-bytecode", "-o", os.devnull]
    iree_bc = [iree_opt(), bytecode, *emit]
    ours_bc = [*convcanon_opt(), "-p", pipeline, bytecode, *emit]
    noop_bc = [*convcanon_opt(), "-p", "", bytecode, *emit]
    timed(iree)  # warm-up
    timed(ours_bc)  # warm-up: the child that reads bytecode fills its bytecode cache too
    row = Row(name, ops, convs, [], [], [], [], [], {}, stats, [], count_ops(output)[0])
    for rep in range(reps):
        order = [
            (iree, row.iree, row.iree_cpu),
            (ours, row.ours, row.ours_cpu),
            (noop, row.ours_noop, []),
            (iree_output, row.iree_output, []),
            (iree_bc, row.iree_bc, []),
            (ours_bc, row.ours_bc, []),
            (noop_bc, row.ours_noop_bc, []),
        ]
        if rep % 2:
            order.reverse()
        for cmd, wall_sink, cpu_sink in order:
            wall, cpu = timed(cmd)
            wall_sink.append(wall)
            cpu_sink.append(cpu)
    row.phases = phases(path, pipeline, max(3, reps // 2))
    print(f"  {name}: {format_row(row)}", file=sys.stderr)
    return row


def format_row(row: Row) -> str:
    med = statistics.median
    target = TARGETS.get(row.name)
    ratio = med(row.ratios)
    verdict = "" if target is None else ("yes" if ratio <= target else "**no**")
    return (
        f"| {row.name} | {row.ops:,} | {row.convs:,} | {med(row.iree):.3f} | {med(row.ours):.3f} |"
        f" {med(row.ours_noop):.3f} | **{ratio:.2f}x** | {med(row.cpu_ratios):.2f}x |"
        f" {'' if target is None else f'<= {target:g}x'} | {verdict} |"
        f" {row.output_ops:,} | {med(row.iree_output):.3f} | **{med(row.output_ratios):.2f}x** |"
    )


def bytecode_row(row: Row) -> str:
    """The bytecode path beside the text path: medians, and paired ratios to iree-opt's bytecode
    round and to our own text path."""
    med = statistics.median
    vs_iree = [o / i for o, i in zip(row.ours_bc, row.iree_bc, strict=True)]
    vs_text = [b / t for b, t in zip(row.ours_bc, row.ours, strict=True)]
    return (
        f"| {row.name} | {med(row.iree_bc):.3f} | {med(row.ours_bc):.3f} |"
        f" {med(row.ours_noop_bc):.3f} | **{med(vs_iree):.2f}x** | {med(row.ours):.3f} |"
        f" {med(vs_text):.2f}x |"
    )


def phase_row(row: Row) -> str:
    p = row.phases
    per_op = 1e6 / max(row.ops, 1)
    return (
        f"| {row.name} | {p['imports']:.3f} | {p['read+load pass']:.3f} | {p['parse+verify']:.3f}"
        f" ({p['parse+verify'] * per_op:.1f} us/op) | {p['pass']:.3f}"
        f" ({p['pass'] * per_op:.1f} us/op) | {p['print']:.3f} ({p['print'] * per_op:.1f} us/op) |"
    )


def environment() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "?"

    cpu = "?"
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if dirty:
        head += " + uncommitted changes in src/ (the editable install runs the working tree)"
    loadavg = Path("/proc/loadavg")
    load = " ".join(loadavg.read_text().split()[:3]) if loadavg.exists() else "?"
    return (
        f"{cpu}, {os.cpu_count()} cores (load average {load} at the end); "
        f"Python {platform.python_version()}, jaxlib "
        f"{ver('jaxlib')}, iree-base-compiler {ver('iree-base-compiler')}; convcanon at {head}"
    )


def report(rows: list[Row], pipeline: str, reps: int) -> str:
    lines = [
        "# convcanon-opt compile time vs iree-opt",
        "",
        f"`convcanon-opt -p '{pipeline}' FILE -o /dev/null` vs `iree-opt FILE -o /dev/null`,",
        f"end to end (process start included), alternating in one run, median of {reps}.",
        "Ratio = median of the paired (same repetition) ratios; the target is on the wall ratio;",
        "the CPU (user+sys) ratio is less disturbed by other jobs on the machine.",
        "`-p ''` = parse + print only. Python runs read cached bytecode (bench/out/pycache), as an"
        " installed package does.",
        f"Generated by `python bench/bench_opt.py --reps {reps}` on: {environment()}.",
        "",
        "Output floor = `iree-opt OUR-OUTPUT -o /dev/null`; its ratio = convcanon-opt end to end /"
        " that (paired).",
        "",
        "| input | ops in bodies | convs | iree-opt (s) | convcanon-opt (s) |"
        " convcanon-opt -p '' (s) | ratio (wall) | ratio (CPU) | target | met |"
        " ops in our output | iree-opt on our output (s) | ratio vs output floor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|",
        *(format_row(r) for r in rows),
        "",
        "Pass statistics: " + "; ".join(f"{r.name}: {r.stats or 'none'}" for r in rows),
        "",
        "## Bytecode in, bytecode out",
        "",
        "The same inputs as MLIR bytecode (written by `iree-opt --emit-bytecode`), `convcanon-opt"
        f" -p '{pipeline}' FILE.mlirbc --emit-bytecode -o /dev/null` vs `iree-opt FILE.mlirbc"
        " --emit-bytecode -o /dev/null`, in the same alternation. Our bytecode reader runs in a"
        " child process (jaxlib's reader aborts on some damaged bytecode), which reads the"
        " bytecode and hands the module back as text.",
        "",
        "| input | iree-opt bc -> bc (s) | convcanon-opt bc -> bc (s) | convcanon-opt -p '' bc ->"
        " bc (s) | ratio vs iree-opt | convcanon-opt text -> text (s) | bytecode / text path |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(bytecode_row(r) for r in rows),
        "",
        "## Where convcanon-opt's time goes (in-process, median)",
        "",
        "| input | start-up imports (s) | read + pass imports (s) | parse+verify (s) | pass (s) |"
        " print (s) |",
        "|---|---:|---:|---:|---:|---:|",
        *(phase_row(r) for r in rows),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="convcanon-opt vs iree-opt compile time")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--pipeline", default=PIPELINE)
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--no-resnet", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS_opt.md")
    args = parser.parse_args(argv)

    inputs: list[tuple[str, Path]] = []
    if not args.no_resnet:
        inputs.append(("resnet50", resnet_file()))
    for kind in args.kinds:
        for n in args.sizes:
            label = f"{kind}-{n // 1000}k" if n % 1000 == 0 else f"{kind}-{n}"
            path = OUT / f"{KINDS[kind]}_{n}.mlir"
            inputs.append((label, write_synthetic(n, path, kind=kind)))
    rows = [measure(name, path, args.pipeline, args.reps) for name, path in inputs]
    text = report(rows, args.pipeline, args.reps)
    print(text)
    if not args.no_write:
        old = args.out.read_text() if args.out.exists() else ""
        if ANALYSIS_MARKER in old:  # keep the hand-written profile analysis below the marker
            text += "\n" + old[old.index(ANALYSIS_MARKER) :]
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
