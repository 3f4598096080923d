"""Printing a parsed module through jaxlib's bindings: the ways there are, timed on one file.

`convcanon-opt` prints with `get_asm(binary=True)`: the bindings' printer hands Python one
chunk per token. The one path that prints in C++ to a buffered file is MLIR's IR-printing
instrumentation with a tree directory (`PassManager.enable_ir_printing(...,
tree_printing_dir_path=D)`, around a pass that leaves the printed form as it is). This measures
what that would save, and checks that it prints the same text after its one header line.

It is not used by the tool: the instrumentation writes files other than the named output, under
names taken from the module's symbol; it needs the context's threading off; and an I/O error on
its file ends the process in LLVM's fatal-error handler (on a full 1 MB tmpfs: "LLVM ERROR: IO
failure on output stream: No space left on device", exit 1, its directories left behind), where
the tool must give a diagnostic and leave nothing.

Run: python bench/bench_print_paths.py FILE [--reps 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from convcanon.hlo.context import ir, make_context, parse_module

HEADER = b"// -----// IR Dump Before "


def through_instrumentation(module: ir.Module) -> bytes:
    """The module as the IR-printing instrumentation writes it before `strip-debuginfo` runs,
    without its header line."""
    from jaxlib.mlir import passmanager  # after convcanon's context has loaded the bindings

    directory = tempfile.mkdtemp(prefix="convcanon-print-")
    try:
        manager = passmanager.PassManager.parse("builtin.module(strip-debuginfo)")
        manager.enable_verifier(False)
        manager.enable_ir_printing(
            print_before_all=True,
            print_after_all=False,
            print_module_scope=True,
            tree_printing_dir_path=directory,
        )
        manager.run(module.operation)
        (dump,) = Path(directory).rglob("*.mlir")
        header, _, body = dump.read_bytes().partition(b"\n")
        assert header.startswith(HEADER), header[:80]
        return body
    finally:
        shutil.rmtree(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time the ways to print a parsed module")
    parser.add_argument("file", type=Path)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    context = make_context()
    context.enable_multithreading(False)  # the instrumentation refuses to print otherwise
    text = args.file.read_text()
    with context:
        module = parse_module(text, str(args.file), context)
        ways = {
            "get_asm(binary=True) (the tool's)": lambda: module.operation.get_asm(
                binary=True, assume_verified=True
            ),
            "str()": lambda: str(module).encode(),
            "IR-printing instrumentation, tree dir": lambda: through_instrumentation(module),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        printed: dict[str, bytes] = {}
        for _ in range(args.reps):
            for name, way in ways.items():
                start = time.perf_counter()
                out = way()
                times[name].append(time.perf_counter() - start)
                printed[name] = bytes(out)
    tool = printed["get_asm(binary=True) (the tool's)"]
    print(f"{args.file}: {len(text):,} bytes in, {len(tool):,} printed; median of {args.reps}")
    for name, seconds in times.items():
        # the instrumentation ends its dump with one more newline than the printer
        same = printed[name].rstrip(b"\n") == tool.rstrip(b"\n")
        print(f"  {name}: {statistics.median(seconds):.3f} s, same text: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
