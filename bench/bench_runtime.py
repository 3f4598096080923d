"""Run time of the canonical program / the original on XLA CPU and IREE CPU, paired (issues 19, 30).

Each program (bench/runtime/models.py: ResNet-18/50 NHWC and NCHW, ViT patch embeddings, ConvNeXt,
wav2vec2's feature encoder, U-Nets, HiFi-GAN, EfficientNet-B0, a VGG-style 3x3/2 stack, training
steps) is written in JAX, lowered with `jax.jit(...).lower(...).as_text()` at a size (`full`,
`quick`, `small`) with its weights as arguments or as constants, canonicalized in-process by
`convcanon.canonicalize_conv(text, "stablehlo", gate="general", **options)` once per mode, and
every module is compiled once per engine (runtime/engines.py: XLA CPU, or IREE llvm-cpu on the
host CPU run on local-task). Every canonical module's outputs are checked against the original's
on the same engine, and IREE's original against XLA's, before anything is timed. Then N paired
samples per engine: in each, every module runs back to back for at least `--min-sample-ms`, in
an order that alternates from sample to sample; a sample's ratio is canonical / original time per
run, and a program's number is the median of its samples' ratios. Programs are summarized by the
geomean of those medians. Per module the table gives the ops (by name, counted in the module
text) and, on IREE, the dispatches per run (the compiler's scheduling statistics).

`--per-conv PROGRAM ...` times each distinct conv of each PROGRAM alone instead (the conv with its
lhs as an argument and its kernel as an argument or, where the program computes it from constants,
a constant; against its canonical replacement alone): which conv costs what, in every mode, and
what that adds to the program's conv time.

Run: python bench/bench_runtime.py [--engine xla iree] [--sizes full small] [--weights both]
       [--quick] [--programs NAME ...] [--option key=value ...] [--modes MODE ...]
       [--per-conv PROGRAM ...] [--samples N] [--no-write]
Writes bench/RESULTS_runtime.md (XLA alone) or bench/RESULTS_runtime_engines.md (IREE too), or
bench/RESULTS_runtime_convs.md (_engines_convs.md) with --per-conv (or --out).
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
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
PASS = "stablehlo-canonicalize-conv"
ANALYSIS_MARKER = "<!-- analysis: kept when the tables above are regenerated -->"
ENGINE_NAMES = {"xla": "XLA CPU", "iree": "IREE CPU"}
# Outputs further than this from the original's (relative to its largest element) are wrong:
# f32 sums reassociated by the rewrite stay within ~1e-5 on every bench program.
TOLERANCE = 1e-4

from bench_flops import _convs, _op_counts  # noqa: E402
from bench_opt import environment  # noqa: E402
from runtime.engines import ENGINES, IREE_FLAGS, Module, compile_on  # noqa: E402
from runtime.models import PROGRAMS, SIZES, export  # noqa: E402


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


def per_run_seconds(module: Module, buffers: list[Any], min_seconds: float) -> tuple[float, int]:
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


def paired(modules: list[Module], inputs: list[np.ndarray], samples: int, min_s: float) -> Timing:
    buffers = modules[0].device_inputs(inputs)
    return paired_on(modules, [buffers] * len(modules), samples, min_s)


def paired_on(
    modules: list[Module], buffers: list[list[Any]], samples: int, min_s: float
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


@dataclass(frozen=True)
class Counts:
    """What the bench counts on a module's IR: convs, multiply-adds and ops by name."""

    convs: int
    macs: int
    lattice: int
    ops: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.ops.values())


def counts(text: str) -> Counts:
    """The module's convs and their dense and lattice multiply-adds (from the IR), and its ops
    by name as written in the text (`= stablehlo.NAME`, region bodies included)."""
    return Counts(*macs(text), _op_counts(text))


def ops_added(before: Counter[str], after: Counter[str], most: int = 6) -> str:
    """The op kinds the rewrite added or removed, largest change first ("+38 reshape, -2 pad")."""
    delta = Counter(after)
    delta.subtract(before)
    changes = sorted(((n, k) for k, n in delta.items() if n), key=lambda nk: (-abs(nk[0]), nk[1]))
    words = [f"{n:+d} {k}" for n, k in changes[:most]]
    if len(changes) > most:
        words.append("...")
    return ", ".join(words) or "none"


@dataclass
class EngineResult:
    """One engine's paired timing of a program's original against each mode's module."""

    original_ms: float
    runs: int
    load: str
    ratios: list[float]  # per mode: median of the samples' ratios
    ranges: list[tuple[float, float]]
    errors: list[float]  # per mode: canonical vs original on this engine
    stats: list[dict[str, int]]  # the original's, then each mode's (IREE: dispatches...)
    error_vs_xla: float | None = None  # the original on this engine vs on XLA


@dataclass
class ProgramResult:
    name: str
    what: str
    size: str
    weights: str
    before: Counts
    after: list[Counts]  # per mode
    left: list[int]  # per mode: convs the gate refused (not canonical, not rewritten)
    engines: dict[str, EngineResult]

    @property
    def label(self) -> str:
        return f"{self.name} ({self.size}, {self.weights})"

    def wrong(self) -> list[str]:
        """Each engine and mode whose outputs differ from the original's beyond TOLERANCE."""
        found = []
        for engine, result in self.engines.items():
            found += [f"{engine} mode {i}" for i, e in enumerate(result.errors) if e > TOLERANCE]
            if result.error_vs_xla is not None and result.error_vs_xla > TOLERANCE:
                found.append(f"{engine} original vs xla")
        return found


@dataclass(frozen=True)
class Source:
    """A program as the bench gets it: StableHLO text and @main's inputs, made on demand."""

    name: str
    what: str
    size: str
    weights: str  # arguments, dense (JAX constants) or dense_resource (torch-mlir's)
    load: Callable[[], tuple[str, list[np.ndarray]]]


def weight_label(channels_first: bool, weights: str) -> str:
    if weights == "arguments":
        return weights
    return "dense_resource" if channels_first else "dense"


def jax_sources(sizes: Sequence[str], weights: str) -> list[Source]:
    """Every program at every size, with its weights as `weights` says: `native` (as its users'
    exporter binds them), `arguments`, `constants` or `both` (a training step: arguments only)."""
    found = []
    for size in sizes:
        for name, p in PROGRAMS.items():
            kinds = {"native": (p.weights,), "both": p.weight_kinds()}.get(weights, (weights,))
            for kind in kinds:
                if kind in p.weight_kinds():
                    found.append(
                        Source(
                            name,
                            p.what,
                            size,
                            weight_label(p.channels_first, kind),
                            lambda p=p, size=size, kind=kind: export(p, size, kind),
                        )
                    )
    return found


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


def torch_sources(python: str | None, directory: Path, quick: bool) -> list[Source]:
    """The PyTorch programs (runtime/torch_programs.py), exported by torch-mlir with `python`
    (an environment with torch and torch-mlir) into `directory`, or already there."""
    if python:
        script = BENCH / "runtime" / "torch_programs.py"
        command = [python, str(script), str(directory)] + (["--quick"] if quick else [])
        subprocess.run(command, check=True)
    found = []
    for path in sorted(directory.glob("torch-*.mlir")):
        first = path.open().readline()
        what = first[3:].strip() if first.startswith("// ") else path.name

        def load(path: Path = path) -> tuple[str, list[np.ndarray]]:
            text = path.read_text()
            return text, signature_inputs(text)

        found.append(
            Source(
                path.stem,
                f"PyTorch (torch-mlir) {what}",
                "quick" if quick else "full",
                "dense_resource",
                load,
            )
        )
    return found


def time_on(
    engine: str,
    texts: list[str],
    inputs: list[np.ndarray],
    samples: int,
    min_s: float,
    reference: list[np.ndarray] | None,
) -> tuple[EngineResult, list[np.ndarray]]:
    """Compile `texts` (the original first) on `engine`, check every output against the
    original's (and the original's against `reference`, XLA's), then time them paired."""
    load_start = loadavg()
    modules = [compile_on(engine, t) for t in texts]
    buffers = modules[0].device_inputs(inputs)
    outputs = [m.host(m.run(buffers)) for m in modules]
    errors = [max_relative_error(outputs[0], out) for out in outputs[1:]]
    timing = paired_on(modules, [buffers] * len(modules), samples, min_s)
    ratios = [timing.ratios(i) for i in range(1, len(modules))]
    result = EngineResult(
        timing.original_ms(),
        int(statistics.median(timing.runs)),
        f"{load_start} -> {loadavg()}",
        [statistics.median(r) for r in ratios],
        [(min(r), max(r)) for r in ratios],
        errors,
        [m.stats for m in modules],
        None if reference is None else max_relative_error(reference, outputs[0]),
    )
    return result, outputs[0]


def measure(
    source: Source, modes: list[Mode], engines: Sequence[str], samples: int, min_s: float
) -> ProgramResult:
    """Canonicalize `source` in every mode and time it on every engine, XLA first: the other
    engines' originals are checked against XLA's outputs."""
    import convcanon

    original, inputs = source.load()
    canonical = [convcanon.canonicalize_conv(original, "stablehlo", **m.options) for m in modes]
    texts = [original, *(c.text for c in canonical)]
    found: dict[str, EngineResult] = {}
    if "xla" in engines:
        found["xla"], reference = time_on("xla", texts, inputs, samples, min_s, None)
    else:  # IREE alone: its original is still checked against XLA's
        xla = compile_on("xla", original)
        reference = xla.host(xla.run(xla.device_inputs(inputs)))
        del xla
    for engine in [e for e in engines if e != "xla"]:
        found[engine], _ = time_on(engine, texts, inputs, samples, min_s, reference)
    return ProgramResult(
        source.name,
        source.what,
        source.size,
        source.weights,
        counts(original),
        [counts(t) for t in texts[1:]],
        [left_as_is(c.stats) for c in canonical],
        found,
    )


def left_as_is(stats: dict[str, int]) -> int:
    """Convs the pass skipped for a reason other than being canonical already."""
    return sum(
        n
        for key, n in stats.items()
        if key.startswith("skipped:") and "already canonical" not in key
    )


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _dispatches(stats: dict[str, int]) -> str:
    return f"{stats['dispatches']}" if stats else "?"


def program_table(
    results: list[ProgramResult], modes: list[Mode], engines: Sequence[str]
) -> list[str]:
    """One row per program, size, weights and mode; each engine's original ms (runs per sample),
    its paired ratio and its samples' range side by side; IREE's dispatches per run."""
    head = (
        "| program | size | weights | mode | convs before -> after | ops before -> after |"
        " ops added, by kind | MACs after / floor |"
    )
    rule = "|---|---|---|---|---:|---:|---|---:|"
    for engine in engines:
        name = ENGINE_NAMES[engine].split()[0]
        head += f" {name} original ms (runs) | **{name}** | {name} samples |"
        rule += "---:|---:|---:|"
        if engine == "iree":
            head += " IREE dispatches before -> after |"
            rule += "---:|"
    head += " max rel. error | load (start -> end) |"
    rule += "---:|---|"
    lines = [head, rule]
    for r in results:
        for i, mode in enumerate(modes):
            after = r.after[i]
            row = (
                f"| {r.name} | {r.size} | {r.weights} | {mode.label} |"
                f" {r.before.convs} -> {after.convs}"
                + (f" ({r.left[i]} left as is)" if r.left[i] else "")
                + f" | {r.before.total} -> {after.total} | {ops_added(r.before.ops, after.ops)}"
                f" | {after.macs / r.before.lattice:.3f} |"
            )
            errors, loads = [], []
            for engine in engines:
                e = r.engines[engine]
                row += (
                    f" {e.original_ms:.2f} ({e.runs}) | **x{e.ratios[i]:.2f}** |"
                    f" {e.ranges[i][0]:.2f}-{e.ranges[i][1]:.2f} |"
                )
                if engine == "iree":
                    row += f" {_dispatches(e.stats[0])} -> {_dispatches(e.stats[i + 1])} |"
                errors.append(f"{engine} {e.errors[i]:.1e}")
                if e.error_vs_xla is not None:
                    errors.append(f"{engine} orig vs xla {e.error_vs_xla:.1e}")
                loads.append(f"{engine} {e.load}")
            row += f" {'; '.join(errors)} | {'; '.join(loads)} |"
            lines.append(row)
    return lines


def summary_table(
    results: list[ProgramResult], modes: list[Mode], engines: Sequence[str]
) -> list[str]:
    """Geomean and worst program per engine, size and mode; and the geomean of the programs with
    their weights as arguments and as constants apart."""
    lines = [
        "| engine | size | mode | programs | **geomean** | worst | geomean, weights as"
        " arguments | geomean, weights as constants |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    sizes = [s for s in SIZES if any(r.size == s for r in results)]
    for engine in engines:
        for size in sizes:
            group = [r for r in results if r.size == size and not r.wrong()]
            if not group:
                continue
            for i, mode in enumerate(modes):
                ratios = [r.engines[engine].ratios[i] for r in group]
                worst = max(group, key=lambda r: r.engines[engine].ratios[i])
                parts = []
                for constants in (False, True):
                    sub = [
                        r.engines[engine].ratios[i]
                        for r in group
                        if (r.weights != "arguments") == constants
                    ]
                    parts.append(f"x{geomean(sub):.2f} ({len(sub)})" if sub else "-")
                lines.append(
                    f"| {ENGINE_NAMES[engine]} | {size} | {mode.label} | {len(group)} |"
                    f" **x{geomean(ratios):.2f}** |"
                    f" x{worst.engines[engine].ratios[i]:.2f} {worst.label} |"
                    f" {parts[0]} | {parts[1]} |"
                )
    return lines


def describe(mode: Mode) -> str:
    return " ".join(f"{k}={v}" for k, v in mode.options.items())


def header(
    args: argparse.Namespace, modes: list[Mode], engines: Sequence[str], command: str
) -> list[str]:
    lines = [
        f"Command: `{command}`",
        "",
        f"Machine: {environment()}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '(unset)')!r}.",
    ]
    if "iree" in engines:
        lines.append(
            f"IREE: `iree.compiler.compile_str(..., input_type='stablehlo')` with"
            f" `{' '.join(IREE_FLAGS)}`, run on the `local-task` driver; dispatches per run from"
            " `--iree-scheduling-dump-statistics-format=json` of the same compilation."
        )
    lines += [
        f"Samples: {args.samples} paired per {'conv' if args.per_conv else 'program'} and"
        f" engine, each >= {args.min_sample_ms:g} ms of back-to-back runs per module (each run"
        " waits for its results), order alternating;",
        "ratio = median over samples of (canonical / original seconds per run).",
        "Floor = lattice multiply-adds of the original (products reading a real input element or",
        "a padding zero; below the dense count only where the original has lhs dilation).",
        "Ops = `= stablehlo.NAME` in the module text (region bodies included, `func.return` not).",
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


def per_conv(
    source: Source, modes: list[Mode], engine: str, samples: int, min_s: float
) -> list[str]:
    """Each distinct conv of `source` alone on `engine`, against its canonical form in every
    mode: what each costs, and (IREE) how many dispatches it becomes."""
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
        found = [counts(t) for t in texts]
        compiled = [compile_on(engine, t) for t in texts]
        inputs = signature_inputs(conv_text)
        buffers = compiled[0].device_inputs(inputs)
        outputs = [m.host(m.run(buffers)) for m in compiled]
        errors = [max_relative_error(outputs[0], out) for out in outputs[1:]]
        timing = paired_on(compiled, [buffers] * len(compiled), samples, min_s)
        per_run = [statistics.median(s[i] for s in timing.samples) for i in range(len(texts))]
        for i, t in enumerate(per_run):
            totals[i] += count * t
        cells = []
        for i, c in enumerate(found[1:]):
            dispatches = compiled[i + 1].stats.get("dispatches")
            cells.append(
                f"{c.convs} conv, {c.total} ops, x{c.macs / floor:.3f} floor"
                + ("" if dispatches is None else f", {dispatches} disp")
                + f", **x{timing.median_ratio(i + 1):.2f}**"
                f" ({1e6 * count * (per_run[i + 1] - per_run[0]):+.0f} us)"
                + ("" if errors[i] <= TOLERANCE else f" **wrong: {errors[i]:.1e}**")
            )
        base = compiled[0].stats.get("dispatches")
        rows.append(
            f"| {summary} | {count} | {1e6 * per_run[0]:.0f}"
            + ("" if base is None else f" ({base} disp)")
            + f" | {1e6 * count * per_run[0]:.0f} | "
            + " | ".join(cells)
            + " |"
        )
        print(rows[-1], file=sys.stderr)
    head = (
        "| conv (lhs * rhs -> result) | times in program | original us | x times (us) | "
        + " | ".join(
            f"`{m.label}`: convs, ops, MACs, canonical / original (x times)" for m in modes
        )
        + " |"
    )
    total = " | ".join(f"x{t / totals[0]:.2f} of the convs' time" for t in totals[1:])
    return [
        f"### Per conv on {ENGINE_NAMES[engine]}: {source.name} ({source.size}, {source.weights})",
        "",
        f"{source.what}.",
        "",
        head,
        "|---|---:|---:|---:|" + "---:|" * len(modes),
        *rows,
        f"| **all convs, weighted by times in program** | | | {1e6 * totals[0]:.0f} | {total} |",
        "",
    ]


def default_out(engines: Sequence[str], per_conv: bool) -> Path:
    """XLA alone keeps issue 19's files; with IREE the engines' own."""
    stem = "RESULTS_runtime" if list(engines) == ["xla"] else "RESULTS_runtime_engines"
    return BENCH / f"{stem}{'_convs' if per_conv else ''}.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="XLA / IREE CPU run time, canonical / original")
    parser.add_argument("--programs", nargs="+", metavar="NAME", help="default: all (see --list)")
    parser.add_argument(
        "--engine",
        nargs="+",
        choices=ENGINES,
        default=["xla"],
        help="engines to time on (default xla); with several, side by side",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        choices=SIZES,
        help="program sizes (default full; small: batch 1, 32-64 px, 0.25 s of audio)",
    )
    parser.add_argument(
        "--weights",
        choices=("native", "arguments", "constants", "both"),
        default="native",
        help="weights as the program's users bind them (default), as arguments, as constants,"
        " or both variants",
    )
    parser.add_argument(
        "--quick", action="store_true", help="--sizes quick, 3 samples of 20 ms by default"
    )
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
    parser.add_argument(
        "--out", type=Path, help="default bench/RESULTS_runtime[_engines][_convs].md"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.quick and args.sizes:
        parser.error("--quick is --sizes quick: give one of them")
    sizes = ["quick"] if args.quick else args.sizes or ["full"]
    engines = [e for e in ENGINES if e in args.engine]
    torch_dir = args.torch_dir or BENCH / "out" / ("torch-quick" if args.quick else "torch")
    sources = jax_sources(sizes, args.weights)
    if args.torch_python or args.torch_dir:
        sources += torch_sources(args.torch_python, torch_dir, args.quick)
    if args.list:
        for source in sources:
            print(f"{source.name:22} {source.size:6} {source.weights:15} {source.what}")
        return 0
    names = {s.name for s in sources}
    unknown = [n for n in [*(args.programs or []), *(args.per_conv or [])] if n not in names]
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
    wrong = []
    start = time.perf_counter()
    if args.per_conv:
        for source in [s for s in sources if s.name in args.per_conv]:
            for engine in engines:
                lines += per_conv(source, modes, engine, args.samples, min_s)
        wrong = [line for line in lines if "**wrong" in line]
    else:
        results = []
        chosen = set(args.programs or names)
        for source in [s for s in sources if s.name in chosen]:
            results.append(measure(source, modes, engines, args.samples, min_s))
            print("\n".join(program_table(results[-1:], modes, engines)[2:]), file=sys.stderr)
            wrong += [f"{results[-1].label}: {w}" for w in results[-1].wrong()]
        lines += ["## Programs", ""]
        lines += [f"- `{n}`: {w}" for n, w in dict((r.name, r.what) for r in results).items()]
        lines += ["", "## Summary", "", *summary_table(results, modes, engines), ""]
        lines += ["## Per program", "", *program_table(results, modes, engines), ""]
    minutes = (time.perf_counter() - start) / 60
    what = "each conv alone" if args.per_conv else "canonical / original"
    on = " and ".join(ENGINE_NAMES[e] for e in engines)
    title = [f"# {on} run time: {what} (issues 19, 30)", ""]
    out = args.out or default_out(engines, bool(args.per_conv))
    lines = title + header(args, modes, engines, command.strip()) + lines
    lines += [f"Bench wall time: {minutes:.1f} min.", ""]
    if wrong:
        lines += ["**Outputs differing from the original's (not counted in the summary):**", ""]
        lines += [f"- {w}" for w in wrong] + [""]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        previous = out.read_text() if out.exists() else ""
        if ANALYSIS_MARKER in previous:
            text += "\n" + previous[previous.index(ANALYSIS_MARKER) :]
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
