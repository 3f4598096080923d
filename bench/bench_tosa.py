"""MIGraphX lowering benchmark: per program, the TOSA ops `migraphx-to-tosa` emits,
its transposes against the minimum and against a per-op (rocMLIR-style) lowering, and the bytes of
broadcasts it materializes. Every lowered program is also run on IREE (llvm-cpu) and compared with
the migraphx reference over flat strided buffers, so a count is only reported for a correct output.

Programs: bench/migraphx/*.mlir; each starts with `// min-transposes: N: why` (derived by hand).
The per-op count is what lowering each op on its own with row-major tensors needs: one transpose
per non-row-major argument or result, per migraphx.transpose, and three per convolution (input,
weights, result to and from NHWC/OHWI).

Run: python bench/bench_tosa.py [--no-iree] [--no-write]
Writes bench/RESULTS_tosa.md; exits 1 if any program emits more transposes than its minimum or
disagrees with the reference.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.migraphx import layout
from convcanon.migraphx.shaped_type import ShapedType
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.reference.migraphx_kernels import type_dtype
from convcanon.xdsl_io import parse_file_text, print_file

BENCH = Path(__file__).resolve().parent
PROGRAMS = BENCH / "migraphx"
_MIN = re.compile(r"//\s*min-transposes:\s*(\d+)(.*)")


@dataclass
class Row:
    name: str
    migraphx_ops: int
    tosa_ops: int
    transposes: int
    minimum: int
    per_op: int
    broadcast_bytes: int
    lower_ms: float
    iree: str
    why: str


def entry(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def per_op_transposes(module: ModuleOp) -> int:
    """Transposes of a lowering that handles each op alone with row-major logical tensors."""
    function = entry(module)
    count = 0
    for ty in [*function.function_type.inputs.data, *function.function_type.outputs.data]:
        if isinstance(ty, ShapedType) and not _row_major(ty):
            count += 1
    for op in function.walk():
        if op.name == "migraphx.transpose":
            count += 1
        elif op.name == "migraphx.convolution":
            count += 3
    return count


def _row_major(ty: ShapedType) -> bool:
    perm = ty.memory_layout().perm
    real = layout.real_dims(ty.lens, ty.stride_values)
    return [d for d in perm if d in real] == sorted(real)


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = []
    for ty in entry(module).function_type.inputs.data:
        assert isinstance(ty, ShapedType)
        dtype = type_dtype(ty)
        if dtype.kind in "iu":  # small non-negative integers: valid indices for any table
            inputs.append(rng.integers(0, 4, (ty.flat_size(),)).astype(dtype))
        else:
            inputs.append(rng.uniform(0.5, 2.0, (ty.flat_size(),)).astype(dtype))
    return inputs


_IREE_LIMIT = re.compile(r"//\s*iree:\s*reference only:\s*(.*)")


def check_on_iree(source: str, lowered: str) -> str:
    """`match` on IREE; a program IREE cannot build (`// iree: reference only: why`) is judged
    by our TOSA interpreter instead, and says so."""
    from convcanon.verify.iree_tosa import run_tosa_text

    module = parse_file_text(source, "<bench>")
    inputs = random_inputs(module)
    expected = Interpreter(module, "<bench>", {}).run(entry(module).sym_name.data, inputs)
    limit = _IREE_LIMIT.search(source)
    if limit is not None:
        tosa = parse_file_text(lowered, "<bench-tosa>")
        actual = Interpreter(tosa, "<bench-tosa>", {}).run(entry(tosa).sym_name.data, inputs)
    else:
        actual = run_tosa_text(lowered, inputs)
    tolerance = (
        2e-2 if any(e.dtype.itemsize < 4 and e.dtype.kind == "f" for e in expected) else 1e-4
    )
    for a, e in zip(actual, expected, strict=True):
        close = np.allclose(
            a.astype(np.float64), e.astype(np.float64), rtol=tolerance, atol=tolerance
        )
        if a.shape != e.shape or not close:
            return "MISMATCH"
    if limit is not None:
        return f"not built ({limit.group(1).strip()}); TOSA interpreter: match"
    return "match"


def measure(path: Path, use_iree: bool) -> Row:
    source = path.read_text()
    match = _MIN.search(source)
    if match is None:
        raise SystemExit(f"{path}: missing `// min-transposes: N` header")
    module = parse_file_text(source, str(path))
    per_op = per_op_transposes(module)
    migraphx_ops = sum(1 for op in module.walk() if op.name.startswith("migraphx."))
    start = time.perf_counter()
    stats = migraphx_to_tosa(module, {})
    lower_ms = (time.perf_counter() - start) * 1e3
    lowered = print_file(module)
    tosa_ops = sum(1 for op in module.walk() if op.name.startswith("tosa."))
    return Row(
        name=path.stem,
        migraphx_ops=migraphx_ops,
        tosa_ops=tosa_ops,
        transposes=stats.counters.get("tosa.transpose emitted", 0),
        minimum=int(match.group(1)),
        per_op=per_op,
        broadcast_bytes=stats.counters.get("materialized broadcast bytes", 0),
        lower_ms=lower_ms,
        iree=check_on_iree(source, lowered) if use_iree else "not run",
        why=match.group(2).strip(" :"),
    )


def render(rows: list[Row]) -> str:
    lines = [
        "# migraphx-to-tosa: ops, transposes, materialized broadcasts",
        "",
        "Generated by `python bench/bench_tosa.py` (programs in `bench/migraphx/`). `minimum` is",
        "derived by hand (reason below); `per-op` is a lowering of each op alone with row-major",
        "tensors (rocMLIR's approach before canonicalization). `IREE` compares the lowered module",
        "on IREE llvm-cpu with the migraphx reference over flat strided buffers.",
        "",
        "| program | migraphx ops | TOSA ops | transposes | minimum | per-op | broadcast bytes "
        "| lower (ms) | IREE |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.migraphx_ops} | {r.tosa_ops} | {r.transposes} | {r.minimum} | "
            f"{r.per_op} | {r.broadcast_bytes} | {r.lower_ms:.1f} | {r.iree} |"
        )
    lines += ["", "Minimum transposes, why:", ""]
    lines += [f"- {r.name}: {r.minimum}: {r.why}" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--no-iree", action="store_true", help="skip the IREE correctness run")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rows = [measure(path, not args.no_iree) for path in sorted(PROGRAMS.glob("*.mlir"))]
    report = render(rows)
    print(report)
    if not args.no_write:
        (BENCH / "RESULTS_tosa.md").write_text(report)
    bad = [r for r in rows if r.transposes > r.minimum or r.iree == "MISMATCH"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
