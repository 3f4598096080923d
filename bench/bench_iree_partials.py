"""Exact forms of one 3x3/2 conv, timed paired against it: where IREE CPU's time goes (issue 30).

A canonical 3x3/2 conv is four unit-stride partial convs on the four phases of the padded lhs,
with kernels 2x2, 2x1, 1x2 and 1x1. This bench writes the conv (NHWC/HWIO, SAME padding
[[0, 1], [0, 1]], batch 1, weights as arguments or constants) in hand-made exact variants: the
pass's own forms (`engine=generic`, `engine=iree-cpu`, `merge-phases=pad-kernel`), the partials'
operands materialised behind `optimization_barrier`s, lhs or kernel phases from a space-to-depth
reshape and transpose instead of strided slices, the sum as a tree or as one reduce, NCHW
partials, line kernels (2x1, 1x2) split into one 1x1 conv per tap or into one 1x1 conv over taps
joined on the features, every tap outside the 2x2 phase joined so (two partial convs), and a
whole im2col. `alone-*` modules are single partial convs with their
phase as an argument, and the 2x1 one in other layouts. Every variant's result is checked
against the original's on the same engine, then N paired samples: each module runs back to back
for >= 50 ms, in an order that alternates; a variant's ratio is the median over samples of its
time / the original's in the same sample. Dispatches per run are the IREE compiler's statistics.

Run: python bench/bench_iree_partials.py [--engine iree|xla] [--convs 32x32x64 ...]
       [--weights arguments constants] [--variants NAME ...] [--samples 7] [--list]
Prints one markdown table per conv and weights; writes nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runtime import loadavg, paired_on, signature_inputs  # noqa: E402
from runtime.engines import compile_on  # noqa: E402

Shape = list[int]
NHWC = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
NCHW = "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]"
PHASES = ((0, 0), (0, 1), (1, 0), (1, 1))
TAPS = {0: 2, 1: 1}  # a 3x3/2 kernel's taps in phase 0 and 1 of a dim


def tensor(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


class Conv(NamedTuple):
    """The conv: a 1 x h x h x c lhs, a 3x3xcxf kernel, stride 2, SAME padding."""

    h: int
    c: int
    f: int
    weights: str  # arguments | constants

    @property
    def out(self) -> int:
        return self.h // 2

    @property
    def label(self) -> str:
        return f"1x{self.h}x{self.h}x{self.c} * 3x3x{self.c}x{self.f}, weights as {self.weights}"


class Module:
    """A StableHLO @main written op by op."""

    def __init__(self, conv: Conv) -> None:
        self.conv = conv
        self.lines: list[str] = []
        self.count = 0
        args = [f"%x: {tensor([1, conv.h, conv.h, conv.c])}"]
        kernel = [3, 3, conv.c, conv.f]
        if conv.weights == "arguments":
            args.append(f"%w: {tensor(kernel)}")
        else:
            values = np.random.default_rng(0).standard_normal(kernel).astype(np.float32)
            hexed = values.tobytes().hex().upper()
            self.lines.append(f'%w = stablehlo.constant dense<"0x{hexed}"> : {tensor(kernel)}')
        self.lines.append("%zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>")
        self.signature = ", ".join(args)

    def op(self, text: str, types: str) -> str:
        self.count += 1
        name = f"%v{self.count}"
        self.lines.append(f"{name} = {text} : {types}")
        return name

    def text(self, result: str, shape: Shape) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        ty = tensor(shape)
        return (
            f"func.func @main({self.signature}) -> {ty} {{\n{body}    return {result} : {ty}\n}}\n"
        )

    def conv_op(
        self,
        lhs: tuple[str, Shape],
        rhs: tuple[str, Shape],
        out: Shape,
        stride: int = 1,
        pad: tuple[int, int] = (0, 0),
        dims: str = NHWC,
    ) -> str:
        window = (
            f"stride = [{stride}, {stride}], pad = [[{pad[0]}, {pad[1]}], [{pad[0]}, {pad[1]}]]"
        )
        groups = "batch_group_count = 1 : i64, feature_group_count = 1 : i64"
        return self.op(
            f"stablehlo.convolution({lhs[0]}, {rhs[0]}) dim_numbers = {dims}, "
            f"window = {{{window}}} {{{groups}}}",
            f"({tensor(lhs[1])}, {tensor(rhs[1])}) -> {tensor(out)}",
        )

    def pad(self, x: tuple[str, Shape], high: Shape) -> tuple[str, Shape]:
        value, shape = x
        out = [s + h for s, h in zip(shape, high, strict=True)]
        zeros = [0] * len(shape)
        text = f"stablehlo.pad {value}, %zero, low = {zeros}, high = {high}, interior = {zeros}"
        return self.op(text, f"({tensor(shape)}, tensor<f32>) -> {tensor(out)}"), out

    def slice(self, x: tuple[str, Shape], spec: list[tuple[int, int, int]]) -> tuple[str, Shape]:
        value, shape = x
        out = [len(range(a, b, s)) for a, b, s in spec]
        text = ", ".join(f"{a}:{b}" + (f":{s}" if s != 1 else "") for a, b, s in spec)
        return self.op(
            f"stablehlo.slice {value} [{text}]", f"({tensor(shape)}) -> {tensor(out)}"
        ), out

    def reshape(self, x: tuple[str, Shape], out: Shape) -> tuple[str, Shape]:
        return self.op(f"stablehlo.reshape {x[0]}", f"({tensor(x[1])}) -> {tensor(out)}"), out

    def transpose(self, x: tuple[str, Shape], perm: Shape) -> tuple[str, Shape]:
        out = [x[1][i] for i in perm]
        text = f"stablehlo.transpose {x[0]}, dims = {perm}"
        return self.op(text, f"({tensor(x[1])}) -> {tensor(out)}"), out

    def barrier(self, values: list[tuple[str, Shape]]) -> list[tuple[str, Shape]]:
        names = [f"%b{self.count}_{i}" for i in range(len(values))]
        self.count += 1
        operands = ", ".join(v for v, _ in values)
        types = ", ".join(tensor(s) for _, s in values)
        self.lines.append(
            f"{', '.join(names)} = stablehlo.optimization_barrier {operands} : {types}"
        )
        return [(n, s) for n, (_, s) in zip(names, values, strict=True)]

    def concatenate(self, values: list[str], shape: Shape, axis: int) -> tuple[str, Shape]:
        out = list(shape)
        out[axis] *= len(values)
        types = ", ".join([tensor(shape)] * len(values))
        text = f"stablehlo.concatenate {', '.join(values)}, dim = {axis}"
        return self.op(text, f"({types}) -> {tensor(out)}"), out


def original(conv: Conv) -> str:
    m = Module(conv)
    out = [1, conv.out, conv.out, conv.f]
    kernel = ("%w", [3, 3, conv.c, conv.f])
    result = m.conv_op(("%x", [1, conv.h, conv.h, conv.c]), kernel, out, stride=2, pad=(0, 1))
    return m.text(result, out)


class Form(NamedTuple):
    """How a hand-made exact variant writes the four phases."""

    lhs: str = "slices"  # slices | space-to-depth
    kernel: str = "slices"  # slices | space-to-depth
    barrier: str = ""  # materialised behind a barrier: l (lhs phases), k (kernel phases)
    total: str = "chain"  # chain | tree | reduce
    layout: str = "nhwc"  # nhwc | nchw (each partial between transposes)
    lines: str = "conv"  # conv | taps | joined: how a 2x1 or 1x2 phase is computed


def phases(conv: Conv, form: Form) -> str:
    m = Module(conv)
    h, c, f, o = conv.h, conv.c, conv.f, conv.out
    length = {p: o + TAPS[p] - 1 for p in (0, 1)}
    x: tuple[str, Shape] = ("%x", [1, h, h, c])
    w: tuple[str, Shape] = ("%w", [3, 3, c, f])
    lhs: dict[tuple[int, int], tuple[str, Shape]] = {}
    if form.lhs == "slices":
        padded = m.pad(x, [0, 1, 1, 0])
        for p, q in PHASES:
            rows, cols = (p, p + 2 * length[p] - 1, 2), (q, q + 2 * length[q] - 1, 2)
            lhs[p, q] = m.slice(padded, [(0, 1, 1), rows, cols, (0, c, 1)])
    else:
        split = m.reshape(m.pad(x, [0, 2, 2, 0]), [1, o + 1, 2, o + 1, 2, c])
        folded = m.transpose(split, [0, 2, 4, 1, 3, 5])  # [1, p, q, rows, cols, c]
        for p, q in PHASES:
            spec = [(0, 1, 1), (p, p + 1, 1), (q, q + 1, 1), (0, length[p], 1), (0, length[q], 1)]
            lhs[p, q] = m.reshape(m.slice(folded, [*spec, (0, c, 1)]), [1, length[p], length[q], c])
    kernels: dict[tuple[int, int], tuple[str, Shape]] = {}
    if form.kernel == "slices":
        for p, q in PHASES:
            kernels[p, q] = m.slice(w, [(p, 3, 2), (q, 3, 2), (0, c, 1), (0, f, 1)])
    else:
        split = m.reshape(m.pad(w, [1, 1, 0, 0]), [2, 2, 2, 2, c, f])  # [a, p, b, q]
        folded = m.transpose(split, [1, 3, 0, 2, 4, 5])
        for p, q in PHASES:
            spec = [(p, p + 1, 1), (q, q + 1, 1), (0, TAPS[p], 1), (0, TAPS[q], 1)]
            kernels[p, q] = m.reshape(
                m.slice(folded, [*spec, (0, c, 1), (0, f, 1)]), [TAPS[p], TAPS[q], c, f]
            )
    if "l" in form.barrier:
        lhs = dict(zip(PHASES, m.barrier([lhs[pq] for pq in PHASES]), strict=True))
    if "k" in form.barrier:
        kernels = dict(zip(PHASES, m.barrier([kernels[pq] for pq in PHASES]), strict=True))
    out = [1, o, o, f]
    partials: list[str] = []
    for pq in PHASES:
        a, b = lhs[pq], kernels[pq]
        kh, kw = b[1][0], b[1][1]
        if form.lines != "conv" and min(kh, kw) == 1 < max(kh, kw):
            taps = [(i, j) for i in range(kh) for j in range(kw)]
            shifted = [
                m.slice(a, [(0, 1, 1), (i, i + o, 1), (j, j + o, 1), (0, c, 1)]) for i, j in taps
            ]
            if form.lines == "taps":
                for (i, j), s in zip(taps, shifted, strict=True):
                    tap = m.slice(b, [(i, i + 1, 1), (j, j + 1, 1), (0, c, 1), (0, f, 1)])
                    partials.append(m.conv_op(s, tap, out))
            else:
                joined = m.concatenate([v for v, _ in shifted], [1, o, o, c], 3)
                partials.append(m.conv_op(joined, m.reshape(b, [1, 1, len(taps) * c, f]), out))
            continue
        if form.layout == "nchw":
            y = m.conv_op(
                m.transpose(a, [0, 3, 1, 2]), m.transpose(b, [3, 2, 0, 1]), [1, f, o, o], dims=NCHW
            )
            partials.append(m.transpose((y, [1, f, o, o]), [0, 2, 3, 1])[0])
        else:
            partials.append(m.conv_op(a, b, out))
    return m.text(_total(m, partials, out, form.total), out)


def _total(m: Module, partials: list[str], out: Shape, how: str) -> str:
    if how == "reduce":
        stacked = m.concatenate([m.reshape((y, out), [1, *out])[0] for y in partials], [1, *out], 0)
        n = len(partials)
        return m.op(
            f"stablehlo.reduce({stacked[0]} init: %zero) applies stablehlo.add"
            " across dimensions = [0]",
            f"({tensor([n, *out])}, tensor<f32>) -> {tensor(out)}",
        )
    while len(partials) > 1:
        if how == "chain":
            partials = [
                m.op(f"stablehlo.add {partials[0]}, {partials[1]}", tensor(out)),
                *partials[2:],
            ]
        else:
            pairs = [partials[i : i + 2] for i in range(0, len(partials), 2)]
            partials = [
                m.op(f"stablehlo.add {a[0]}, {a[1]}", tensor(out)) if len(a) == 2 else a[0]
                for a in pairs
            ]
    return partials[0]


def _tap_slices_joined(
    m: Module, conv: Conv, padded: tuple[str, Shape], taps: list[tuple[int, int]]
) -> tuple[str, Shape]:
    """The strided slice each tap (i, j) of the 3x3/2 window reads, joined on the features."""
    c, o = conv.c, conv.out
    slices = [
        m.slice(padded, [(0, 1, 1), (i, i + 2 * o - 1, 2), (j, j + 2 * o - 1, 2), (0, c, 1)])[0]
        for i, j in taps
    ]
    return m.concatenate(slices, [1, o, o, c], 3)


def im2col(conv: Conv) -> str:
    """The nine taps' strided slices joined on the features, one 1x1 conv."""
    m = Module(conv)
    c, o = conv.c, conv.out
    padded = m.pad(("%x", [1, conv.h, conv.h, c]), [0, 1, 1, 0])
    joined = _tap_slices_joined(m, conv, padded, [(i, j) for i in range(3) for j in range(3)])
    kernel = m.reshape(("%w", [3, 3, c, conv.f]), [1, 1, 9 * c, conv.f])
    out = [1, o, o, conv.f]
    return m.text(m.conv_op(joined, kernel, out), out)


def taps_joined(conv: Conv) -> str:
    """The 2x2 phase as a conv; the other five taps (both line phases' and the 1x1 phase's) as
    strided slices joined on the features, one 1x1 conv: two partial convs, neither with a unit
    kernel dim beside a wider one, at the floor."""
    m = Module(conv)
    c, f, o = conv.c, conv.f, conv.out
    padded = m.pad(("%x", [1, conv.h, conv.h, c]), [0, 1, 1, 0])
    w: tuple[str, Shape] = ("%w", [3, 3, c, f])
    corner = m.slice(padded, [(0, 1, 1), (0, 2 * o + 1, 2), (0, 2 * o + 1, 2), (0, c, 1)])
    corner_kernel = m.slice(w, [(0, 3, 2), (0, 3, 2), (0, c, 1), (0, f, 1)])
    out = [1, o, o, f]
    taps = [(0, 1), (2, 1), (1, 0), (1, 2), (1, 1)]
    kernels = [m.slice(w, [(i, i + 1, 1), (j, j + 1, 1), (0, c, 1), (0, f, 1)])[0] for i, j in taps]
    joined = _tap_slices_joined(m, conv, padded, taps)
    kernel = m.concatenate(kernels, [1, 1, c, f], 2)
    partials = [m.conv_op(corner, corner_kernel, out), m.conv_op(joined, kernel, out)]
    return m.text(_total(m, partials, out, "chain"), out)


def pass_form(options: str) -> Callable[[Conv], str]:
    def build(conv: Conv) -> str:
        from convcanon import canonicalize_conv

        kwargs = {k.replace("-", "_"): v for k, v in (kv.split("=") for kv in options.split())}
        return canonicalize_conv(original(conv), "stablehlo", gate="general", **kwargs).text

    return build


def alone(kernel: tuple[int, int], how: str = "conv") -> Callable[[Conv], str]:
    """One phase's partial conv with its phase as an argument (its slice's extents); the 2x1 one
    also with the spatial dims swapped in the dimension numbers, between transposes, as a 1-D
    conv over the rows, or as its two 1x1 convs."""

    def build(conv: Conv) -> str:
        kh, kw = kernel
        o, c, f = conv.out, conv.c, conv.f
        lhs, rhs, out = [1, o + kh - 1, o + kw - 1, c], [kh, kw, c, f], [1, o, o, f]
        m = Module(conv._replace(weights="arguments"))
        m.signature = f"%x: {tensor(lhs)}, %w: {tensor(rhs)}"
        m.lines = m.lines[-1:]
        x, w = ("%x", lhs), ("%w", rhs)
        if how == "swapped":
            y = m.conv_op(x, w, out, dims="[b, 1, 0, f]x[1, 0, i, o]->[b, 1, 0, f]")
        elif how == "transposed":
            t = m.conv_op(m.transpose(x, [0, 2, 1, 3]), m.transpose(w, [1, 0, 2, 3]), out)
            y = m.transpose((t, out), [0, 2, 1, 3])[0]
        elif how == "rows":
            rows = m.reshape(x, lhs[1:])
            taps = m.reshape(w, [kh, c, f])
            t = m.op(
                f"stablehlo.convolution({rows[0]}, {taps[0]}) dim_numbers = [0, b, f]x[0, i, o]"
                "->[0, b, f], window = {stride = [1], pad = [[0, 0]]} "
                "{batch_group_count = 1 : i64, feature_group_count = 1 : i64}",
                f"({tensor(rows[1])}, {tensor(taps[1])}) -> {tensor(out[1:])}",
            )
            y = m.reshape((t, out[1:]), out)[0]
        elif how == "taps":
            parts = [
                m.conv_op(
                    m.slice(x, [(0, 1, 1), (i, i + o, 1), (0, o, 1), (0, c, 1)]),
                    m.slice(w, [(i, i + 1, 1), (0, 1, 1), (0, c, 1), (0, f, 1)]),
                    out,
                )
                for i in range(kh)
            ]
            y = _total(m, parts, out, "chain")
        else:
            y = m.conv_op(x, w, out)
        return m.text(y, out)

    return build


VARIANTS: dict[str, Callable[[Conv], str]] = {
    "original": original,
    "engine=generic": pass_form("engine=generic merge-phases=exact"),
    "engine=iree-cpu": pass_form("engine=iree-cpu merge-phases=exact"),
    "merge-phases=pad-kernel": pass_form("engine=generic merge-phases=pad-kernel"),
    "engine=xla-cpu": pass_form("engine=xla-cpu merge-phases=exact"),
    "engine=xla-cpu merge-phases=pad-kernel": pass_form("engine=xla-cpu merge-phases=pad-kernel"),
    "engine=iree-cpu merge-phases=pad-kernel": pass_form("engine=iree-cpu merge-phases=pad-kernel"),
    "barrier-lhs": lambda conv: phases(conv, Form(barrier="l")),
    "barrier-kernel": lambda conv: phases(conv, Form(barrier="k")),
    "barrier-both": lambda conv: phases(conv, Form(barrier="lk")),
    "lhs-space-to-depth": lambda conv: phases(conv, Form(lhs="space-to-depth")),
    "kernel-space-to-depth": lambda conv: phases(conv, Form(kernel="space-to-depth")),
    "both-space-to-depth": lambda conv: phases(conv, Form("space-to-depth", "space-to-depth")),
    "sum-tree": lambda conv: phases(conv, Form(total="tree")),
    "sum-reduce": lambda conv: phases(conv, Form(total="reduce")),
    "nchw-partials": lambda conv: phases(conv, Form(layout="nchw")),
    "lines-as-taps": lambda conv: phases(conv, Form(lines="taps")),
    "lines-as-taps-sum-tree": lambda conv: phases(conv, Form(lines="taps", total="tree")),
    "lines-joined": lambda conv: phases(conv, Form(lines="joined")),
    "im2col": im2col,
    "taps-joined": taps_joined,
    "alone-2x2": alone((2, 2)),
    "alone-2x1": alone((2, 1)),
    "alone-1x2": alone((1, 2)),
    "alone-1x1": alone((1, 1)),
    "alone-2x1-swapped": alone((2, 1), "swapped"),
    "alone-2x1-transposed": alone((2, 1), "transposed"),
    "alone-2x1-rows": alone((2, 1), "rows"),
    "alone-2x1-taps": alone((2, 1), "taps"),
}


def parse_conv(text: str, weights: str) -> Conv:
    h, c, f = (int(v) for v in text.split("x"))
    return Conv(h, c, f, weights)


def measure(engine: str, conv: Conv, names: list[str], samples: int) -> str:
    texts = [VARIANTS[n](conv) for n in ["original", *names]]
    modules = [compile_on(engine, t) for t in texts]
    inputs = [signature_inputs(t) for t in texts]
    buffers: list[list[Any]] = [m.device_inputs(x) for m, x in zip(modules, inputs, strict=True)]
    expected = modules[0].host(modules[0].run(buffers[0]))[0]
    for name, module, args in zip(names, modules[1:], buffers[1:], strict=True):
        if not name.startswith("alone-"):
            got = module.host(module.run(args))[0]
            error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
            assert error < 1e-4, f"{name}: relative error {error:.1e}"
    before = loadavg()
    timing = paired_on(modules, buffers, samples, 0.05)
    rows = [
        f"### {conv.label} on {engine}: {samples} paired samples, load {before} -> {loadavg()}",
        "",
        "| variant | us per run | dispatches | / original |",
        "|---|---:|---:|---:|",
    ]
    for i, (name, module) in enumerate(zip(["original", *names], modules, strict=True)):
        us = 1e6 * statistics.median(s[i] for s in timing.samples)
        dispatches = module.stats.get("dispatches", "-")
        rows.append(f"| {name} | {us:.0f} | {dispatches} | x{timing.median_ratio(i):.2f} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="IREE CPU run time of exact 3x3/2 conv forms")
    parser.add_argument("--engine", choices=["iree", "xla"], default="iree")
    parser.add_argument("--convs", nargs="+", default=["32x32x64"], help="HxCxF (default 32x32x64)")
    parser.add_argument(
        "--weights", nargs="+", choices=["arguments", "constants"], default=["arguments"]
    )
    parser.add_argument("--variants", nargs="+", choices=[n for n in VARIANTS if n != "original"])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--list", action="store_true", help="print the variants")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(VARIANTS))
        return 0
    names = args.variants or ["engine=generic", "engine=iree-cpu", "merge-phases=pad-kernel"]
    for weights in args.weights:
        for text in args.convs:
            print(measure(args.engine, parse_conv(text, weights), names, args.samples), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
