"""Build migraphx programs (MLIR text) with random layouts: permutations, gaps, broadcasts, size-1
dims. Used by the hand-written cases and by the hypothesis strategies."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

Lens = tuple[int, ...]


def layout_strides(
    lens: Sequence[int],
    order: Sequence[int] | None = None,
    gaps: Sequence[int] | None = None,
    broadcast: Sequence[int] = (),
) -> Lens:
    """Strides of `lens` stored with dims in `order` (outermost first), `gaps[d]` extra elements
    after dim d's extent, and stride 0 on the `broadcast` dims."""
    rank = len(lens)
    order = list(range(rank)) if order is None else list(order)
    gaps = [0] * rank if gaps is None else list(gaps)
    strides = [0] * rank
    running = 1
    for d in reversed(order):
        if d in broadcast:
            continue
        strides[d] = running
        running *= lens[d] + gaps[d]
    return tuple(strides)


def shaped(lens: Sequence[int], strides: Sequence[int], et: str = "f32") -> str:
    if not lens:
        return f"<{et}>"
    dims = "x".join(str(n) for n in lens)
    return f"<{dims}x{et}, {'x'.join(str(s) for s in strides)}>"


@dataclass(frozen=True)
class Val:
    name: str
    lens: Lens
    strides: Lens
    et: str = "f32"

    @property
    def type(self) -> str:
        return shaped(self.lens, self.strides, self.et)


@dataclass
class Program:
    args: list[Val] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    counter: int = 0

    def arg(
        self, lens: Sequence[int], strides: Sequence[int] | None = None, et: str = "f32"
    ) -> Val:
        lens = tuple(lens)
        value = Val(f"%arg{len(self.args)}", lens, tuple(strides or layout_strides(lens)), et)
        self.args.append(value)
        return value

    def op(
        self,
        name: str,
        operands: Sequence[Val],
        lens: Sequence[int],
        attrs: str = "",
        strides: Sequence[int] | None = None,
        et: str | None = None,
        keyword: str = "->",
    ) -> Val:
        lens = tuple(lens)
        out = Val(
            f"%{self.counter}",
            lens,
            tuple(strides) if strides is not None else layout_strides(lens),
            et or operands[0].et,
        )
        self.counter += 1
        attr_text = f" {{{attrs}}}" if attrs else ""
        ins = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        self.lines.append(
            f"    {out.name} = migraphx.{name} {ins}{attr_text} : {types} {keyword} {out.type}"
        )
        return out

    def literal(self, dense: str, lens: Sequence[int], strides: Sequence[int], et: str) -> Val:
        out = Val(f"%{self.counter}", tuple(lens), tuple(strides), et)
        self.counter += 1
        self.lines.append(f"    {out.name} = migraphx.literal({dense}) : {out.type}")
        return out

    def relayout(self, value: Val, strides: Sequence[int]) -> Val:
        """The same value with another result layout (an identity op, as MIGraphX would)."""
        return self.op("contiguous", [value], value.lens, strides=strides)

    def text(self, results: Sequence[Val]) -> str:
        params = ", ".join(f"{a.name}: !migraphx.shaped{a.type[0:]}" for a in self.args)
        outs = ", ".join(f"!migraphx.shaped{r.type}" for r in results)
        body = "\n".join(self.lines)
        names = ", ".join(r.name for r in results)
        return (
            f"func.func @main({params}) -> ({outs}) {{\n{body}\n    return {names} : {outs}\n}}\n"
        )


# -- strategies ----------------------------------------------------------------------------------


@st.composite
def memory_layouts(draw: st.DrawFn, lens: Sequence[int], allow_broadcast: bool = False) -> Lens:
    """Random strides for `lens`: a permutation, gaps on some dims, stride 0 on some dims."""
    rank = len(lens)
    order = draw(st.permutations(list(range(rank))))
    gaps = [draw(st.sampled_from([0, 0, 0, 1, 2])) if n > 1 else 0 for n in lens]
    broadcast: list[int] = []
    if allow_broadcast:
        broadcast = [
            d for d in range(rank) if lens[d] > 1 and draw(st.booleans()) and draw(st.booleans())
        ]
    return layout_strides(lens, order, gaps, broadcast)


def conv_out(size: int, k: int, s: int, d: int, b: int, e: int) -> int:
    return (size + b + e - (d * (k - 1) + 1)) // s + 1


@dataclass(frozen=True)
class ConvConfig:
    n: int
    channels: int
    out_channels: int
    group: int
    spatial: Lens
    kernel: Lens
    stride: Lens
    dilation: Lens
    begins: Lens
    ends: Lens

    @property
    def out_lens(self) -> Lens:
        spatial = tuple(
            conv_out(*args)
            for args in zip(
                self.spatial,
                self.kernel,
                self.stride,
                self.dilation,
                self.begins,
                self.ends,
                strict=True,
            )
        )
        return (self.n, self.out_channels, *spatial)

    @property
    def in_lens(self) -> Lens:
        return (self.n, self.channels, *self.spatial)

    @property
    def w_lens(self) -> Lens:
        return (self.out_channels, self.channels // self.group, *self.kernel)

    def attrs(self) -> str:
        def arr(v: Sequence[int]) -> str:
            return "[" + ", ".join(str(x) for x in v) + "]"

        return (
            f"dilation = {arr(self.dilation)}, group = {self.group} : i64, "
            f"padding = {arr(self.begins + self.ends)}, padding_mode = 0 : i64, "
            f"stride = {arr(self.stride)}"
        )


@st.composite
def conv_configs(draw: st.DrawFn, nsp: int | None = None) -> ConvConfig:
    nsp = nsp if nsp is not None else draw(st.sampled_from([1, 2, 2, 2, 3]))
    group_kind = draw(st.sampled_from(["one", "one", "depthwise", "grouped"]))
    if group_kind == "one":
        group, per_in, per_out = 1, draw(st.integers(1, 4)), draw(st.integers(1, 4))
    elif group_kind == "depthwise":
        group = draw(st.integers(2, 4))
        per_in, per_out = 1, draw(st.integers(1, 2))
    else:
        group, per_in, per_out = (
            draw(st.integers(2, 3)),
            draw(st.integers(2, 3)),
            draw(st.integers(1, 2)),
        )
    max_extent = 6 if nsp == 3 else 9
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    begins = tuple(draw(st.integers(0, 2)) for _ in range(nsp))
    ends = tuple(draw(st.integers(0, 2)) for _ in range(nsp))
    spatial = tuple(
        draw(st.integers(max(1, d * (k - 1) + 1 - b - e), max(max_extent, d * (k - 1) + 1)))
        for k, d, b, e in zip(kernel, dilation, begins, ends, strict=True)
    )
    return ConvConfig(
        n=draw(st.integers(1, 2)),
        channels=group * per_in,
        out_channels=group * per_out,
        group=group,
        spatial=spatial,
        kernel=kernel,
        stride=stride,
        dilation=dilation,
        begins=begins,
        ends=ends,
    )


def conv_program(
    cfg: ConvConfig, x_strides: Lens, w_strides: Lens, out_strides: Lens, bias: bool = False
) -> str:
    p = Program()
    x = p.arg(cfg.in_lens, x_strides)
    w = p.arg(cfg.w_lens, w_strides)
    y = p.op("convolution", [x, w], cfg.out_lens, cfg.attrs(), strides=out_strides)
    if bias:
        b = p.arg((cfg.out_channels,))
        bb = p.op(
            "broadcast",
            [b],
            cfg.out_lens,
            f"axis = 1 : i64, out_lens = [{', '.join(map(str, cfg.out_lens))}]",
            strides=[0 if d != 1 else 1 for d in range(len(cfg.out_lens))],
        )
        y = p.op("add", [y, bb], cfg.out_lens, strides=out_strides)
        y = p.op("relu", [y], cfg.out_lens, strides=out_strides)
    return p.text([y])


@st.composite
def conv_programs(draw: st.DrawFn, nsp: int | None = None) -> str:
    cfg = draw(conv_configs(nsp))
    x_strides = draw(memory_layouts(cfg.in_lens))
    w_strides = draw(memory_layouts(cfg.w_lens))
    out_strides = draw(memory_layouts(cfg.out_lens))
    return conv_program(cfg, x_strides, w_strides, out_strides, bias=draw(st.booleans()))


_UNARY = [
    "exp",
    "tanh",
    "sigmoid",
    "neg",
    "abs",
    "floor",
    "ceil",
    "sqrt",
    "rsqrt",
    "recip",
    "erf",
    "relu",
    "log",
]
_BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]


@st.composite
def small_lens(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 4) -> Lens:
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.sampled_from([1, 2, 3, 4])) for _ in range(rank))


@st.composite
def elementwise_programs(draw: st.DrawFn) -> str:
    """A chain of unary/binary ops over arguments of random layouts, with broadcast operands
    (stride-0 args, `multibroadcast` / `broadcast` of smaller args), transposes and slices."""
    lens = draw(small_lens(2, 4))
    p = Program()
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)))
    current = p.op("abs", [x], lens)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "transpose", "slice"]))
        lens = current.lens
        if kind == "unary":
            name = draw(st.sampled_from(_UNARY))
            if name in ("log", "sqrt", "rsqrt"):
                current = p.op("abs", [current], lens)
                current = p.op("add", [current, _one(p, lens)], lens)
            current = p.op(name, [current], lens)
        elif kind == "binary":
            name = draw(st.sampled_from(_BINARY))
            other = draw(_operand_like(p, lens))
            if name in ("div", "pow"):
                current = p.op("abs", [current], lens)
                other = p.op("abs", [other], lens)
                other = p.op("add", [other, _one(p, lens)], lens)
            operands = [current, other] if draw(st.booleans()) else [other, current]
            current = p.op(name, operands, lens)
        elif kind == "transpose":
            perm = draw(st.permutations(list(range(len(lens)))))
            out = tuple(lens[i] for i in perm)
            current = p.op(
                "transpose", [current], out, f"permutation = [{', '.join(map(str, perm))}]"
            )
        else:
            axis = draw(st.integers(0, len(lens) - 1))
            if lens[axis] > 1:
                start = draw(st.integers(0, lens[axis] - 1))
                end = draw(st.integers(start + 1, lens[axis]))
                out = tuple(end - start if d == axis else n for d, n in enumerate(lens))
                current = p.op(
                    "slice", [current], out, f"axes = [{axis}], ends = [{end}], starts = [{start}]"
                )
    out = p.relayout(current, draw(memory_layouts(current.lens)))
    return p.text([out])


def _one(p: Program, lens: Lens) -> Val:
    ones = (1,) * len(lens)
    lit = p.literal("dense<1.0> : tensor<1xf32>", ones, layout_strides(ones), "f32")
    return p.op(
        "multibroadcast",
        [lit],
        lens,
        f"out_lens = [{', '.join(map(str, lens))}]",
        strides=[0] * len(lens),
    )


@st.composite
def _operand_like(draw: st.DrawFn, p: Program, lens: Lens) -> Val:
    """A value of `lens`: a new argument with a random layout, or a broadcast of a smaller one."""
    how = draw(st.sampled_from(["arg", "multibroadcast", "broadcast", "literal"]))
    lens_text = ", ".join(map(str, lens))
    if how == "arg":
        return p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)))
    if how == "multibroadcast":
        keep = len(lens) - draw(st.integers(0, len(lens) - 1))
        small = tuple(n if draw(st.booleans()) else 1 for n in lens[len(lens) - keep :])
        a = p.arg(small, draw(memory_layouts(small)))
        return p.op(
            "multibroadcast",
            [a],
            lens,
            f"out_lens = [{lens_text}]",
            strides=layout_strides(lens, broadcast=[d for d in range(len(lens))]),
        )
    if how == "broadcast":
        axis = draw(st.integers(0, len(lens) - 1))
        width = draw(st.integers(1, len(lens) - axis))
        small = lens[axis : axis + width]
        a = p.arg(small, draw(memory_layouts(small)))
        return p.op(
            "broadcast",
            [a],
            lens,
            f"axis = {axis} : i64, out_lens = [{lens_text}]",
            strides=[0] * len(lens),
        )
    values = [round(0.25 * (k + 1), 2) for k in range(math.prod(lens))]
    dense = f"dense<{_nested(values, lens)}> : tensor<{'x'.join(map(str, lens))}xf32>"
    return p.literal(dense, lens, layout_strides(lens), "f32")


def _nested(values: list[float], lens: Sequence[int]) -> str:
    if not lens:
        return str(values[0])
    step = math.prod(lens[1:])
    parts = [_nested(values[i * step : (i + 1) * step], lens[1:]) for i in range(lens[0])]
    return "[" + ", ".join(parts) + "]"


@st.composite
def dot_programs(draw: st.DrawFn) -> str:
    batch = tuple(draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 2))))
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    a_lens, b_lens = (*batch, m, k), (*batch, k, n)
    p = Program()
    a = p.arg(a_lens, draw(memory_layouts(a_lens, allow_broadcast=True)))
    if batch and draw(st.booleans()):  # one matrix for every batch, maybe broadcast itself
        small = (*(1 for _ in batch), draw(st.sampled_from([1, k])), draw(st.sampled_from([1, n])))
        b0 = p.arg(small, draw(memory_layouts(small)))
        b = p.op(
            "multibroadcast",
            [b0],
            b_lens,
            f"out_lens = [{', '.join(map(str, b_lens))}]",
            strides=[0] * len(b_lens),
        )
    else:
        b = p.arg(b_lens, draw(memory_layouts(b_lens, allow_broadcast=True)))
    out_lens = (*batch, m, n)
    y = p.op("dot", [a, b], out_lens, strides=draw(memory_layouts(out_lens)))
    return p.text([y])


@st.composite
def reduction_programs(draw: st.DrawFn) -> str:
    lens = draw(small_lens(1, 4))
    p = Program()
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)))
    if draw(st.booleans()):
        axis = draw(st.integers(-len(lens), len(lens) - 1))
        y = p.op("softmax", [x], lens, f"axis = {axis} : i64", strides=draw(memory_layouts(lens)))
        return p.text([y])
    name = draw(st.sampled_from(["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"]))
    axes = sorted(draw(st.sets(st.integers(0, len(lens) - 1))))  # none: every axis
    out = tuple(1 if d in axes or not axes else n for d, n in enumerate(lens))
    y = p.op(
        name, [x], out, f"axes = [{', '.join(map(str, axes))}]", strides=draw(memory_layouts(out))
    )
    return p.text([y])
