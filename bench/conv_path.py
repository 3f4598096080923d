"""How many functions one conv passes through on its way from the pass entry to its ops.

The path of a conv is every project function on the call stack when a plan record is built, a
step of its emitted program is made, or an op of its rewrite is created: the profiler's view of
"match -> config -> plan -> emit". Helpers it calls and returns from before any of these happen
(readers, caches, properties) are not on it.

Run from the repository root with the venv's python, for any checkout's src:

    PYTHONPATH=src python bench/conv_path.py             # a 3x3/2 SAME conv
    PYTHONPATH=src python bench/conv_path.py --transposed  # a 2x2/2 transposed conv
    PYTHONPATH=OTHER/src python bench/conv_path.py --list  # another tree, every function named

It prints the count of functions and files on the path and the deepest stack among them.
"""

from __future__ import annotations

import argparse
import sys
from types import FrameType
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

PROJECT = "/convcanon/"


def _program(transposed: bool) -> str:
    """A one-conv StableHLO module as JAX exports it."""
    dims = ("NHWC", "HWIO", "NHWC")
    if transposed:

        def up(x: jax.Array, w: jax.Array) -> jax.Array:
            return lax.conv_transpose(x, w, (2, 2), "VALID", dimension_numbers=dims)

        args = (jnp.zeros((1, 8, 8, 8)), jnp.zeros((2, 2, 8, 16)))
        return jax.jit(up).lower(*args).as_text()

    def down(x: jax.Array, w: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dims)

    args = (jnp.zeros((1, 16, 16, 8)), jnp.zeros((3, 3, 8, 16)))
    return jax.jit(down).lower(*args).as_text()


def _project_name(frame: FrameType) -> tuple[str, str] | None:
    name = frame.f_code.co_filename
    if PROJECT not in name:
        return None
    return name.split(PROJECT, 1)[1], frame.f_code.co_qualname


class _PathRecorder:
    """A profile hook that keeps the pass's stack and records its project frames at each plan
    record built (a `NamedTuple` of convcanon.hlo) and each program step made (`Step`);
    `_record_ops` records each op created."""

    def __init__(self) -> None:
        self.stack: list[FrameType] = []
        self.active = False
        self.path: set[tuple[str, str]] = set()
        self.depth = 0

    def record(self) -> None:
        names = [n for n in map(_project_name, self.stack) if n is not None]
        self.path.update(names)
        self.depth = max(self.depth, len(names))

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        entry = code.co_name == "canonicalize" and code.co_filename.endswith("hlo/passes.py")
        if event == "call":
            if entry:
                self.active = True
                self.stack.clear()
            if not self.active:
                return
            self.stack.append(frame)
            if code.co_qualname == "Step.__init__" and "/convcanon/hlo/" in code.co_filename:
                self.record()  # a step of the emitted program
            elif code.co_filename == "<string>" and "_cls" in frame.f_locals:
                if str(getattr(frame.f_locals["_cls"], "__module__", "")).startswith(
                    "convcanon.hlo."
                ):
                    self.record()
        elif event == "return" and self.active:
            if self.stack:
                self.stack.pop()
            if entry:
                self.active = False


def _record_ops(recorder: _PathRecorder) -> None:
    """Record the stack at each op created: `ir.Operation.create` is a nanobind function, which
    the profiler does not report, so it is wrapped in a Python function that records."""
    from jaxlib.mlir import ir

    create = ir.Operation.create

    def recorded(*args: Any, **kwargs: Any) -> Any:
        if recorder.active:
            recorder.record()
        return create(*args, **kwargs)

    ir.Operation.create = staticmethod(recorded)  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the functions on one conv's path")
    parser.add_argument("--transposed", action="store_true", help="a 2x2/2 transposed conv")
    parser.add_argument("--list", action="store_true", help="name every function on the path")
    args = parser.parse_args(argv)
    import convcanon

    text = _program(args.transposed)
    recorder = _PathRecorder()
    _record_ops(recorder)
    sys.setprofile(recorder)
    try:
        convcanon.canonicalize_conv(text)
    finally:
        sys.setprofile(None)
    files = {f for f, _ in recorder.path}
    print(f"{len(recorder.path)} functions in {len(files)} files, deepest stack {recorder.depth}")
    if args.list:
        for file, name in sorted(recorder.path):
            print(f"  {file}: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
