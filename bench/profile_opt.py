"""cProfile one convcanon-opt job in-process: where the pass's time goes, function by function.

Run: python bench/profile_opt.py FILE [--pipeline P] [--top 30]
Prints wall time of parse / pass / print, then the pass's top functions by own time and by
cumulative time (cProfile roughly doubles the pass's wall time; compare shares, not seconds).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from convcanon.driver import FRAMEWORKS, run_pipeline
from convcanon.pipeline import parse_pipeline

PIPELINE = "stablehlo-canonicalize-conv{gate=general}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cProfile convcanon-opt's pass in-process")
    parser.add_argument("file", type=Path)
    parser.add_argument("--pipeline", default=PIPELINE)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    adapter = FRAMEWORKS["hlo"]
    passes = parse_pipeline(args.pipeline)
    for invocation in passes:
        invocation.info.load()
    text = args.file.read_text()
    with adapter.job():  # as convcanon-opt runs it (driver.transform_text)
        t0 = time.perf_counter()
        parsed = adapter.parse_text(text, str(args.file))
        t1 = time.perf_counter()
        profile = cProfile.Profile()
        profile.enable()
        run_pipeline(parsed, passes)
        profile.disable()
        t2 = time.perf_counter()
        out = adapter.print_module(parsed)
        t3 = time.perf_counter()
    print(
        f"parse {t1 - t0:.3f} s, pass (profiled) {t2 - t1:.3f} s, print {t3 - t2:.3f} s;"
        f" {text.count(chr(10))} lines in, {out.count(chr(10))} lines out"
    )
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
