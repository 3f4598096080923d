"""How fast the bytecode reader child reads, against the time it is allowed (`reader_budget`).

A damaged bytecode file can make jaxlib's reader loop forever, so the child that reads binary
input is stopped after a budget that scales with the input's size. This measures the child end
to end (process start, imports, read, verify, and the print it does in each mode) on large
inputs of several kinds, so the budget's margin over an honest read is a published number:
  resnet-mix / conv-dense 100k ops as MLIR bytecode (written by iree-opt, not by us),
  resnet-mix 100k as a StableHLO 1.0.0 portable artifact (deserialized to StableHLO: the slowest
  bytes per second), a 16 MiB f32 constant as bytecode (bytes that cost almost nothing), and the
  example CNN (what start-up alone costs: the floor's share).

Run: python bench/bench_reader.py [--reps 3] [--no-write]
Writes bench/RESULTS_reader.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_opt import ENV, KINDS, OUT, REPO, as_bytecode, convcanon_opt, environment  # noqa: E402
from synthetic import write_synthetic  # noqa: E402

from convcanon.fileio.module_input import (  # noqa: E402
    READER_FLOOR_SECONDS,
    READER_SECONDS_PER_MB,
    reader_budget,
)

CHILD = "from convcanon.hlo.formats import read_child; read_child()"


def constant_module(path: Path, floats: int = 4 << 20) -> Path:
    """A module returning one f32 constant of `floats` random elements, as MLIR bytecode."""
    if path.exists():
        return path
    import numpy as np

    from convcanon.hlo.context import parse_module
    from convcanon.hlo.formats import module_bytecode

    hexed = np.random.default_rng(0).standard_normal(floats).astype(np.float32).tobytes().hex()
    t = f"tensor<{floats}xf32>"
    text = (
        f'func.func @main() -> {t} {{\n  %0 = stablehlo.constant dense<"0x{hexed.upper()}"> : {t}'
        f"\n  return %0 : {t}\n}}\n"
    )
    path.write_bytes(module_bytecode(parse_module(text, path.name)))
    return path


def artifact(text_path: Path) -> Path:
    """`text_path` as a StableHLO 1.0.0 portable artifact, written once by convcanon-opt."""
    out = OUT / f"{text_path.stem}.1.0.0.vhlo"
    if not out.exists():
        cmd = [*convcanon_opt(), str(text_path), "--target-version", "1.0.0", "-o", str(out)]
        subprocess.run(cmd, check=True, env=ENV)
    return out


def inputs() -> list[tuple[str, Path]]:
    mix = write_synthetic(100_000, OUT / f"{KINDS['resnet-mix']}_100000.mlir", kind="resnet-mix")
    dense = write_synthetic(100_000, OUT / f"{KINDS['conv-dense']}_100000.mlir")
    cnn = REPO / "examples" / "small_cnn.stablehlo.mlir"
    return [
        ("small CNN, bytecode", as_bytecode(cnn)),
        ("resnet-mix-100k, bytecode", as_bytecode(mix)),
        ("conv-dense-100k, bytecode", as_bytecode(dense)),
        ("resnet-mix-100k, artifact 1.0.0", artifact(mix)),
        ("16 MiB f32 constant, bytecode", constant_module(OUT / "constant_16mib.mlirbc")),
    ]


def child_seconds(path: Path, mode: str) -> float:
    """Wall seconds of one reader child on `path` (`text`: printed in full, as `run` and
    `verify` read; `bytecode`: checked and handed back, as `convcanon-opt` reads)."""
    with path.open("rb") as stdin:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-P", "-c", CHILD, path.name, mode],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            check=True,
            env=ENV,
        )
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bytecode reader child vs its time budget")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for name, path in inputs():
        size = path.stat().st_size
        for mode in ("bytecode", "text"):
            child_seconds(path, mode)  # warm-up: page cache and the child's bytecode cache
            median = statistics.median(child_seconds(path, mode) for _ in range(args.reps))
            budget = reader_budget(size)
            rows.append(
                f"| {name} | {mode} | {size:,} | {median:.2f} | {size / median / 1e6:.2f} |"
                f" {budget:g} | {budget / median:.0f}x |"
            )
            print(rows[-1], file=sys.stderr)
    text = "\n".join(
        [
            "# The bytecode reader child against its time budget",
            "",
            "jaxlib's bytecode reader loops forever on some damaged bytecode (the example CNN's"
            " bytecode with one byte flipped, tests/cli/fixtures/), so the child that reads binary"
            " input is stopped after `reader_budget(size)` seconds: "
            f"{READER_SECONDS_PER_MB:g} s per MB (10^6 bytes), rounded up to whole seconds, at"
            f" least {READER_FLOOR_SECONDS:g} s. The wall time below is the child end to end"
            " (process start, imports, read + verify, then for `text` the module printed in full,"
            " for `bytecode` the nesting check: the module written back as bytecode), median of"
            f" {args.reps} after a warm-up.",
            f"Generated by `python bench/bench_reader.py --reps {args.reps}` on: {environment()}.",
            "",
            "| input | mode | bytes | child (s) | MB/s | budget (s) | budget / child |",
            "|---|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )
    print(text)
    if not args.no_write:  # the nesting table (bench_nesting.py) below it is kept
        results = BENCH / "RESULTS_reader.md"
        old = results.read_text() if results.exists() else ""
        kept = old[old.index("\n## How deep a nest") :] if "\n## How deep a nest" in old else ""
        results.write_text(text + kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
