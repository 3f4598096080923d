"""`convcanon verify BEFORE AFTER`: same random inputs into both modules, outputs compared.

Integers and bools must match exactly. Floats are compared with a tolerance that grows with the
dtype's epsilon and with the longest reduction in the module (a sum of K products carries
~sqrt(K) eps of rounding noise relative to the output's scale), so a reassociated but correct
rewrite passes and a wrong one fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError
from convcanon.fileio import read_input

if TYPE_CHECKING:
    from convcanon.verify.engines import Engine


@dataclass(frozen=True)
class Signature:
    """What verify needs from a module: entry name, argument types, longest reduction."""

    entry: str
    args: list  # list[hlo_interp.TensorType]
    reduction: int


def module_signature(text: str, filename: str, entry: str | None) -> Signature:
    """Parse `text` (HLO) and read the entry's argument types and the longest reduction."""
    from jaxlib.mlir import ir

    from convcanon.hlo.context import parse_module
    from convcanon.reference import hlo_interp

    module = parse_module(text, filename)
    interp = hlo_interp.Interpreter(module, filename)
    if entry is None:
        public = [
            name
            for name, func in interp.functions.items()
            if "sym_visibility" not in func.attributes
            or ir.StringAttr(func.attributes["sym_visibility"]).value == "public"
        ]
        entry = "main" if "main" in interp.functions else (public[0] if public else None)
    if entry is None or entry not in interp.functions:
        raise ConvcanonError(f"no entry function @{entry or 'main'}", SourceLoc(filename))
    block = interp.functions[entry].regions[0].blocks[0]
    args = [hlo_interp.tensor_type(a.type, SourceLoc(filename)) for a in block.arguments]
    for index, arg in enumerate(args):  # random inputs are allocated before any interpreter runs
        if arg.nbytes > hlo_interp.DEFAULT_MEMORY_LIMIT:
            raise ConvcanonError(
                f"@{entry} argument {index} ({arg.element}{list(arg.shape)}) needs {arg.nbytes} "
                f"bytes, over the memory limit of {hlo_interp.DEFAULT_MEMORY_LIMIT}",
                interp.loc(interp.functions[entry]),
            )
    return Signature(entry, args, _longest_reduction(module))


def _longest_reduction(module: object) -> int:
    """Max number of terms any conv/dot/reduce sums into one output element."""
    from jaxlib.mlir import ir

    assert isinstance(module, ir.Module)
    longest = 1

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal longest
        kind = op.name.split(".", 1)[-1]
        operand_shapes = [
            tuple(ir.RankedTensorType(v.type).shape)
            for v in op.operands
            if isinstance(v.type, ir.RankedTensorType)
        ]
        result_sizes = [
            math.prod(ir.RankedTensorType(r.type).shape)
            for r in op.results
            if isinstance(r.type, ir.RankedTensorType)
        ]
        if kind in ("convolution", "dynamic_conv", "dot_general", "dot") and operand_shapes:
            # every rhs element meets at most (rhs size / output features) lhs elements
            longest = max(longest, math.prod(operand_shapes[1]))
        elif kind in ("reduce", "reduce_window") and operand_shapes and result_sizes:
            longest = max(longest, math.prod(operand_shapes[0]) // max(1, result_sizes[0]))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return longest


def random_inputs(args: list, rng: np.random.Generator) -> list[np.ndarray]:
    """Small ints (-4..4, unsigned 0..8), standard-normal floats, fair bools."""
    from convcanon.reference.hlo_interp import normalize

    return [normalize(random_array(tt.dtype, tt.shape, rng), tt) for tt in args]


def random_array(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """One random value of `shape`, in a range suited to `dtype` (not yet cast to it)."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "u":
        return rng.integers(0, 9, shape)
    if dtype.kind == "i":
        return rng.integers(-4, 5, shape)
    if dtype.kind == "c":
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def tolerance(dtype: np.dtype, reduction: int) -> float:
    """Relative tolerance (of the output's scale) for a float dtype and reduction length."""
    if dtype.kind not in "fcV":
        return 0.0
    real = (
        np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        if dtype.kind == "c"
        else dtype
    )
    import ml_dtypes

    eps = float(ml_dtypes.finfo(real).eps)
    return 16.0 * eps * math.sqrt(reduction + 1)


@dataclass
class Comparison:
    ok: bool
    max_abs: float
    max_rel: float
    message: str = ""


def compare_outputs(
    index: int, before: np.ndarray, after: np.ndarray, reduction: int
) -> Comparison:
    """Exact for ints/bools; for floats |a-b| <= rtol * max(1, max|before|) elementwise."""
    if before.shape != after.shape:
        return Comparison(
            False, math.inf, math.inf, f"output {index}: shape {before.shape} != {after.shape}"
        )
    if before.size == 0:
        return Comparison(True, 0.0, 0.0)
    wide = np.complex128 if before.dtype.kind == "c" or after.dtype.kind == "c" else np.float64
    b, a = before.astype(wide), after.astype(wide)
    with np.errstate(all="ignore"):
        diff = np.abs(b - a)
        both_nan = np.isnan(b) & np.isnan(a)
        same = (b == a) | both_nan
        diff = np.where(same, 0.0, diff)
        finite = np.abs(b[np.isfinite(b)])
        scale = max(1.0, float(finite.max()) if finite.size else 1.0)
        rel = diff / np.maximum(np.abs(b), np.finfo(np.float64).tiny)
    rtol = tolerance(before.dtype, reduction)
    bad = ~same if rtol == 0.0 else ~(same | (diff <= rtol * scale))
    max_abs = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
    max_rel = float(np.nanmax(np.where(np.isnan(rel), np.inf, rel)))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return Comparison(
            False,
            max_abs,
            max_rel,
            f"output {index} differs at index {list(where)}: before {before[where]}, "
            f"after {after[where]} ({int(bad.sum())} of {bad.size} elements; "
            f"tolerance {rtol * scale:.3g})",
        )
    return Comparison(True, max_abs, max_rel)


@dataclass(frozen=True)
class Plan:
    """Both modules ready to run on the same inputs: entry, argument spec, reduction length."""

    entry: str
    args: list  # hlo_interp.TensorType (HLO) or half_b.FlatArg (migraphx/TOSA)
    make_inputs: Callable[[np.random.Generator], list[np.ndarray]]
    reduction: int
    run_before: Engine
    run_after: Engine


def verify_command(
    before: str,
    after: str,
    engine: str = "reference",
    trials: int = 3,
    seed: int = 0,
    entry: str | None = None,
) -> int:
    """Run both modules on `trials` random input sets; a mismatch is an error (exit 1) at AFTER."""
    from convcanon.verify.engines import ENGINES

    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    if trials < 1:
        raise UsageError("--trials must be at least 1")
    before_name, before_text = read_input(before)
    after_name, after_text = read_input(after)
    from convcanon.ir_kind import sniff_framework

    kinds = {sniff_framework(before_text), sniff_framework(after_text)}
    if len(kinds) > 1:
        raise ConvcanonError(
            "cannot compare a StableHLO/MHLO module with a migraphx/TOSA module",
            SourceLoc(after_name),
        )
    files = (before_text, before_name, after_text, after_name)
    if kinds == {"xdsl"}:
        plan = _half_b_plan(*files, entry, engine)
    else:
        plan = _hlo_plan(*files, entry, ENGINES[engine])
    rng = np.random.default_rng(seed)
    worst_abs = worst_rel = 0.0
    for trial in range(trials):
        inputs = plan.make_inputs(rng)
        out_before = plan.run_before(before_text, before_name, plan.entry, inputs)
        out_after = plan.run_after(after_text, after_name, plan.entry, inputs)
        if len(out_before) != len(out_after):
            raise ConvcanonError(
                f"mismatch: {len(out_before)} results before, {len(out_after)} after",
                SourceLoc(after_name),
            )
        for i, (b, a) in enumerate(zip(out_before, out_after, strict=True)):
            result = compare_outputs(i, np.asarray(b), np.asarray(a), plan.reduction)
            worst_abs, worst_rel = max(worst_abs, result.max_abs), max(worst_rel, result.max_rel)
            if not result.ok:
                print(f"max abs error {result.max_abs:.3g}, max rel error {result.max_rel:.3g}")
                raise ConvcanonError(
                    f"mismatch (engine {engine}, trial {trial}, seed {seed}): {result.message}",
                    SourceLoc(after_name),
                )
    print(
        f"ok: {trials} trial(s) on engine {engine}, "
        f"max abs error {worst_abs:.3g}, max rel error {worst_rel:.3g}"
    )
    return 0


def _same_args(entry: str, before: list, after: list, after_name: str) -> None:
    if before != after:
        raise ConvcanonError(
            f"@{entry} takes different arguments in the two modules: "
            f"{_describe(before)} vs {_describe(after)}",
            SourceLoc(after_name),
        )


def _hlo_plan(
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    entry: str | None,
    run: Engine,
) -> Plan:
    sig_before = module_signature(before_text, before_name, entry)
    sig_after = module_signature(after_text, after_name, sig_before.entry)
    _same_args(sig_before.entry, sig_before.args, sig_after.args, after_name)
    return Plan(
        sig_before.entry,
        sig_before.args,
        lambda rng: random_inputs(sig_before.args, rng),
        max(sig_before.reduction, sig_after.reduction),
        run,
        run,
    )


def _half_b_plan(
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    entry: str | None,
    engine: str,
) -> Plan:
    """migraphx/TOSA modules: flat buffers sized from the entry's signature (DESIGN 3.2).

    Under `iree` a TOSA module runs on IREE and a migraphx module runs lowered by
    migraphx-to-tosa, except opposite a TOSA module: there the migraphx side is the expected
    result, so it runs on the migraphx reference (lowering it would compare IREE with itself).
    """
    from convcanon.verify import half_b
    from convcanon.verify.engines import HALF_B_ENGINES

    if engine not in HALF_B_ENGINES:
        raise ConvcanonError(
            f"engine '{engine}' runs StableHLO; migraphx/TOSA modules run on "
            f"{' or '.join(HALF_B_ENGINES)}",
            SourceLoc(before_name),
        )

    before_module = half_b.parse(before_text, before_name)
    after_module = half_b.parse(after_text, after_name)
    function = half_b.entry_function(before_module, before_name, entry)
    name = function.sym_name.data
    args = half_b.flat_args(function)
    half_b.check_memory(function, args, before_name)  # random inputs are allocated below
    after_args = half_b.flat_args(half_b.entry_function(after_module, after_name, name))
    _same_args(name, args, after_args, after_name)

    def make_inputs(rng: np.random.Generator) -> list[np.ndarray]:
        return [random_array(a.dtype, a.shape, rng).astype(a.dtype) for a in args]

    reduction = max(half_b.longest_reduction(m) for m in (before_module, after_module))
    run_before = run_after = HALF_B_ENGINES[engine]
    is_migraphx = [half_b.has_migraphx_ops(m) for m in (before_module, after_module)]
    if engine == "iree" and is_migraphx[0] != is_migraphx[1]:
        reference = HALF_B_ENGINES["reference"]
        run_before, run_after = (
            (reference, run_after) if is_migraphx[0] else (run_before, reference)
        )
        side = "before" if is_migraphx[0] else "after"
        print(
            f"{side} is a migraphx module: it runs on the reference interpreter, the TOSA on IREE"
        )
    return Plan(name, args, make_inputs, reduction, run_before, run_after)


def _describe(args: list) -> str:
    return "(" + ", ".join(f"{t.element}{list(t.shape)}" for t in args) + ")"
