"""Generate synthetic StableHLO modules of exactly N ops (1k..100k) for the benchmarks.

Real exports top out at a few thousand ops; the compile-time target is about scaling, so we need
modules of 100k ops that still look like what JAX prints. Two kinds:

- `conv-dense` (`synthetic_module`): a conv stress test, ~22% convolutions (89% of them padded, a
  third strided): residual blocks of convolutions with strides, asymmetric padding, rhs dilation
  and transposed (lhs-dilated) convs, bias adds (broadcast_in_dim + add) and relus (`maximum` with
  a broadcast zero constant), all in one `func.func`, weights as function arguments shared across
  blocks. 4x denser in convs than ResNet-50, so the rewrite's output dominates.
- `resnet-mix` (`resnet_mix_module`): the flax ResNet-50 export's `main` body (53 convs in 975
  ops, 17 padded, 7 strided) repeated with renamed values until N ops, the copies' logits summed:
  ResNet-50's exact op mix and conv configurations at any size.

Run: python bench/synthetic.py N [OUT] [--seed S] [--kind conv-dense|resnet-mix]
(prints to stdout without OUT)
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

H = 32  # spatial extent every block starts and ends with
C = 16  # channels
F32 = "f32"

_PRECISION = "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]"

# Weight arguments shared by all blocks: name -> (kh, kw, cin, cout).
WEIGHTS = {
    "%arg0": (3, 3, C, C),
    "%arg1": (3, 3, C, C),
    "%arg2": (1, 1, C, C),
    "%arg3": (2, 2, C, C),
    "%arg4": (7, 7, C, C),
}
BIAS = "%arg5"  # tensor<16xf32>
INPUT = "%arg6"  # tensor<1x32x32x16xf32>


def act(h: int) -> str:
    return f"tensor<1x{h}x{h}x{C}x{F32}>"


def kernel_type(name: str) -> str:
    kh, kw, ci, co = WEIGHTS[name]
    return f"tensor<{kh}x{kw}x{ci}x{co}x{F32}>"


class Emitter:
    """Appends ops with fresh SSA names and counts them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.next_id = 0

    @property
    def count(self) -> int:
        return len(self.lines)

    def emit(self, rhs: str) -> str:
        name = f"%{self.next_id}"
        self.next_id += 1
        self.lines.append(f"    {name} = {rhs}")
        return name

    def conv(
        self,
        x: str,
        w: str,
        h_in: int,
        h_out: int,
        stride: int = 1,
        pad: tuple[int, int] = (0, 0),
        lhs_dilate: int = 1,
        rhs_dilate: int = 1,
    ) -> str:
        window = (
            f"stride = [{stride}, {stride}], pad = [[{pad[0]}, {pad[1]}], [{pad[0]}, {pad[1]}]], "
            f"lhs_dilate = [{lhs_dilate}, {lhs_dilate}], rhs_dilate = [{rhs_dilate}, {rhs_dilate}],"
            " reverse = [false, false]"
        )
        kh = WEIGHTS[w][0]
        dilated_in = (h_in - 1) * lhs_dilate + 1 + pad[0] + pad[1]
        expected = (dilated_in - ((kh - 1) * rhs_dilate + 1)) // stride + 1
        assert expected == h_out, (w, h_in, stride, pad, lhs_dilate, rhs_dilate, expected, h_out)
        return self.emit(
            f"stablehlo.convolution({x}, {w}) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
            f"[b, 0, 1, f], window = {{{window}}} {{batch_group_count = 1 : i64, "
            f"feature_group_count = 1 : i64, {_PRECISION}}} : "
            f"({act(h_in)}, {kernel_type(w)}) -> {act(h_out)}"
        )

    def bias_add(self, x: str, h: int) -> str:
        b = self.emit(
            f"stablehlo.broadcast_in_dim {BIAS}, dims = [3] : (tensor<{C}x{F32}>) -> {act(h)}"
        )
        return self.emit(f"stablehlo.add {x}, {b} : {act(h)}")

    def relu(self, x: str, h: int) -> str:
        zero = self.emit(f"stablehlo.constant dense<0.000000e+00> : tensor<{F32}>")
        z = self.emit(f"stablehlo.broadcast_in_dim {zero}, dims = [] : (tensor<{F32}>) -> {act(h)}")
        return self.emit(f"stablehlo.maximum {x}, {z} : {act(h)}")

    def add(self, x: str, y: str, h: int) -> str:
        return self.emit(f"stablehlo.add {x}, {y} : {act(h)}")


def basic_block(e: Emitter, x: str) -> str:
    """3x3 pad 1, bias, relu, 3x3 pad 1, residual add, relu (unit stride: gate skips both)."""
    y = e.relu(e.bias_add(e.conv(x, "%arg0", H, H, pad=(1, 1)), H), H)
    y = e.conv(y, "%arg1", H, H, pad=(1, 1))
    return e.relu(e.add(y, x, H), H)


def down_up_block(e: Emitter, x: str) -> str:
    """3x3 stride 2 with asymmetric pad (TF SAME), relu, transposed 3x3 (lhs dilation 2) back up."""
    half = H // 2
    y = e.relu(e.bias_add(e.conv(x, "%arg0", H, half, stride=2, pad=(0, 1)), half), half)
    y = e.conv(y, "%arg1", half, H, pad=(1, 2), lhs_dilate=2)
    return e.relu(e.add(y, x, H), H)


def projection_block(e: Emitter, x: str) -> str:
    """1x1 stride 2 projection, dilated 3x3, 2x2 transposed conv back up, residual."""
    half = H // 2
    y = e.conv(x, "%arg2", H, half, stride=2)
    y = e.relu(e.conv(y, "%arg1", half, half, pad=(2, 2), rhs_dilate=2), half)
    y = e.conv(y, "%arg3", half, H, pad=(1, 1), lhs_dilate=2)
    return e.relu(e.add(y, x, H), H)


def stem_block(e: Emitter, x: str) -> str:
    """7x7 stride 2 pad 3 (a ResNet stem), relu, 2x2 transposed conv back up, residual."""
    half = H // 2
    y = e.relu(e.conv(x, "%arg4", H, half, stride=2, pad=(3, 3)), half)
    y = e.conv(y, "%arg3", half, H, pad=(1, 1), lhs_dilate=2)
    return e.relu(e.add(y, x, H), H)


BLOCKS: tuple[Callable[[Emitter, str], str], ...] = (
    basic_block,
    down_up_block,
    projection_block,
    stem_block,
)
LARGEST_BLOCK = 16  # ops; no block emits more


def synthetic_module(n_ops: int, seed: int = 0) -> str:
    """A module whose one function has exactly `n_ops` ops (the `return` included)."""
    if n_ops < LARGEST_BLOCK + 2:
        raise ValueError(f"n_ops must be at least {LARGEST_BLOCK + 2}")
    rng = random.Random(seed)
    e = Emitter()
    x = INPUT
    while e.count + LARGEST_BLOCK < n_ops - 1:
        x = rng.choice(BLOCKS)(e, x)
    while e.count < n_ops - 1:  # top up with relus on the last value: exact op count
        x = e.emit(f"stablehlo.maximum {x}, {x} : {act(H)}")
    args = [f"{name}: {kernel_type(name)}" for name in WEIGHTS]
    args += [f"{BIAS}: tensor<{C}x{F32}>", f"{INPUT}: {act(H)}"]
    header = (
        "module @jit_synthetic attributes {mhlo.num_partitions = 1 : i32, "
        "mhlo.num_replicas = 1 : i32} {\n"
        f"  func.func public @main({', '.join(args)}) -> "
        f'({act(H)} {{jax.result_info = "result"}}) {{\n'
    )
    body = "\n".join(e.lines)
    return f"{header}{body}\n    return {x} : {act(H)}\n  }}\n}}\n"


RESNET = Path(__file__).resolve().parent / "models" / "resnet50.stablehlo.mlir"
_VALUE = re.compile(r"%([A-Za-z_][\w$.]*|\d+)")


def _split_main(text: str) -> tuple[str, list[str], str, str, list[str]]:
    """(module header through `@main`'s signature, main's body lines without `return`, the
    returned value, its type, the lines after main: the private helper functions and closers)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "func.func public @main(" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("return "))
    ret = lines[end].strip().removeprefix("return ")
    value, _, ty = ret.partition(" : ")
    header = "\n".join(lines[: start + 1])
    return header, lines[start + 1 : end], value, ty, lines[end + 1 :]


def resnet_mix_module(n_ops: int, resnet_text: str | None = None) -> str:
    """ResNet-50's `main` repeated to exactly `n_ops` ops in function bodies (helpers included).

    Copy k renames every value of main's body except main's arguments to `%r{k}_name`; each copy's
    result is added to a running sum (one `add` per copy); `maximum` ops on the sum top up."""
    text = RESNET.read_text() if resnet_text is None else resnet_text
    header, body, result, ty, tail = _split_main(text)
    n_args = len(re.findall(r"%arg\d+:", header.splitlines()[-1]))
    main_args = {f"arg{i}" for i in range(n_args)}
    helper_ops = sum(
        1 for line in tail if line.lstrip().startswith(("%", "return", "stablehlo.return"))
    )
    body_ops = sum(
        1 for line in body if line.lstrip().startswith(("%", "return", "stablehlo.return"))
    )
    per_copy = body_ops + 1  # the copy's ops and its `add` into the sum (the first has none)
    budget = n_ops - helper_ops - 1  # main's `return`
    if budget < body_ops:
        raise ValueError(f"n_ops must be at least {body_ops + helper_ops + 1}")
    copies = 1 + (budget - body_ops) // per_copy
    out = [header]
    total = ""
    for k in range(copies):

        def rename(m: re.Match[str], k: int = k) -> str:
            name = m.group(1)
            return m.group(0) if name in main_args else f"%r{k}_{name}"

        out += [_VALUE.sub(rename, line) for line in body]
        value = _VALUE.sub(rename, result)
        if k == 0:
            total = value
        else:
            out.append(f"    %sum{k} = stablehlo.add {total}, {value} : {ty}")
            total = f"%sum{k}"
    emitted = body_ops * copies + (copies - 1)
    for i in range(budget - emitted):  # top up: exact op count
        out.append(f"    %top{i} = stablehlo.maximum {total}, {total} : {ty}")
        total = f"%top{i}"
    out.append(f"    return {total} : {ty}")
    out += tail
    return "\n".join(out) + "\n"


def write_synthetic(n_ops: int, path: Path, seed: int = 0, kind: str = "conv-dense") -> Path:
    """Write the module unless an identical one is there already (generation is cached by name)."""
    text = synthetic_module(n_ops, seed) if kind == "conv-dense" else resnet_mix_module(n_ops)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write a synthetic N-op StableHLO module")
    parser.add_argument("n_ops", type=int)
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kind", choices=("conv-dense", "resnet-mix"), default="conv-dense")
    args = parser.parse_args(argv)
    if args.out is None:
        dense = args.kind == "conv-dense"
        text = synthetic_module(args.n_ops, args.seed) if dense else resnet_mix_module(args.n_ops)
        sys.stdout.write(text)
    else:
        write_synthetic(args.n_ops, args.out, args.seed, args.kind)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
