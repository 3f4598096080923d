"""How deep a nest MLIR's printer and bytecode writer take, on a whole stack and on an eighth.

The child that reads MLIR bytecode checks that the module nests no deeper than the command can
print or write, by writing it back as bytecode on a thread with an eighth of the stack
(`formats.bytecode_on_a_small_stack`). This finds, for each kind of nest (a tuple type, an
array attribute, a call-site location, nested regions), the first depth that kills each of:
  the check (the writer on an eighth of the stack), the command's writer and its printer (with
  debug info: locations printed) on the whole stack,
by building the nest through jaxlib's API in a fresh process per try (a stack overflow kills
it) and stepping the depth up. The check's margin is the printer's and writer's depth over the
check's.

Run: python bench/bench_nesting.py [--no-write]    (appends its table to bench/RESULTS_reader.md)
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_opt import environment  # noqa: E402

DEPTHS = [500, 1000, 2000, 3000, 4000, 6000, 8000, 10_000, 12_000, 15_000, 20_000, 25_000, 30_000]
TRY = """
import io, sys, threading
from jaxlib.mlir import ir
from convcanon.hlo.context import make_context, print_module
from convcanon.hlo.formats import SMALL_STACK_SHARE, bytecode_on_a_small_stack
kind, depth, operation = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def build():
    with make_context(allow_unregistered=True), ir.Location.unknown():
        if kind == "location":
            loc = ir.Location.file("a.py", 1, 1)
            for line in range(depth):
                loc = ir.Location.callsite(loc, [ir.Location.file("b.py", line, 1)])
            return ir.Module.create(loc=loc)
        module = ir.Module.create()
        if kind == "type":
            nest = ir.F32Type.get()
            for _ in range(depth):
                nest = ir.TupleType.get_tuple([nest])
            module.operation.attributes["x"] = ir.TypeAttr.get(nest)
        elif kind == "attribute":
            nest = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
            for _ in range(depth):
                nest = ir.ArrayAttr.get([nest])
            module.operation.attributes["x"] = nest
        else:
            block = module.body
            for _ in range(depth):
                with ir.InsertionPoint(block):
                    inner = ir.Operation.create("builtin.module", regions=1)
                block = inner.regions[0].blocks.append()
        return module

built = []
threading.stack_size(1 << 30)  # building and holding the nest recurses nowhere near this
thread = threading.Thread(target=lambda: built.append(build()))
thread.start()
thread.join()
module = built[0]
if operation == "check":
    assert bytecode_on_a_small_stack(module) is not None
elif operation == "writer":
    module.operation.write_bytecode(io.BytesIO())
else:
    print_module(module, debug_info=True, large_elements_limit=16)
print("ok")
"""
OPERATIONS = {
    "check": "the check: writer, 1/8 stack",
    "writer": "writer, whole stack",
    "printer": "printer with debug info, whole stack",
}


def survives(kind: str, depth: int, operation: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", TRY, kind, str(depth), operation],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode == 0 and done.stdout.strip() == "ok"


def first_failure(kind: str, operation: str) -> str:
    """`(last depth that ran, first that did not]`, or `> max` when all ran."""
    last = 0
    for depth in DEPTHS:
        if not survives(kind, depth, operation):
            return f"{last:,}-{depth:,}"
        last = depth
    return f"> {DEPTHS[-1]:,}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="nesting depths MLIR's printer and writer take")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for kind in ("type", "attribute", "location", "region"):
        cells = [first_failure(kind, operation) for operation in OPERATIONS]
        rows.append(f"| {kind} | " + " | ".join(cells) + " |")
        print(rows[-1], file=sys.stderr)
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    text = "\n".join(
        [
            "",
            "## How deep a nest the reading child's check lets through",
            "",
            "The child that reads bytecode for `convcanon-opt` checks that the module nests no"
            " deeper than the command can print or write: it writes the module back as bytecode"
            " on a thread with an eighth of its stack, where a stack overflow kills the child"
            " (a diagnostic), not the command. Depth at which each dies (last depth that ran -"
            " first that did not; a fresh process per try; the nest built through jaxlib's API;"
            " a location nest is a chain of call sites, a region nest nested `builtin.module`s):",
            f"Generated by `python bench/bench_nesting.py` on: {environment()}; stack limit"
            f" {stack} bytes.",
            "",
            "| nest | " + " | ".join(OPERATIONS.values()) + " |",
            "|---|---:|---:|---:|",
            *rows,
            "",
        ]
    )
    print(text)
    if not args.no_write:
        results = BENCH / "RESULTS_reader.md"
        old = results.read_text() if results.exists() else ""
        head = old.split("\n## How deep a nest", 1)[0].rstrip("\n") + "\n"
        results.write_text(head + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
