"""Random valid convolutions as StableHLO text, and the checks every canonicalized module must pass.

Cases are valid by construction: the lhs extent is drawn at or above the smallest one that leaves a
non-empty output for the drawn kernel, dilations and padding.
"""
# ruff: noqa: E501  (MLIR fixtures are one op per line, as JAX prints them)

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from convcanon.hlo import legalize
from convcanon.hlo.config import resolve
from convcanon.hlo.context import ir, make_context, parse_module
from convcanon.hlo.conv_params import DYNAMIC as DYN
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.gate import ConvOptions
from convcanon.hlo.io import HloFile
from convcanon.hlo.params import read_conv_params
from convcanon.hlo.passes import canonicalize
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.pipeline import PassStats
from convcanon.verify.engine_process import run_xla

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# A conv with a dynamic batch: skipped with a reason.
# a dynamic spatial extent: left alone (a dynamic batch is rewritten, test_hlo_dynamic_batch)
DYNAMIC = """
func.func public @main(%x: tensor<1x?x8x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x?x4x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x?x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x?x4x2xf32>
  return %0 : tensor<1x?x4x2xf32>
}
"""

DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "f64": np.float64,
    "i32": np.int32,
    "bf16": ml_dtypes.bfloat16,
}


@dataclass(frozen=True)
class ConvCase:
    text: str
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    element: str

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        return random_inputs([self.lhs_shape, self.rhs_shape], self.element, seed)


def random_inputs(shapes: list[tuple[int, ...]], element: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    dtype = DTYPES[element]
    if element == "i32":
        return [rng.integers(-3, 4, size=s).astype(dtype) for s in shapes]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _layout(rank: int, first: str, second: str, perm: list[int]) -> str:
    """`[b, 0, 1, f]`-style layout: perm[i] is the role index placed at position i."""
    roles = [first, second] + [str(j) for j in range(rank - 2)]
    return "[" + ", ".join(roles[perm[i]] for i in range(rank)) + "]"


def _positions(perm: list[int]) -> list[int]:
    """Where each role (0: first, 1: second, 2..: spatial) sits."""
    where = [0] * len(perm)
    for pos, role in enumerate(perm):
        where[role] = pos
    return where


@st.composite
def conv_cases(
    draw: st.DrawFn,
    elements: tuple[str, ...] = ("f32", "f16", "f64", "i32"),
    lhs_dilations: tuple[int, int] = (1, 3),
    max_pad: int = 3,
    stride_range: tuple[int, int] = (1, 3),
    dynamic: tuple[str, ...] = (),
) -> ConvCase:
    """A random conv; `dynamic` lists the extents that may be drawn `?`: "batch" (the lhs's and
    the result's) or "feature" (the lhs's and the kernel's input features, a kernel gradient's
    contracted batch)."""
    n = draw(st.integers(1, 3))
    rank = n + 2
    perms = [draw(st.permutations(list(range(rank)))) for _ in range(3)]
    lhs_pos, rhs_pos, out_pos = (_positions(p) for p in perms)
    groups = draw(st.sampled_from([(1, 1), (2, 1), (3, 1), (1, 2), (1, 3)]))
    unknown = draw(st.sampled_from(("", *dynamic))) if dynamic else ""
    if unknown:
        groups = (1, 1)
    fgc, bgc = groups
    batch = bgc * draw(st.integers(1, 2))
    in_per_group = draw(st.integers(1, 2))
    out_features = fgc * bgc * draw(st.integers(1, 2))
    strides, pads, lhs_dil, rhs_dil, rev, extents, kernels, outs = ([] for _ in range(8))
    budget = 3 if n == 3 else 6  # keep 3-D cases small
    for _ in range(n):
        k = draw(st.integers(1, 3 if n == 3 else 4))
        s, rd = draw(st.integers(*stride_range)), draw(st.integers(1, 3))
        ld = draw(st.integers(*lhs_dilations))
        lo, hi = draw(st.integers(-2, max_pad)), draw(st.integers(-2, max_pad))
        effective = (k - 1) * rd + 1
        smallest = max(1, -(-(effective - 1 - lo - hi) // ld) + 1)
        h = draw(st.integers(smallest, smallest + budget))
        padded = (h - 1) * ld + 1 + lo + hi
        out = (padded - effective) // s + 1
        strides.append(s), pads.append((lo, hi)), lhs_dil.append(ld), rhs_dil.append(rd)
        rev.append(draw(st.booleans())), extents.append(h), kernels.append(k), outs.append(out)
    element = draw(st.sampled_from(elements))

    def shape(pos: list[int], first: int, second: int, spatial: list[int]) -> tuple[int, ...]:
        dims = [0] * rank
        for role, size in enumerate([first, second, *spatial]):
            dims[pos[role]] = size
        return tuple(dims)

    lhs_batch, out_batch = (DYN, DYN) if unknown == "batch" else (batch, batch // bgc)
    lhs_in, rhs_in = (DYN, DYN) if unknown == "feature" else (fgc * in_per_group, in_per_group)
    lhs = shape(lhs_pos, lhs_batch, lhs_in, extents)
    rhs = shape(rhs_pos, rhs_in, out_features, kernels)
    out = shape(out_pos, out_batch, out_features, outs)
    dims = (
        f"{_layout(rank, 'b', 'f', perms[0])}x{_layout(rank, 'i', 'o', perms[1])}"
        f"->{_layout(rank, 'b', 'f', perms[2])}"
    )
    text = conv_module(dims, lhs, rhs, out, element, strides, pads, lhs_dil, rhs_dil, rev, fgc, bgc)
    return ConvCase(text, lhs, rhs, element)


def _tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join("?x" if d == DYN else f"{d}x" for d in shape) + element + ">"


def _ints(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def conv_module(
    dims: str,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
    out: tuple[int, ...],
    element: str,
    strides: list[int],
    pads: list[tuple[int, int]],
    lhs_dil: list[int],
    rhs_dil: list[int],
    rev: list[bool],
    fgc: int,
    bgc: int,
) -> str:
    """One-conv StableHLO module in the pretty syntax JAX prints."""
    lt, rt, ot = (_tensor(s, element) for s in (lhs, rhs, out))
    pad = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in pads) + "]"
    reverse = "[" + ", ".join("true" if r else "false" for r in rev) + "]"
    return (
        f"func.func public @main(%arg0: {lt}, %arg1: {rt}) -> {ot} {{\n"
        f"  %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = {dims}, window = "
        f"{{stride = {_ints(strides)}, pad = {pad}, lhs_dilate = {_ints(lhs_dil)}, "
        f"rhs_dilate = {_ints(rhs_dil)}, reverse = {reverse}}} "
        f"{{batch_group_count = {bgc} : i64, feature_group_count = {fgc} : i64}} "
        f": ({lt}, {rt}) -> {ot}\n"
        f"  return %0 : {ot}\n"
        "}\n"
    )


# -- running the pass and checking its output ----------------------------------------------------


def parse(text: str, dialect: Dialect = STABLEHLO) -> HloFile:
    """Parse StableHLO text; for MHLO, legalize it to MHLO first."""
    module = parse_module(text, "case.mlir", make_context())
    if dialect is MHLO:
        legalize.to_mhlo(module)
    return HloFile(module, "case.mlir", debug_info=False)


def run_pass(
    text: str, dialect: Dialect, **options: bool | int | str
) -> tuple[HloFile, PassStats, str]:
    """Canonicalize; returns the file, the stats and the printed output (re-parsed and verified)."""
    hlo = parse(text, dialect)
    opts = {k.replace("_", "-"): v for k, v in options.items()}
    stats, _ = canonicalize(hlo, opts, dialect)
    printed = str(hlo.module)
    reparsed = parse_module(printed, "out.mlir", make_context())  # parse + verify, MHLO included
    del reparsed
    return hlo, stats, printed


def _walk(op: ir.Operation | ir.OpView) -> list[ir.Operation]:
    """Every op nested under `op`, in pre-order, by MLIR's own walk: a finder independent of the
    pass's (which iterates blocks from Python)."""
    ops: list[ir.Operation] = []

    def visit(current: ir.Operation) -> ir.WalkResult:
        ops.append(current)
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops


def functions(module: ir.Module) -> list[ir.Operation]:
    return [op for op in _walk(module.operation) if op.name == "func.func"]


def convs_of(func: ir.Operation, dialect: Dialect) -> list[ir.Operation]:
    return [op for op in _walk(func) if op.name == dialect.conv]


def all_conv_params(hlo: HloFile, dialect: Dialect) -> list[ConvParams]:
    with hlo.module.context:
        return [read_conv_params(c) for f in functions(hlo.module) for c in convs_of(f, dialect)]


def as_stablehlo_text(hlo: HloFile, dialect: Dialect) -> str:
    """The module as StableHLO text for XLA (an MHLO module is legalized back first)."""
    if dialect is STABLEHLO:
        return str(hlo.module)
    copy = parse_module(str(hlo.module), "copy.mlir", make_context())
    legalize.to_stablehlo(copy)
    return str(copy)


def assert_canonical(params: list[ConvParams]) -> None:
    for p in params:
        assert all(lo == 0 and hi == 0 for lo, hi in p.padding), p
        assert all(s == 1 for s in p.strides), p
        assert all(d == 1 for d in p.lhs_dilation), p


def total_macs(params: list[ConvParams]) -> int:
    return sum(p.macs for p in params)


def mac_ceiling(before: list[ConvParams], **options: Any) -> int:
    """The most multiply-adds the rewrite of the convs `before` may cost under the pass
    `options`: each conv's lattice floor, times max-mac-ratio where its kernel is zero-extended
    (merge-phases=pad-kernel, or under auto the engine policy's choice for that conv)."""
    opts = ConvOptions(**options)
    return sum(
        math.floor(lattice_macs(p) * opts.max_mac_ratio)
        if resolve(p, opts).merge == "pad-kernel"
        else lattice_macs(p)
        for p in before
    )


def assert_same_results(before: list[np.ndarray], after: list[np.ndarray], element: str) -> None:
    for b, a in zip(before, after, strict=True):
        assert b.shape == a.shape and b.dtype == a.dtype
        if element == "i32":
            np.testing.assert_array_equal(a, b)
            continue
        scale = max(1.0, float(np.max(np.abs(b.astype(np.float64)), initial=0.0)))
        tol = {"f16": 2e-2, "bf16": 2e-2, "f32": 1e-5, "f64": 1e-12}[element] * scale
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=tol, rtol=0)


def xla(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """XLA, in the child process `verify --engine xla` uses: an XLA abort on a case is then a
    failure hypothesis can report with its example, not the end of a test worker."""
    return run_xla(text, inputs, "case.mlir")


def iree(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """IREE's CPU runtime, in its child process."""
    from convcanon.verify.engines import iree_engine

    return iree_engine(text, "case.mlir", "main", inputs)


def hits_xla_reversal_bug(p: ConvParams) -> bool:
    """XLA CPU ignores window reversal in a dim whose output extent is 1 (pinned in
    test_hlo_property_canonical); a 1-tap window is the same reversed or not."""
    out = [p.result_shape[d] for d in p.dims.out_spatial]
    return any(
        r and o == 1 and k > 1 for r, o, k in zip(p.reversal, out, p.kernel_spatial, strict=True)
    )


def reference(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The numpy interpreter: spec-exact, and checked against XLA wherever XLA is right."""
    from convcanon.verify.engines import reference_engine

    return reference_engine(text, "case.mlir", "main", inputs)


def hits_xla_crop_then_pad_bug(p: ConvParams) -> bool:
    """XLA CPU miscomputes a conv whose padding crops at the start and pads at the end of one
    dim (low < 0 < high) in some multi-channel configs: it reads input where the padding zero
    belongs (pinned in test_hlo_property_canonical)."""
    return any(lo < 0 < hi for lo, hi in p.padding)


def hits_xla_operand_swap_bug(p: ConvParams) -> bool:
    """XLA aborts (a CHECK of its HLO verifier) where its ConvOperandSwapper swaps a conv's
    operands (a kernel larger than the input) while keeping a "group" dim's window as it was:
    one whose size k is the lhs dilation, stride k - 1, unpadded, unreversed, undilated. That
    window no longer fits the swapped kernel (the input) unless the input is k wide there
    (pinned in test_hlo_property_canonical)."""
    if p.feature_group_count > 1 or p.batch_group_count > 1:
        return False
    kept_unfit = False
    kernels = swapped = 1
    for i, (k, n) in enumerate(zip(p.kernel_spatial, p.lhs_spatial, strict=True)):
        plain = not p.reversal[i] and p.padding[i] == (0, 0) and p.rhs_dilation[i] == 1
        if plain and p.lhs_dilation[i] == k and p.strides[i] == k - 1:
            kept_unfit |= n != k
            continue
        if plain and k == n and p.lhs_dilation[i] == 1 and p.strides[i] == 1:
            continue
        kernels *= k
        full = (k - 1, k - 1)
        one_tap = n == 1 and p.strides[i] == 1 and p.rhs_dilation[i] == 1 and p.padding[i] == full
        swapped *= k if one_tap else n
    return kept_unfit and kernels > swapped


def hits_known_xla_bug(p: ConvParams) -> bool:
    """One of XLA CPU's known conv bugs would hit `p`: a wrong result, or an abort."""
    return hits_xla_reversal_bug(p) or hits_xla_crop_then_pad_bug(p) or hits_xla_operand_swap_bug(p)


def judge(params: list[ConvParams]) -> Callable[[str, list[np.ndarray]], list[np.ndarray]]:
    """XLA, or the reference interpreter where one of XLA's known conv bugs would hit `params`."""
    return reference if any(map(hits_known_xla_bug, params)) else xla
