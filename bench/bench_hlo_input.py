"""What `--input-hlo` costs: XLA's converter calls and the time of the conversion (HLO proto or
text -> located StableHLO bytecode, what the child process does), in this process with whatever
`convcanon` is importable (point PYTHONPATH at another checkout's src to measure it), and the
whole `convcanon-opt --input-hlo FILE` process.

    python bench/bench_hlo_input.py /tmp/resnet50.pb --reps 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("hlo", help="an HloModuleProto (.pb) or HLO text file")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    import jax.extend.mlir

    import convcanon.hlo.hlo_import as hlo_import

    data = Path(args.hlo).read_bytes()
    original = jax.extend.mlir.hlo_to_stablehlo
    calls = [0]

    def counted(proto: bytes) -> Any:
        calls[0] += 1
        return original(proto)

    jax.extend.mlir.hlo_to_stablehlo = counted  # imported by name when the conversion runs
    hlo_import.hlo_to_bytecode(data, args.hlo)  # warm: JAX's and XLA's first-call costs
    calls[0] = 0
    times = []
    for _ in range(args.reps):
        start = time.perf_counter()
        hlo_import.hlo_to_bytecode(data, args.hlo)
        times.append(time.perf_counter() - start)
    per_run = calls[0] // args.reps
    opt = [sys.executable, "-c", "from convcanon.cli import opt_main; opt_main()"]
    walls = []
    for _ in range(args.reps):  # the child inherits PYTHONPATH: the same convcanon
        start = time.perf_counter()
        subprocess.run([*opt, args.hlo, "--input-hlo", "-o", os.devnull], check=True)
        walls.append(time.perf_counter() - start)
    print(
        f"converter calls {per_run}; conversion median {statistics.median(times):.3f} s "
        f"({', '.join(f'{t:.3f}' for t in times)}); convcanon-opt --input-hlo median "
        f"{statistics.median(walls):.2f} s ({', '.join(f'{t:.2f}' for t in walls)}); "
        f"convcanon from {hlo_import.__file__}"
    )


if __name__ == "__main__":
    main()
