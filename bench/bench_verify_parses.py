"""How often `convcanon verify FILE -p PIPELINE` parses module text, and what parsing costs it.

Runs the command in this process (with whatever `convcanon` is importable: point PYTHONPATH at
another checkout's src to measure it) and counts every `parse_module` call (the one parser of
StableHLO/MHLO text, under `parse_file_text` too), the calls on FILE's own text, and the time
spent inside them; then the command's wall time.

    python bench/bench_verify_parses.py bench/models/resnet50.stablehlo.mlir --trials 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("module")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--pipeline", default="stablehlo-canonicalize-conv")
    args = parser.parse_args()

    import convcanon.hlo.context as context
    import convcanon.hlo.io as hlo_io
    from convcanon.cli import main as cli_main

    text = Path(args.module).read_text()
    original = context.parse_module
    calls: list[str] = []
    spent = [0.0]

    def counted(source: str, filename: str, *rest: Any, **options: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(source, filename, *rest, **options)
        finally:
            spent[0] += time.perf_counter() - start
            calls.append(source)

    context.parse_module = counted  # lazy importers read the module attribute
    hlo_io.parse_module = counted  # parse_file_text imported it by name
    command = ["verify", args.module, "-p", args.pipeline, "--trials", str(args.trials)]
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli_main(command)
    wall = time.perf_counter() - start
    print(
        f"exit {code}; parses {len(calls)} (of FILE's text {calls.count(text)}); "
        f"parsing {spent[0]:.3f} s; command {wall:.2f} s; convcanon from {context.__file__}"
    )


if __name__ == "__main__":
    main()
