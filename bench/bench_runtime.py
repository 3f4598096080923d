"""XLA CPU run time of the canonical program / the original, paired (issue 19).

Each program (bench/runtime/models.py: ResNet-18/50 NHWC and NCHW, ViT patch embeddings, ConvNeXt,
wav2vec2's feature encoder, a U-Net decoder, HiFi-GAN, a training step) is written in JAX, lowered
with `jax.jit(...).lower(...).as_text()`, canonicalized in-process by `convcanon.canonicalize_conv(
text, "stablehlo", gate="general", **options)` once per mode, and every module is compiled once on
XLA CPU. Then N paired samples: in each, every module runs back to back for at least
`--min-sample-ms` (block_until_ready after each run), in an order that alternates from sample to
sample; a sample's ratio is canonical / original time per run, and a program's number is the
median of its samples' ratios. Programs are summarized by the geomean of those medians.

`--per-conv PROGRAM ...` times each distinct conv of each PROGRAM alone instead (the conv with its
lhs as an argument and its kernel as an argument or, where the program computes it from constants,
a constant; against its canonical replacement alone): which conv costs what, in every mode, and
what that adds to the program's conv time.

Run: python bench/bench_runtime.py [--quick] [--programs NAME ...] [--option key=value ...]
       [--modes MODE ...] [--per-conv PROGRAM ...] [--samples N] [--no-write]
Writes bench/RESULTS_runtime.md, or bench/RESULTS_runtime_convs.md with --per-conv (or --out).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
PASS = "stablehlo-canonicalize-conv"
ANALYSIS_MARKER = "<!-- analysis: kept when the tables above are regenerated -->"

from bench_flops import _convs  # noqa: E402
from bench_opt import environment  # noqa: E402
from runtime.models import PROGRAMS, export  # noqa: E402
from runtime.resources import inline_dense_resources  # noqa: E402


@dataclass(frozen=True)
class Mode:
    """One option set: its label as given and the pass options it resolves to."""

    label: str
    options: dict[str, Any]


def parse_modes(base: Sequence[str], modes: Sequence[str]) -> list[Mode]:
    """Resolve `key=value` words (space- or comma-separated) with the pass's own option parser,
    so an unknown option or a bad value stops the bench before anything is built."""
    from convcanon.pipeline import parse_pipeline

    found = []
    for label in modes or ["default"]:
        words = [] if label == "default" else re.split(r"[\s,]+", label.strip())
        pairs = ["gate=general", *base, *words]
        for pair in pairs:
            if "=" not in pair:
                raise ValueError(f"option {pair!r} is not key=value")
        (invocation,) = parse_pipeline(f"{PASS}{{{' '.join(pairs)}}}")
        found.append(Mode(label, dict(invocation.options)))
    return found


def loadavg() -> str:
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "?"


def macs(text: str) -> tuple[int, int, int]:
    """(convs, dense multiply-adds, lattice multiply-adds) of the module's convs, from the IR."""
    from convcanon.hlo.io import parse_file_text
    from convcanon.hlo.phase_plan import lattice_macs

    convs = _convs(parse_file_text(text, "<bench>").module)
    return len(convs), sum(p.macs for p in convs), sum(lattice_macs(p) for p in convs)


class Compiled:
    """A module compiled once on XLA CPU (dense_resource weights inlined: XLA refuses them)."""

    def __init__(self, text: str) -> None:
        from convcanon.verify.xla_engine import _cpu_client

        backend, self.device = _cpu_client()
        self.executable = backend.compile_and_load(inline_dense_resources(text), [self.device])

    def run(self, buffers: list[Any]) -> list[Any]:
        out = self.executable.execute_sharded(buffers).disassemble_into_single_device_arrays()
        for arrays in out:
            arrays[0].block_until_ready()
        return [arrays[0] for arrays in out]


def per_run_seconds(module: Compiled, buffers: list[Any], min_seconds: float) -> tuple[float, int]:
    """Back-to-back runs for at least `min_seconds`: (seconds per run, runs)."""
    runs, start = 0, time.perf_counter()
    while True:
        module.run(buffers)
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / runs, runs


@dataclass
class Timing:
    """Paired samples: seconds per run of each module (index 0 the original) in every sample."""

    samples: list[list[float]] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)  # runs per sample of the original

    def ratios(self, index: int) -> list[float]:
        return [s[index] / s[0] for s in self.samples]

    def median_ratio(self, index: int) -> float:
        return statistics.median(self.ratios(index))

    def original_ms(self) -> float:
        return 1000 * statistics.median(s[0] for s in self.samples)


def paired(modules: list[Compiled], inputs: list[np.ndarray], samples: int, min_s: float) -> Timing:
    buffers = _device_inputs(modules[0], inputs)
    return paired_on(modules, [buffers] * len(modules), samples, min_s)


def paired_on(
    modules: list[Compiled], buffers: list[list[Any]], samples: int, min_s: float
) -> Timing:
    """Paired samples of `modules`, each run on its own device buffers."""
    for module, args in zip(modules, buffers, strict=True):  # warm up: allocations and caches
        per_run_seconds(module, args, min_s / 4)
    timing = Timing()
    for i in range(samples):
        order = list(range(len(modules)))
        if i % 2:
            order.reverse()
        times = [0.0] * len(modules)
        for index in order:
            times[index], runs = per_run_seconds(modules[index], buffers[index], min_s)
            if index == 0:
                timing.runs.append(runs)
        timing.samples.append(times)
    return timing


def max_relative_error(expected: list[Any], actual: list[Any]) -> float:
    worst = 0.0
    for want, got in zip(expected, actual, strict=True):
        want64, got64 = np.asarray(want, np.float64), np.asarray(got, np.float64)
        scale = float(np.max(np.abs(want64))) if want64.size else 0.0
        if want64.size:
            worst = max(worst, float(np.max(np.abs(want64 - got64))) / max(scale, 1e-30))
    return worst


@dataclass
class ModeResult:
    mode: Mode
    convs_after: int
    macs_after: int
    ratio: float
    ratio_range: tuple[float, float]
    error: float
    left: int  # convs the gate refused (not canonical, not rewritten)


@dataclass
class ProgramResult:
    name: str
    what: str
    weights: str
    convs_before: int
    dense_before: int
    lattice_before: int
    original_ms: float
    runs: int
    load: str
    modes: list[ModeResult]


@dataclass(frozen=True)
class Source:
    """A program as the bench gets it: StableHLO text and @main's inputs, made on demand."""

    name: str
    what: str
    weights: str
    load: Callable[[], tuple[str, list[np.ndarray]]]


def jax_sources(quick: bool) -> dict[str, Source]:
    return {
        name: Source(name, p.what, p.weights, lambda p=p: export(p, quick))
        for name, p in PROGRAMS.items()
    }


def signature_inputs(text: str, seed: int = 0) -> list[np.ndarray]:
    """N(0, 0.1^2) f32 inputs for @main's arguments (the PyTorch exports take only data)."""
    match = re.search(r"func\.func (?:public )?@main\((.*?)\) ->", text, re.S)
    if match is None:
        raise ValueError("no func.func @main")
    rng = np.random.default_rng(seed)
    shapes = re.findall(r"tensor<([\dx]*)xf32>", match[1])
    return [
        (rng.standard_normal(tuple(int(d) for d in s.split("x"))) * 0.1).astype(np.float32)
        for s in shapes
    ]


def torch_sources(python: str | None, directory: Path, quick: bool) -> dict[str, Source]:
    """The PyTorch programs (runtime/torch_programs.py), exported by torch-mlir with `python`
    (an environment with torch and torch-mlir) into `directory`, or already there."""
    if python:
        script = BENCH / "runtime" / "torch_programs.py"
        command = [python, str(script), str(directory)] + (["--quick"] if quick else [])
        subprocess.run(command, check=True)
    found = {}
    for path in sorted(directory.glob("torch-*.mlir")):
        first = path.open().readline()
        what = first[3:].strip() if first.startswith("// ") else path.name

        def load(path: Path = path) -> tuple[str, list[np.ndarray]]:
            text = path.read_text()
            return text, signature_inputs(text)

        found[path.stem] = Source(path.stem, f"PyTorch (torch-mlir) {what}", "dense_resource", load)
    return found


def measure(source: Source, modes: list[Mode], samples: int, min_s: float) -> ProgramResult:
    import convcanon

    load_start = loadavg()
    original, inputs = source.load()
    convs_before, dense_before, lattice_before = macs(original)
    canonical = [convcanon.canonicalize_conv(original, "stablehlo", **m.options) for m in modes]
    texts = [c.text for c in canonical]
    counts = [macs(t) for t in texts]
    compiled = [Compiled(t) for t in [original, *texts]]
    del texts
    buffers = _device_inputs(compiled[0], inputs)
    outputs = [module.run(buffers) for module in compiled]
    timing = paired(compiled, inputs, samples, min_s)
    results = []
    for index, (mode, (convs_after, macs_after, _)) in enumerate(zip(modes, counts, strict=True)):
        ratios = timing.ratios(index + 1)
        results.append(
            ModeResult(
                mode,
                convs_after,
                macs_after,
                timing.median_ratio(index + 1),
                (min(ratios), max(ratios)),
                max_relative_error(outputs[0], outputs[index + 1]),
                left_as_is(canonical[index].stats),
            )
        )
    return ProgramResult(
        source.name,
        source.what,
        source.weights,
        convs_before,
        dense_before,
        lattice_before,
        timing.original_ms(),
        int(statistics.median(timing.runs)),
        f"{load_start} -> {loadavg()}",
        results,
    )


def left_as_is(stats: dict[str, int]) -> int:
    """Convs the pass skipped for a reason other than being canonical already."""
    return sum(
        n
        for key, n in stats.items()
        if key.startswith("skipped:") and "already canonical" not in key
    )


def _device_inputs(module: Compiled, inputs: list[np.ndarray]) -> list[Any]:
    import jax

    return [jax.device_put(x, module.device) for x in inputs]


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def program_table(results: list[ProgramResult], modes: list[Mode]) -> list[str]:
    lines = [
        "| program | weights | mode | convs before -> after | dense MACs before / floor |"
        " MACs after / floor | original ms | runs / sample | **canonical / original** |"
        " min-max of samples | max rel. error | load (start -> end) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        for m in r.modes:
            lines.append(
                f"| {r.name} | {r.weights} | {m.mode.label} | {r.convs_before} -> {m.convs_after}"
                + (f" ({m.left} left as is)" if m.left else "")
                + f" | {r.dense_before / r.lattice_before:.3f}"
                f" | {m.macs_after / r.lattice_before:.3f}"
                f" | {r.original_ms:.2f} | {r.runs} | **x{m.ratio:.2f}** |"
                f" {m.ratio_range[0]:.2f}-{m.ratio_range[1]:.2f} | {m.error:.1e} | {r.load} |"
            )
    lines.append("")
    for index, mode in enumerate(modes):
        ratios = [r.modes[index].ratio for r in results]
        worst = max(results, key=lambda r: r.modes[index].ratio)
        lines.append(
            f"- mode `{mode.label}`: geomean **x{geomean(ratios):.2f}** over {len(results)}"
            f" programs, worst x{worst.modes[index].ratio:.2f} ({worst.name})"
        )
    return lines


def describe(mode: Mode) -> str:
    return " ".join(f"{k}={v}" for k, v in mode.options.items())


def header(args: argparse.Namespace, modes: list[Mode], command: str) -> list[str]:
    lines = [
        f"Command: `{command}`",
        "",
        f"Machine: {environment()}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '(unset)')!r}.",
        f"Samples: {args.samples} paired per {'conv' if args.per_conv else 'program'},"
        f" each >= {args.min_sample_ms:g} ms of"
        " back-to-back runs per module (block_until_ready after each), order alternating;",
        "ratio = median over samples of (canonical / original seconds per run).",
        "Floor = lattice multiply-adds of the original (products reading a real input element or",
        "a padding zero; below the dense count only where the original has lhs dilation).",
        "",
        "Modes (the pass options each resolves to):",
        *[f"- `{m.label}`: `{describe(m)}`" for m in modes],
        "",
    ]
    return lines


FOLDABLE = {"stablehlo.constant", "stablehlo.transpose", "stablehlo.reshape", "stablehlo.convert"}


def _is_constant(value: Any) -> bool:
    """True when `value` is computed from constants only (through transposes, reshapes and
    converts): XLA folds such a kernel, and its canonical slices, at compile time."""
    owner = value.owner
    while hasattr(owner, "name") and owner.name in FOLDABLE:
        if owner.name == "stablehlo.constant":
            return True
        owner = owner.operands[0].owner
    return False


def extract_convs(text: str) -> list[tuple[str, int, str]]:
    """Each distinct conv of `text` as its own module: (module text, occurrences, a one-line
    description), in first-seen order. The lhs is an argument; the kernel is an argument too,
    unless the program computes it from constants: then it is a constant of random values, so
    that XLA folds the canonical kernel slices as it does in the program."""
    from jaxlib.mlir import ir

    from convcanon.hlo.io import parse_file_text

    found: dict[str, list[Any]] = {}
    module = parse_file_text(text, "<bench>").module

    def visit(op: Any) -> Any:
        if op.name == "stablehlo.convolution":
            asm = op.get_asm(print_generic_op_form=True)
            body = re.sub(r'^.*?"stablehlo\.convolution"\(.*?\)', "", asm.strip(), count=1)
            types = [str(v.type) for v in op.operands] + [str(op.results[0].type)]
            constant = types[1].endswith("xf32>") and _is_constant(op.operands[1])
            key = f"{constant}{body}"
            if key in found:
                found[key][1] += 1
            else:
                summary = _conv_summary(op, types) + (", constant kernel" if constant else "")
                found[key] = [types, 1, summary, body, constant]
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    out = []
    for types, count, summary, body, constant in found.values():
        lhs, rhs, result = types
        if constant:
            shape = [int(d) for d in rhs[len("tensor<") : rhs.rindex("x")].split("x")]
            values = (np.random.default_rng(1).standard_normal(shape) * 0.1).astype(np.float32)
            kernel = f'  %rhs = stablehlo.constant dense<"0x{values.tobytes().hex()}"> : {rhs}\n'
            head = f"func.func @main(%lhs: {lhs}) -> {result} {{\n{kernel}"
        else:
            head = f"func.func @main(%lhs: {lhs}, %rhs: {rhs}) -> {result} {{\n"
        conv_text = (
            f'{head}  %0 = "stablehlo.convolution"(%lhs, %rhs){body}\n'
            f"  func.return %0 : {result}\n}}\n"
        )
        out.append((conv_text, count, summary))
    return out


def _conv_summary(op: Any, types: list[str]) -> str:
    from convcanon.hlo.params import read_conv_params

    p = read_conv_params(op)
    shape = "x".join(str(d) for d in p.kernel_spatial)
    parts = [f"{shape} kernel", f"stride {list(p.strides)}"]
    if any(lo or hi for lo, hi in p.padding):
        parts.append(f"pad {[list(pair) for pair in p.padding]}")
    if any(d != 1 for d in p.lhs_dilation):
        parts.append(f"lhs_dil {list(p.lhs_dilation)}")
    if any(d != 1 for d in p.rhs_dilation):
        parts.append(f"rhs_dil {list(p.rhs_dilation)}")
    if p.feature_group_count != 1:
        parts.append(f"groups {p.feature_group_count}")
    if p.batch_group_count != 1:
        parts.append(f"batch_groups {p.batch_group_count}")
    short = [re.sub(r"tensor<(.*)>", r"\1", t) for t in types]
    return f"{short[0]} * {short[1]} -> {short[2]}: " + ", ".join(parts)


def per_conv(source: Source, modes: list[Mode], samples: int, min_s: float) -> list[str]:
    import convcanon

    original, _ = source.load()
    rows = []
    totals = [0.0] * (len(modes) + 1)
    for conv_text, count, summary in extract_convs(original):
        texts = [conv_text]
        texts += [
            convcanon.canonicalize_conv(conv_text, "stablehlo", **m.options).text for m in modes
        ]
        _, _, floor = macs(conv_text)
        counts = [macs(t) for t in texts[1:]]
        compiled = [Compiled(t) for t in texts]
        timing = paired(compiled, signature_inputs(conv_text), samples, min_s)
        per_run = [statistics.median(s[i] for s in timing.samples) for i in range(len(texts))]
        for i, t in enumerate(per_run):
            totals[i] += count * t
        cells = [
            f"{c} conv, x{m / floor:.3f} floor, **x{timing.median_ratio(i + 1):.2f}**"
            f" ({1e6 * count * (per_run[i + 1] - per_run[0]):+.0f} us)"
            for i, (c, m, _) in enumerate(counts)
        ]
        rows.append(
            f"| {summary} | {count} | {1e6 * per_run[0]:.0f} | {1e6 * count * per_run[0]:.0f} | "
            + " | ".join(cells)
            + " |"
        )
        print(rows[-1], file=sys.stderr)
    head = (
        "| conv (lhs * rhs -> result) | times in program | original us | x times (us) | "
        + " | ".join(f"`{m.label}`: convs, MACs, canonical / original (x times)" for m in modes)
        + " |"
    )
    total = " | ".join(f"x{t / totals[0]:.2f} of the convs' time" for t in totals[1:])
    return [
        f"### Per conv: {source.name}",
        "",
        f"{source.what}.",
        "",
        head,
        "|---|---:|---:|---:|" + "---:|" * len(modes),
        *rows,
        f"| **all convs, weighted by times in program** | | | {1e6 * totals[0]:.0f} | {total} |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="XLA CPU run time, canonical / original")
    parser.add_argument("--programs", nargs="+", metavar="NAME", help="default: all (see --list)")
    parser.add_argument("--quick", action="store_true", help="small inputs, 3 samples of 20 ms")
    parser.add_argument("--samples", type=int, help="paired samples per program (default 7)")
    parser.add_argument("--min-sample-ms", type=float, help="per module and sample (default 50)")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="pass option, all modes"
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        default=[],
        metavar="MODE",
        help="option sets to compare in one run: 'default' or 'key=value key2=value2'",
    )
    parser.add_argument(
        "--per-conv", nargs="+", metavar="PROGRAM", help="time each conv of PROGRAM alone"
    )
    parser.add_argument(
        "--torch-python",
        metavar="PYTHON",
        help="a python with torch and torch-mlir: export the PyTorch programs with it, add them",
    )
    parser.add_argument(
        "--torch-dir",
        type=Path,
        help="where the PyTorch exports go / are read from (default bench/out/torch[-quick])",
    )
    parser.add_argument("--list", action="store_true", help="list the programs and stop")
    parser.add_argument("--out", type=Path, help="default bench/RESULTS_runtime[_convs].md")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    torch_dir = args.torch_dir or BENCH / "out" / ("torch-quick" if args.quick else "torch")
    sources = jax_sources(args.quick)
    if args.torch_python or args.torch_dir:
        sources |= torch_sources(args.torch_python, torch_dir, args.quick)
    if args.list:
        for name, source in sources.items():
            print(f"{name:22} {source.weights:15} {source.what}")
        return 0
    unknown = [n for n in [*(args.programs or []), *(args.per_conv or [])] if n not in sources]
    if unknown:
        print(
            f"bench_runtime: error: unknown program(s) {', '.join(unknown)}; see --list",
            file=sys.stderr,
        )
        return 2
    args.samples = args.samples or (3 if args.quick else 7)
    args.min_sample_ms = args.min_sample_ms or (20.0 if args.quick else 50.0)
    from convcanon.diagnostics import UsageError

    try:
        modes = parse_modes(args.option, args.modes)
    except (UsageError, ValueError) as err:
        print(f"bench_runtime: error: {err}", file=sys.stderr)
        return 2
    command = "python bench/bench_runtime.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    min_s = args.min_sample_ms / 1000
    lines = []
    if args.per_conv:
        for name in args.per_conv:
            lines += per_conv(sources[name], modes, args.samples, min_s)
    else:
        results = []
        for name in args.programs or list(sources):
            results.append(measure(sources[name], modes, args.samples, min_s))
            print(
                "\n".join(program_table(results[-1:], modes)[2 : 2 + len(modes)]), file=sys.stderr
            )
        lines += ["## Programs", "", *[f"- `{r.name}`: {r.what}" for r in results], ""]
        lines += program_table(results, modes)
    what = "each conv alone" if args.per_conv else "canonical / original"
    title = [f"# XLA CPU run time: {what} (issue 19)", ""]
    out = args.out or BENCH / (
        "RESULTS_runtime_convs.md" if args.per_conv else "RESULTS_runtime.md"
    )
    lines = title + header(args, modes, command.strip()) + lines  # the machine line's load: end
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        previous = out.read_text() if out.exists() else ""
        if ANALYSIS_MARKER in previous:
            text += "\n" + previous[previous.index(ANALYSIS_MARKER) :]
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
