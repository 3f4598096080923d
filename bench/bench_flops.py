"""Output-cost benchmark (DESIGN §6): FLOPs(canonicalized) / FLOPs(original), per convolution.

The exact polyphase stride rewrite must cost no extra multiply-adds: the partial convs of one
original conv add up to exactly its MACs, plus `phases - 1` elementwise adds. We measure that on
the emitted IR itself (not on the pass's own bookkeeping): parse, record every conv's MACs by its
source location, run the pass, then group the convs and adds of the output by the location they
inherited. MACs come from `convcanon.hlo.params` (the same count the pass and `explain` use).
FLOPs = 2 x MACs for convs, 1 per element for an add; pads and slices move data and cost none.

Run: python bench/bench_flops.py [--pipeline P] [--no-write]
Writes bench/RESULTS_flops.md; exits 1 if any conv's MAC ratio is not exactly 1.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jaxlib.mlir import ir

from convcanon.driver import FRAMEWORKS, run_pipeline
from convcanon.hlo.params import read_conv_params
from convcanon.pipeline import parse_pipeline

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MODELS = {
    "small_cnn": REPO / "examples" / "small_cnn.stablehlo.mlir",
    "resnet50": BENCH / "models" / "resnet50.stablehlo.mlir",
}
PIPELINE = "stablehlo-canonicalize-conv{gate=general}"
_LINE_COL = re.compile(r":(\d+):(\d+)")


def walk(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """Every op nested under `op` (iterative, pre-order)."""
    stack = [op.operation]
    while stack:
        current = stack.pop()
        yield current
        children = [c.operation for r in current.regions for b in r.blocks for c in b.operations]
        stack.extend(reversed(children))


def loc_key(op: ir.Operation) -> str:
    """`line:col` of the op's source location; rewritten ops inherit their conv's location."""
    match = _LINE_COL.search(str(op.location))
    return f"{match[1]}:{match[2]}" if match else "?"


def numel(value: ir.Value) -> int:
    return math.prod(ir.ShapedType(value.type).shape)


@dataclass
class ConvCost:
    where: str
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    macs_before: int
    macs_after: int = 0
    partials: int = 0
    add_elems: int = 0
    ops_after: dict[str, int] = field(default_factory=dict)

    @property
    def mac_ratio(self) -> float:
        return self.macs_after / self.macs_before

    @property
    def flop_ratio(self) -> float:
        return (2 * self.macs_after + self.add_elems) / (2 * self.macs_before)


def conv_costs(path: Path, pipeline: str) -> tuple[list[ConvCost], int, int]:
    """Per-conv costs before/after, plus (adds before, adds after) in the whole module."""
    adapter = FRAMEWORKS["hlo"]
    hlo_file = adapter.parse_text(path.read_text(), str(path))
    module: ir.Module = hlo_file.module
    costs: dict[str, ConvCost] = {}
    adds_before = 0
    for op in walk(module.operation):
        if op.name == "stablehlo.add":
            adds_before += 1
        if op.name != "stablehlo.convolution":
            continue
        p = read_conv_params(op)
        key = loc_key(op)
        if key in costs:
            sys.exit(f"bench_flops: two convolutions share location {key} in {path}")
        costs[key] = ConvCost(key, p.kernel_spatial, p.strides, p.padding, p.macs)
    run_pipeline(hlo_file, parse_pipeline(pipeline))
    module.operation.verify()
    adds_after = 0
    for op in walk(module.operation):
        cost = costs.get(loc_key(op))
        if op.name == "stablehlo.add":
            adds_after += 1
        if cost is None:
            if op.name == "stablehlo.convolution":
                sys.exit(f"bench_flops: a convolution at {op.location} matches no original conv")
            continue
        cost.ops_after[op.name] = cost.ops_after.get(op.name, 0) + 1
        if op.name == "stablehlo.convolution":
            cost.macs_after += read_conv_params(op).macs
            cost.partials += 1
        elif op.name == "stablehlo.add":
            cost.add_elems += numel(op.results[0])
    return list(costs.values()), adds_before, adds_after


def fmt_pad(padding: tuple[tuple[int, int], ...]) -> str:
    return "[" + ", ".join(f"{lo},{hi}" for lo, hi in padding) + "]"


def model_table(name: str, costs: list[ConvCost], adds_before: int, adds_after: int) -> list[str]:
    lines = [
        f"### {name}",
        "",
        "| conv (line:col) | kernel | stride | padding | MACs | partial convs | added ops |"
        " MAC ratio | FLOP ratio |",
        "|---|---|---|---|---:|---:|---|---:|---:|",
    ]
    for c in costs:
        emitted = {k.removeprefix("stablehlo."): v for k, v in c.ops_after.items()}
        emitted.pop("convolution", None)
        added = ", ".join(f"{v} {k}" for k, v in sorted(emitted.items())) or "-"
        lines.append(
            f"| {c.where} | {'x'.join(map(str, c.kernel))} | {'x'.join(map(str, c.strides))} |"
            f" {fmt_pad(c.padding)} | {c.macs_before:,} | {c.partials} | {added} |"
            f" {c.mac_ratio:.3f} | {c.flop_ratio:.5f} |"
        )
    before = sum(c.macs_before for c in costs)
    after = sum(c.macs_after for c in costs)
    add_elems = sum(c.add_elems for c in costs)
    total = (2 * after + add_elems) / (2 * before)
    lines += [
        f"| **total** ({len(costs)} convs) | | | | {before:,} | {sum(c.partials for c in costs)} |"
        f" {adds_after - adds_before} adds | {after / before:.3f} | {total:.5f} |",
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="per-conv FLOPs before/after canonicalization")
    parser.add_argument("--pipeline", default=PIPELINE)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS_flops.md")
    args = parser.parse_args(argv)
    lines = [
        "# Output cost: FLOPs after / FLOPs before, per convolution",
        "",
        f"Pipeline `{args.pipeline}`, measured on the emitted IR by `python bench/bench_flops.py`.",
        "MAC ratio must be exactly 1.000 (the polyphase partials' taps add up to the kernel's);",
        "FLOP ratio = (2 x MACs after + elements of the added `add`s) / (2 x MACs before).",
        "",
    ]
    exact = True
    for name, path in MODELS.items():
        costs, adds_before, adds_after = conv_costs(path, args.pipeline)
        exact &= all(c.macs_after == c.macs_before for c in costs)
        lines += model_table(name, costs, adds_before, adds_after)
    lines.append(f"Every conv's MACs unchanged: {'yes' if exact else '**NO**'}.")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
