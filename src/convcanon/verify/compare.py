"""How `verify` compares two modules: inputs drawn family by family until the outputs are
finite and respond to them, both modules run on the chosen engine and in f64, every output judged
(see `judge`).

BEFORE evaluated in f64 (a widened copy) is the truth; AFTER passes when its error against it is
within a small factor of BEFORE's own, plus a floor from the type's epsilon and the longest
reduction, and when AFTER's own f64 copy agrees with the truth. Integers and bools must match
exactly. Outputs that are not finite compare nothing: other inputs are drawn (and the summary says
which), else the comparison fails. Outputs that do not respond to their inputs (a saturated
softmax, a constant) compare nothing either: other input families are tried, and an output that
none moves makes the outcome inconclusive (exit `INCONCLUSIVE`), never ok; so does an
ill-conditioned output.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc

if TYPE_CHECKING:
    from convcanon.verify.engines import Engine
    from convcanon.verify.judge import Tally, Tolerances

INCONCLUSIVE = 3  # exit status: no mismatch found, and no signal to say ok on


@dataclass(frozen=True)
class Signature:
    """What verify needs from a module: entry name, argument types, longest reduction, and the
    arguments that are conv kernels or dot weights (index -> fan-in)."""

    entry: str
    args: list  # list[hlo_interp.TensorType]
    reduction: int
    weights: dict[int, int]


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
        known = ", ".join(interp.functions) or "none"
        raise ConvcanonError(
            f"no entry function @{entry or 'main'} (functions: {known})", SourceLoc(filename)
        )
    if not interp.functions[entry].regions[0].blocks:
        raise ConvcanonError(
            f"@{entry} is a declaration: it has no body to run", interp.loc(interp.functions[entry])
        )
    block = interp.functions[entry].regions[0].blocks[0]
    args = [hlo_interp.tensor_type(a.type, SourceLoc(filename)) for a in block.arguments]
    for index, arg in enumerate(args):  # random inputs are allocated before any interpreter runs
        if arg.nbytes > hlo_interp.DEFAULT_MEMORY_LIMIT:
            raise ConvcanonError(
                f"@{entry} argument {index} ({arg.element}{list(arg.shape)}) needs {arg.nbytes} "
                f"bytes, over the memory limit of {hlo_interp.DEFAULT_MEMORY_LIMIT}",
                interp.loc(interp.functions[entry]),
            )
    return Signature(entry, args, _longest_reduction(module), _weight_arguments(block))


# ops that carry a weight to a conv or dot unchanged in value (a kernel is often reshaped,
# transposed or converted on the way: flax's NCHW export, a bf16 cast)
_VALUE_PRESERVING = ("convert", "reshape", "transpose", "reverse", "copy", "bitcast_convert")


def _weight_arguments(block: object) -> dict[int, int]:
    """Entry arguments that reach a conv's kernel or a dot's rhs through value-preserving ops,
    with the fan-in of what they feed (the products summed per output element)."""
    from jaxlib.mlir import ir

    assert isinstance(block, ir.Block)
    found: dict[int, int] = {}
    for index, argument in enumerate(block.arguments):
        frontier: list[ir.Value] = [argument]
        seen: set[int] = set()
        while frontier:
            value = frontier.pop()
            for use in value.uses:
                user = use.owner.operation
                kind = user.name.split(".", 1)[-1]
                if kind in ("convolution", "dynamic_conv", "dot_general", "dot"):
                    if use.operand_number == 1:
                        shapes = [
                            tuple(ir.RankedTensorType(v.type).shape)
                            for v in user.operands
                            if isinstance(v.type, ir.RankedTensorType)
                        ]
                        fan_in = _contraction_length(user, kind, shapes)
                        found[index] = max(found.get(index, 1), fan_in)
                elif kind in _VALUE_PRESERVING and hash(user) not in seen:
                    seen.add(hash(user))
                    frontier.extend(user.results)
    return found


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
            longest = max(longest, _contraction_length(op, kind, operand_shapes))
        elif kind in ("reduce", "reduce_window") and operand_shapes and result_sizes:
            longest = max(longest, math.prod(operand_shapes[0]) // max(1, result_sizes[0]))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return longest


@dataclass(frozen=True)
class Distribution:
    """How random float inputs are drawn. N(0,1) first; the later ones keep finite what N(0,1)
    makes non-finite (`rsqrt(variance)`, `log`, division: positive values) and keep activations
    in range where N(0,1) weights make them grow by sqrt(fan-in) per layer until a softmax
    saturates (weights drawn fan-in-normalised, then scaled down further)."""

    name: str
    low: float | None  # None: normal
    high: float = 0.0
    network: bool = False  # weights N(0,1)/sqrt(fan-in) * weight_scale; vectors uniform[0.5,2)
    weight_scale: float = 1.0


NETWORK_LIKE = (
    "network-like (weights N(0,1)/sqrt(fan-in){}, other tensors N(0,1), vectors uniform[0.5,2))"
)
DISTRIBUTIONS = (
    Distribution("N(0,1)", None),
    Distribution(NETWORK_LIKE.format(""), None, 0.0, True),
    Distribution(NETWORK_LIKE.format(" x 1/4"), None, 0.0, True, 0.25),
    Distribution("uniform[0.5,2)", 0.5, 2.0),
    Distribution("uniform[0.1,0.5)", 0.1, 0.5),
)


def _contraction_length(op: object, kind: str, shapes: list[tuple[int, ...]]) -> int:
    """Products summed into one output element: the kernel without its output features (conv),
    the contracted dims (dot); the whole rhs when the attributes cannot be read."""
    from jaxlib.mlir import ir

    from convcanon.reference import hlo_interp

    assert isinstance(op, ir.Operation)
    whole = math.prod(shapes[1]) if len(shapes) > 1 else 1
    try:
        if kind in ("convolution", "dynamic_conv"):
            dims = hlo_interp.conv_dims(op.attributes["dimension_numbers"])
            return whole // max(1, shapes[1][dims.kernel_output_feature_dimension])
        if kind == "dot_general":
            dims = hlo_interp.dot_dims(op.attributes["dot_dimension_numbers"])
            return math.prod(shapes[0][d] for d in dims.lhs_contracting_dimensions)
        return shapes[0][-1] if shapes[0] else 1
    except (KeyError, TypeError, ValueError, IndexError):
        return whole


def random_inputs(
    args: list,
    rng: np.random.Generator,
    dist: Distribution = DISTRIBUTIONS[0],
    weights: dict[int, int] | None = None,
) -> list[np.ndarray]:
    """Inputs for HLO arguments, drawn from `dist` and cast to each argument's type; `weights`
    (argument -> fan-in) are the conv kernels and dot weights, which a network-like draw
    normalises (None: unknown, every tensor is normalised by a fan-in guessed from its shape)."""
    from convcanon.reference.hlo_interp import normalize

    return [
        normalize(random_array(tt.dtype, tt.shape, rng, dist, _fan_in(i, tt.shape, weights)), tt)
        for i, tt in enumerate(args)
    ]


def _fan_in(index: int, shape: tuple[int, ...], weights: dict[int, int] | None) -> int | None:
    """The fan-in a network-like draw divides argument `index` by; None: not a weight."""
    if weights is None or not weights:  # no weights found: guess HWIO, OIHW, [in, out] alike
        return max(1, math.prod(shape) // max(1, max(shape, default=1)))
    return weights.get(index)


def perturbed(inputs: list[np.ndarray], rng: np.random.Generator) -> list[np.ndarray]:
    """Every float input scaled element-wise by a random factor near 1 (`judge.perturbation`;
    signs kept: a positive family stays positive); integers and bools unchanged."""
    from convcanon.verify.judge import is_float, perturbation

    moved = []
    for x in inputs:
        if is_float(x.dtype) and x.size:
            wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
            reach = perturbation(x.dtype)
            factor = 1.0 + rng.uniform(-reach, reach, x.shape)
            with np.errstate(all="ignore"):
                x = (wide * factor).astype(x.dtype)
        moved.append(x)
    return moved


def _draw(
    shape: tuple[int, ...], rng: np.random.Generator, dist: Distribution, fan_in: int | None
) -> np.ndarray:
    if dist.network:
        if len(shape) <= 1:
            return rng.uniform(0.5, 2.0, shape)
        if fan_in is None:
            return rng.standard_normal(shape)
        return rng.standard_normal(shape) * (dist.weight_scale / math.sqrt(fan_in))
    if dist.low is None:
        return rng.standard_normal(shape)
    return rng.uniform(dist.low, dist.high, shape)


def random_array(
    dtype: np.dtype,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    dist: Distribution = DISTRIBUTIONS[0],
    fan_in: int | None = None,
) -> np.ndarray:
    """One random value of `shape` (not yet cast): small ints (-4..4, unsigned 0..8; 1..4 for a
    positive distribution; inside int4/uint4 too), fair bools, floats from `dist` (`fan_in`:
    a weight's, for a network-like draw)."""
    from convcanon.verify.judge import is_narrow_int

    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "ui" or is_narrow_int(dtype):
        unsigned = dtype.kind == "u" or dtype.name.startswith("uint")
        positive = dist.low is not None or dist.network
        low = 1 if positive else (0 if unsigned else -4)
        high = 5 if positive else (9 if unsigned else 5)
        return rng.integers(low, high, shape)
    real = _draw(shape, rng, dist, fan_in)
    return real + 1j * _draw(shape, rng, dist, fan_in) if dtype.kind == "c" else real


def widen_inputs(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The same values in f64 (complex in c128) for a widened module; others unchanged."""
    from convcanon.verify.judge import is_float

    return [
        x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) if is_float(x.dtype) else x
        for x in inputs
    ]


@dataclass(frozen=True)
class Truth:
    """BEFORE and AFTER widened to f64, run on `engine` (`name` says which, for the summary)."""

    before_text: str | None  # None: no f64 copy, BEFORE itself is the truth
    after_text: str | None
    run: Engine | None
    name: str
    reason: str = ""  # why BEFORE has no f64 copy
    after_reason: str = ""  # why AFTER has none (its f64 check is skipped)


@dataclass(frozen=True)
class Plan:
    """Both modules ready to run on the same inputs: entry, argument spec, reduction length."""

    entry: str
    args: list  # hlo_interp.TensorType (HLO) or migraphx_interp.FlatArg (migraphx/TOSA)
    make_inputs: Callable[[np.random.Generator, Distribution], list[np.ndarray]]
    reduction: int
    run_before: Engine
    run_after: Engine
    truth: Truth
    input_note: str = ""  # how the inputs were constrained, for the summary


class Mismatch(ConvcanonError):
    """AFTER differs from the truth; `tally` holds the errors seen up to it."""

    def __init__(self, message: str, loc: SourceLoc, tally: Tally) -> None:
        super().__init__(message, loc)
        self.tally = tally


@dataclass(frozen=True)
class Outcome:
    """One comparison's verdict: `ok`, `inconclusive` (an output no input family moves) or
    `ill-conditioned` (BEFORE far from its own f64 value), its summary line and what it saw.
    A mismatch is not an outcome: it is raised as an error."""

    status: str
    summary: str
    tally: Tally

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "ok" else INCONCLUSIVE


def compare(
    plan: Plan,
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    engine: str,
    trials: int,
    seed: int,
    tolerances: Tolerances,
) -> Outcome:
    """Judge AFTER against BEFORE on `trials` input sets: the outcome, or a mismatch error."""
    from convcanon.verify.judge import Tally, judge_output

    rng = np.random.default_rng(seed)
    tally = Tally()
    used: set[str] = set()
    dull: list[str] = []
    for trial in range(trials):
        drawn = _trial_inputs(plan, before_text, before_name, rng, trial)
        used.add(drawn.dist)
        if drawn.insensitive:
            dull.append(f"trial {trial}: {drawn.insensitive}")
        inputs, truth, out_before = drawn.inputs, drawn.truth, drawn.out_before
        out_after = plan.run_after(after_text, after_name, plan.entry, inputs)
        if len(out_before) != len(out_after):
            raise ConvcanonError(
                f"mismatch: {len(out_before)} results before, {len(out_after)} after",
                SourceLoc(after_name),
            )
        after_f64 = _run_truth(plan.truth, plan.truth.after_text, after_name, plan.entry, inputs)
        for i, (b, a) in enumerate(zip(out_before, out_after, strict=True)):
            wide = None if truth is None else truth[i]
            wide_after = None if after_f64 is None else after_f64[i]
            b = np.asarray(b)
            verdict = judge_output(
                i,
                b,
                _as_bits_of(b, np.asarray(a)),
                wide,
                wide_after,
                plan.reduction,
                tally,
                tolerances,
            )
            if not verdict.ok:
                raise Mismatch(
                    f"mismatch (engine {engine}, trial {trial}, seed {seed}, {drawn.dist} "
                    f"inputs): {verdict.message}",
                    SourceLoc(after_name),
                    tally,
                )
    if not tally.float_elements and not tally.exact_elements:
        raise ConvcanonError(
            f"nothing to compare: the results of @{plan.entry} have no elements",
            SourceLoc(after_name),
        )
    status, why = "ok", ""
    if dull:
        status, why = "inconclusive", "; ".join(dull)
    elif tally.ill_conditioned:
        status, why = "ill-conditioned", _ill_conditioned(tally)
    summary = _summary(status, why, trials, engine, plan.truth, tally, sorted(used))
    return Outcome(status, summary + (f", {plan.input_note}" if plan.input_note else ""), tally)


def _ill_conditioned(tally: Tally) -> str:
    return "; ".join(
        f"output {i}: BEFORE in its own type is {before:.3g} from its f64 value ({share:.3g} of "
        f"its scale), AFTER {after:.3g} ({after_share:.3g}): rounding, not the rewrite, decides "
        "what the typed comparison sees"
        for i, (before, share, after, after_share) in sorted(tally.ill_conditioned.items())
    )


def _run_truth(
    truth: Truth, text: str | None, filename: str, entry: str, inputs: list[np.ndarray]
) -> list[np.ndarray] | None:
    if text is None or truth.run is None:
        return None
    return truth.run(text, filename, entry, widen_inputs(inputs))


@dataclass(frozen=True)
class Drawn:
    """One trial's inputs, from the first family that gives a finite truth whose outputs
    respond to them (else the first finite one, with why no family responds)."""

    dist: str
    inputs: list[np.ndarray]
    truth: list[np.ndarray] | None
    out_before: list[np.ndarray]
    insensitive: str = ""  # why no family moves every output; "" when one did


def _trial_inputs(
    plan: Plan,
    before_text: str,
    before_name: str,
    rng: np.random.Generator,
    trial: int,
) -> Drawn:
    """Draw from each family in turn until BEFORE's truth is finite and every float output
    responds to a perturbation of the inputs."""
    from convcanon.verify.judge import non_finite

    problems: list[str] = []
    first: Drawn | None = None
    for dist in DISTRIBUTIONS:
        inputs = plan.make_inputs(rng, dist)
        out_before = plan.run_before(before_text, before_name, plan.entry, inputs)
        truth = _run_truth(plan.truth, plan.truth.before_text, before_name, plan.entry, inputs)
        bad = non_finite(truth if truth is not None else [np.asarray(b) for b in out_before])
        what = "BEFORE in f64" if truth is not None else "BEFORE"
        if not bad and truth is not None:  # BEFORE overflowing its own type compares nothing
            bad = non_finite([np.asarray(b) for b in out_before])
            what = "BEFORE in its own type"
        if bad:
            detail = ", ".join(f"output {i}: {n} of {size} not finite" for i, n, size in bad)
            problems.append(f"{dist.name} inputs make {what} non-finite ({detail})")
            continue
        drawn = Drawn(dist.name, inputs, truth, out_before)
        dull = _insensitive_outputs(plan, before_text, before_name, drawn, rng)
        if not dull:
            if problems:
                print(f"trial {trial}: {'; '.join(problems)}; drew {dist.name} inputs instead")
            return drawn
        problems.append(f"{dist.name} inputs: {dull}")
        first = first or drawn
    if first is not None:
        reason = "no input family moves every output (" + "; ".join(problems) + ")"
        return Drawn(first.dist, first.inputs, first.truth, first.out_before, reason)
    raise ConvcanonError(
        f"nothing to compare in trial {trial}: " + "; ".join(problems),
        SourceLoc(before_name),
    )


def _insensitive_outputs(
    plan: Plan, before_text: str, before_name: str, drawn: Drawn, rng: np.random.Generator
) -> str:
    """Which float outputs do not respond to the inputs (a saturated softmax, a constant):
    the truth (or BEFORE) at inputs scaled by up to PERTURBATION, element-wise. "" when every
    output responds, or when there are no float inputs to move."""
    from convcanon.verify.judge import MIN_RESPONSIVE, PERTURBATION, is_float, responsive_share

    if not any(is_float(x.dtype) and x.size for x in drawn.inputs):
        return ""
    moved_inputs = perturbed(drawn.inputs, rng)
    if drawn.truth is not None:
        base = drawn.truth
        moved = _run_truth(
            plan.truth, plan.truth.before_text, before_name, plan.entry, moved_inputs
        )
    else:
        base = [np.asarray(b) for b in drawn.out_before]
        moved = plan.run_before(before_text, before_name, plan.entry, moved_inputs)
    assert moved is not None
    dull = []
    for i, (own, b, m) in enumerate(zip(drawn.out_before, base, moved, strict=True)):
        share = responsive_share(np.asarray(own), np.asarray(b), np.asarray(m))
        if share < MIN_RESPONSIVE:
            dull.append(
                f"output {i} does not respond ({share:.0%} of its elements move when the inputs "
                f"are scaled by 1 +- {PERTURBATION:g}; at least {MIN_RESPONSIVE:.0%} must)"
            )
    return ", ".join(dull)


def _summary(
    status: str, why: str, trials: int, engine: str, truth: Truth, tally: Tally, used: list[str]
) -> str:
    parts = [f"{status}: {trials} trial(s) on engine {engine}"]
    if why:
        parts.append(why)
    if tally.float_elements:
        name = truth.name
        if isinstance(truth.run, _ReferenceElseXla) and truth.run.fallback is not None:
            name = name.replace("reference", "xla", 1)
        against = (
            f"BEFORE evaluated in f64 ({name})"
            if truth.before_text is not None
            else f"BEFORE itself ({truth.reason})"
        )
        parts.append(
            f"{tally.float_elements} float element(s) judged against {against}: "
            f"{tally.errors()}, closest call {tally.worst_share:.0%} of the allowance"
        )
        if tally.f64_compared:
            parts.append(
                f"AFTER in f64 within {tally.worst_f64:.3g} of the truth "
                f"({tally.worst_f64_share:.0%} of its allowance)"
            )
        elif truth.before_text is not None:
            parts.append(f"AFTER not run in f64 ({truth.after_reason or 'no f64 copy'})")
    if tally.exact_elements:
        parts.append(f"{tally.exact_elements} integer/bool element(s) equal")
    parts.append(f"inputs {', '.join(used)}")
    return "; ".join(parts)


def _same_args(entry: str, before: list, after: list, after_name: str) -> None:
    if before != after:
        raise ConvcanonError(
            f"@{entry} takes different arguments in the two modules: "
            f"{_describe(before)} vs {_describe(after)}",
            SourceLoc(after_name),
        )


def hlo_plan(
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    entry: str | None,
    engine: str,
) -> Plan:
    from convcanon.verify.engines import ENGINES

    sig_before = module_signature(before_text, before_name, entry)
    sig_after = module_signature(after_text, after_name, sig_before.entry)
    _same_args(sig_before.entry, sig_before.args, sig_after.args, after_name)
    run = ENGINES[engine]
    truth = _hlo_truth(before_text, before_name, after_text, after_name, engine)
    on_reference = [engine == "reference"] * 2 + [truth.run is not ENGINES.get("xla")] * 2
    modules = [
        (before_text, before_name),
        (after_text, after_name),
        (truth.before_text, before_name),
        (truth.after_text, after_name),
    ]
    _check_planned_peaks(modules, on_reference)
    return Plan(
        sig_before.entry,
        sig_before.args,
        lambda rng, dist: random_inputs(sig_before.args, rng, dist, sig_before.weights),
        max(sig_before.reduction, sig_after.reduction),
        run,
        run,
        truth,
    )


def _check_planned_peaks(
    modules: Sequence[tuple[str | None, str]], on_reference: Sequence[bool]
) -> None:
    """Refuse, before the inputs and their f64 copies (twice the bytes) are made, a module with
    a result over the memory limit, whatever engine runs it, and what the reference interpreter
    would refuse at an op where it runs the module (`check_planned_peaks`)."""
    from convcanon.hlo.context import parse_module
    from convcanon.reference import hlo_interp

    for (text, filename), reference in zip(modules, on_reference, strict=True):
        if text is not None:
            module = parse_module(text, filename)
            hlo_interp.check_planned_peaks(module, filename, elementwise=reference)


def _hlo_truth(
    before_text: str, before_name: str, after_text: str, after_name: str, engine: str
) -> Truth:
    """Both modules widened to f64, run where f64 is f64: XLA under `xla`, else the reference
    interpreter (IREE demotes f64 to f32)."""
    from convcanon.verify.engines import ENGINES
    from convcanon.verify.widen import widen_text

    wide_before = widen_text(before_text, before_name)
    if wide_before.text is None:
        return Truth(None, None, None, "", f"no f64 copy: {wide_before.reason}")
    wide_after = widen_text(after_text, after_name)
    run = {"xla": ENGINES["xla"], "reference": ENGINES["reference"]}.get(engine)
    name = "xla" if engine == "xla" else "reference"
    if not wide_before.changed:
        name += "; its floats are f64 already"
    after_reason = "" if wide_after.text is not None else wide_after.reason
    return Truth(
        wide_before.text, wide_after.text, run or _ReferenceElseXla(), name, "", after_reason
    )


class _ReferenceElseXla:
    """The f64 copy on the reference interpreter; on XLA from the first op the interpreter
    lacks (said once; the summary then names XLA as the truth's engine)."""

    def __init__(self) -> None:
        self.fallback: str | None = None

    def __call__(
        self, text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        from convcanon.verify.engines import ENGINES

        if self.fallback is None:
            try:
                return ENGINES["reference"](text, filename, entry, inputs)
            except ConvcanonError as err:
                unsupported = "not supported by the interpreter" in err.message or (
                    "the interpreter does not support" in err.message
                )
                if not unsupported or importlib.util.find_spec("jax") is None:
                    raise
                self.fallback = err.message
                print(f"f64 truth: {err.message}; XLA evaluates the f64 copy instead")
        return ENGINES["xla"](text, filename, entry, inputs)


def half_b_plan(
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    entry: str | None,
    engine: str,
) -> Plan:
    """migraphx/TOSA modules: flat buffers sized from the entry's signature.

    Under `iree` a TOSA module runs on IREE and a migraphx module runs lowered by
    migraphx-to-tosa, except opposite a TOSA module: there the migraphx side is the expected
    result, so it runs on the migraphx reference (lowering it would compare IREE with itself).
    """
    from convcanon.reference.migraphx_interp import flat_args
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
    args = flat_args(function)
    half_b.check_memory(function, args, before_name)  # random inputs are allocated below
    after_args = flat_args(half_b.entry_function(after_module, after_name, name))
    if [(a.shape, _bits(a.dtype)) for a in args] != [(a.shape, _bits(a.dtype)) for a in after_args]:
        _same_args(name, args, after_args, after_name)

    divisors = half_b.integer_divisor_args(function)

    def make_inputs(rng: np.random.Generator, dist: Distribution) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            inputs = [
                random_array(a.dtype, a.shape, rng, dist, _fan_in(i, a.shape, None)).astype(a.dtype)
                for i, a in enumerate(args)
            ]
        for k in divisors:
            inputs[k] = np.where(inputs[k] == 0, np.ones_like(inputs[k]), inputs[k])
        return inputs

    reduction = max(half_b.longest_reduction(m) for m in (before_module, after_module))
    run_before = run_after = HALF_B_ENGINES[engine]
    if any(a.dtype != b.dtype for a, b in zip(args, after_args, strict=True)):
        run_after = _viewing_inputs_as([a.dtype for a in after_args], run_after)
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
    wide_before, why = half_b.widened_text(before_text, before_name)
    if wide_before is None:
        truth = Truth(None, None, None, "", f"no f64 copy: {why}")
    else:
        wide_after, why_not = half_b.widened_text(after_text, after_name)
        reference = HALF_B_ENGINES["reference"]
        truth = Truth(wide_before, wide_after, reference, "migraphx reference", "", why_not)
    note = (
        f"integer divisor argument(s) {', '.join(f'arg{k}' for k in divisors)} drawn nonzero "
        "(division by zero is undefined)"
        if divisors
        else ""
    )
    return Plan(name, args, make_inputs, reduction, run_before, run_after, truth, note)


def _bits(dtype: np.dtype) -> tuple[str, int]:
    """Integers of one width are one buffer whatever their sign: migraphx's ui8 is TOSA's i8."""
    return ("int" if dtype.kind in "iu" else dtype.str, dtype.itemsize)


def _viewing_inputs_as(dtypes: list[np.dtype], run: Engine) -> Engine:
    def viewed(
        text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        return run(text, filename, entry, [x.view(d) for x, d in zip(inputs, dtypes, strict=True)])

    return viewed


def _as_bits_of(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """AFTER's integers read with BEFORE's signedness (a lowering makes ui8 signless i8)."""
    if before.dtype != after.dtype and _bits(before.dtype) == _bits(after.dtype):
        return after.view(before.dtype)
    return after


def _describe(args: list) -> str:
    return "(" + ", ".join(f"{t.element}{list(t.shape)}" for t in args) + ")"
