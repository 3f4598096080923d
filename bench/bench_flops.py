"""Output cost of the conv canonicalization, per model: multiply-adds, ops added, XLA run time.

For each model (the README's small CNN, ResNet-50 forward, a flax ConvTranspose decoder and a
`jax.grad` training step of a strided CNN with a decoder, both exported here) we measure on the
emitted IR itself, not on the pass's bookkeeping:
- MACs after / lattice MACs before. The lattice counts only products that read a real input
  element or a padding zero on the input lattice (for a conv without lhs dilation: all of them);
  the polyphase rewrites must hit it exactly (1.000). Dense MACs before (every product, inserted
  zeros included) are shown for scale: `lhs-dilation=interior-pad` costs exactly those.
- ops added, by name (output minus input).
- XLA CPU run time of the canonical module / the original: both compiled once, then run
  alternately (paired) on the same random inputs; the ratio is the median of the paired ratios.

Run: python bench/bench_flops.py [--pipeline P] [--reps N] [--no-write]
Writes bench/RESULTS_flops.md; exits 1 if any model's MACs after differ from its lattice MACs.
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from convcanon.driver import FRAMEWORKS, run_pipeline
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.params import read_conv_params
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.pipeline import parse_pipeline

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PIPELINE = "stablehlo-canonicalize-conv{gate=general}"


def _decoder() -> str:
    """A U-Net-style decoder: ConvTranspose stride 2 (SAME and VALID) and 3x3 convs."""
    import jax
    from flax import linen as nn

    class Decoder(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            for features in (64, 32, 16):
                x = nn.relu(nn.ConvTranspose(features, (3, 3), strides=(2, 2), padding="SAME")(x))
                x = nn.relu(nn.Conv(features, (3, 3), padding="SAME")(x))
            return nn.ConvTranspose(3, (4, 4), strides=(2, 2), padding="VALID")(x)

    return _export(Decoder(), (4, 8, 8, 128), train=False)


def _training_step() -> str:
    """`jax.grad` of a loss through a strided encoder, a grouped conv and a decoder."""
    import jax
    from flax import linen as nn

    class AutoEncoder(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Conv(32, (3, 3), strides=(2, 2), padding="SAME")(x))
            x = nn.relu(nn.Conv(64, (3, 3), strides=(2, 2), padding="SAME")(x))
            x = nn.relu(nn.Conv(64, (3, 3), padding="SAME", feature_group_count=4)(x))
            x = nn.relu(nn.ConvTranspose(32, (3, 3), strides=(2, 2), padding="SAME")(x))
            return nn.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME")(x)

    return _export(AutoEncoder(), (8, 32, 32, 3), train=True)


def _export(model: object, shape: tuple[int, ...], train: bool) -> str:
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct(shape, jnp.float32)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0), x)  # type: ignore[attr-defined]
    flat, tree = jax.tree_util.tree_flatten(params)

    def apply(leaves: list[jax.Array], x: jax.Array) -> jax.Array:
        return model.apply(jax.tree_util.tree_unflatten(tree, leaves), x)  # type: ignore[attr-defined]

    def loss(leaves: list[jax.Array], x: jax.Array) -> jax.Array:
        return jnp.mean(jnp.square(apply(leaves, x)))

    fn = jax.grad(loss, argnums=(0, 1)) if train else apply
    return jax.jit(fn).lower(flat, x).as_text()


MODELS: dict[str, Callable[[], str]] = {
    "small_cnn (forward)": lambda: (REPO / "examples" / "small_cnn.stablehlo.mlir").read_text(),
    "resnet50 (forward)": lambda: (BENCH / "models" / "resnet50.stablehlo.mlir").read_text(),
    "decoder (flax ConvTranspose, forward)": _decoder,
    "training step (jax.grad, encoder-decoder)": _training_step,
}


@dataclass
class ModelCost:
    name: str
    convs_before: int
    convs_after: int
    dense_before: int
    lattice_before: int
    macs_after: int
    add_elems: int  # elements summed by the added adds (their FLOPs)
    ops_added: Counter[str]
    xla_ratio: float
    xla_original_ms: float

    @property
    def lattice_ratio(self) -> float:
        return self.macs_after / self.lattice_before


def _convs(module: object) -> list[ConvParams]:
    found: list[ConvParams] = []

    def visit(op: object) -> object:
        from jaxlib.mlir import ir

        if op.name == "stablehlo.convolution":  # type: ignore[attr-defined]
            found.append(read_conv_params(op))  # type: ignore[arg-type]
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)  # type: ignore[attr-defined]
    return found


def _op_counts(text: str) -> Counter[str]:
    return Counter(re.findall(r"= (?:stablehlo|\"stablehlo)\.(\w+)", text))


def _add_elems(before: str, after: str) -> int:
    """Elements of the adds the rewrite introduced (result types of adds after minus before)."""

    def sizes(text: str) -> Counter[int]:
        types = re.findall(r"stablehlo\.add .*: tensor<([\dx]*)[a-z]", text)
        return Counter(math.prod(int(d) for d in t.split("x") if d) for t in types)

    return sum((n * k for n, k in (sizes(after) - sizes(before)).items()), 0)


def _inputs(text: str, seed: int) -> list[np.ndarray]:
    """Uniform [0, 1) inputs for @main's f32 arguments (positive: BatchNorm stays finite)."""
    match = re.search(r"func\.func public @main\((.*?)\) ->", text, re.S)
    assert match is not None
    shapes = re.findall(r"tensor<([\dx]*)f32>", match[1])
    rng = np.random.default_rng(seed)
    return [rng.random(tuple(int(d) for d in s.split("x") if d), dtype=np.float32) for s in shapes]


def _xla_times(original: str, canonical: str, reps: int) -> tuple[float, float]:
    """(median paired ratio canonical/original, original's median ms) on XLA CPU."""
    import jax

    from convcanon.verify.xla_engine import _cpu_client, compile_stablehlo_text

    _, device = _cpu_client()
    inputs = [jax.device_put(x, device) for x in _inputs(original, 0)]
    executables = [compile_stablehlo_text(t) for t in (original, canonical)]

    def run(executable: object) -> float:
        start = time.perf_counter()
        out = executable.execute_sharded(inputs)  # type: ignore[attr-defined]
        for arrays in out.disassemble_into_single_device_arrays():
            arrays[0].block_until_ready()
        return time.perf_counter() - start

    for executable in executables:  # warm up
        run(executable)
    ratios, originals = [], []
    for i in range(reps):
        order = executables if i % 2 == 0 else executables[::-1]
        first, second = run(order[0]), run(order[1])
        t_orig, t_canon = (first, second) if i % 2 == 0 else (second, first)
        ratios.append(t_canon / t_orig)
        originals.append(t_orig)
    return statistics.median(ratios), 1000 * statistics.median(originals)


def measure(name: str, text: str, pipeline: str, reps: int) -> ModelCost:
    adapter = FRAMEWORKS["hlo"]
    hlo_file = adapter.parse_text(text, name)
    before = _convs(hlo_file.module)
    original = str(hlo_file.module)
    run_pipeline(hlo_file, parse_pipeline(pipeline))
    hlo_file.module.operation.verify()
    canonical = str(hlo_file.module)
    after = _convs(hlo_file.module)
    added = _op_counts(canonical)
    added.subtract(_op_counts(original))
    ratio, ms = _xla_times(original, canonical, reps)
    return ModelCost(
        name,
        len(before),
        len(after),
        sum(p.macs for p in before),
        sum(lattice_macs(p) for p in before),
        sum(p.macs for p in after),
        _add_elems(original, canonical),
        Counter({k: v for k, v in added.items() if v}),
        ratio,
        ms,
    )


def _ops(added: Counter[str]) -> str:
    return ", ".join(f"{v:+d} {k}" for k, v in sorted(added.items())) or "-"


def table(costs: list[ModelCost]) -> list[str]:
    lines = [
        "| model | convs before -> after | dense MACs before | lattice MACs before | MACs after |"
        " **after / lattice** | after / dense | FLOPs of added adds / lattice FLOPs | ops added |"
        " XLA CPU original (ms) | **XLA canonical / original** |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for c in costs:
        lines.append(
            f"| {c.name} | {c.convs_before} -> {c.convs_after} | {c.dense_before:,} |"
            f" {c.lattice_before:,} | {c.macs_after:,} | **{c.lattice_ratio:.3f}** |"
            f" {c.macs_after / c.dense_before:.3f} | {c.add_elems / (2 * c.lattice_before):.5f} |"
            f" {_ops(c.ops_added)} | {c.xla_original_ms:.2f} | **{c.xla_ratio:.2f}x** |"
        )
    return lines


def _revision() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True)
        return out.stdout.decode().strip() or "?"
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="per-model output cost of the canonicalization")
    parser.add_argument("--pipeline", default=PIPELINE)
    parser.add_argument("--reps", type=int, default=21, help="paired XLA runs per model")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS_flops.md")
    args = parser.parse_args(argv)
    costs = [measure(name, make(), args.pipeline, args.reps) for name, make in MODELS.items()]
    exact = all(c.macs_after == c.lattice_before for c in costs)
    lines = [
        "# Output cost: multiply-adds after / lattice multiply-adds before, ops added, XLA time",
        "",
        f"Pipeline `{args.pipeline}`, measured on the emitted IR by `python bench/bench_flops.py"
        f" --reps {args.reps}` at {_revision()} ({platform.processor() or platform.machine()},"
        f" {len(__import__('os').sched_getaffinity(0))} cores).",
        "Lattice MACs count only products that read a real input element or a padding zero on the",
        "input lattice (all products for a conv without lhs dilation); dense MACs count every",
        "product, inserted (interior) zeros included: what `lhs-dilation=interior-pad` costs.",
        "XLA: both modules compiled once, run alternately on the same inputs, median of the",
        "paired ratios.",
        "",
        *table(costs),
        "",
        f"MACs after equal the lattice MACs in every model: {'yes' if exact else '**NO**'}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        previous = args.out.read_text() if args.out.exists() else ""
        marker = "<!-- analysis: kept when the tables above are regenerated -->"
        if marker in previous:
            text += "\n" + previous[previous.index(marker) :]
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
