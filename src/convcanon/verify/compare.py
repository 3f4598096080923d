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
ill-conditioned output. An AFTER that agrees in its own type but whose f64 copy is off by an
approximation's error (an expansion written for f32) is `approximate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.verify.half_b_plan import as_bits_of
from convcanon.verify.inputs import (
    DISTRIBUTIONS,
    Distribution,
    drawn_description,
    perturbed,
    widen_inputs,
)
from convcanon.verify.summary import approximate_reason, ill_conditioned_reason, summary

if TYPE_CHECKING:
    from convcanon.verify.judge import Tally, Tolerances
    from convcanon.verify.plan import Plan, Truth

INCONCLUSIVE = 3  # exit status: no mismatch found, and no signal to say ok on


class Mismatch(ConvcanonError):
    """AFTER differs from the truth; `tally` holds the errors seen up to it."""

    def __init__(self, message: str, loc: SourceLoc, tally: Tally) -> None:
        super().__init__(message, loc)
        self.tally = tally


@dataclass(frozen=True)
class Outcome:
    """One comparison's verdict: `ok`, `approximate` (AFTER's f64 copy within an approximation's
    error of the truth, not exact: both exit 0), `inconclusive` (an output no input family
    moves) or `ill-conditioned` (BEFORE far from its own f64 value), its summary line and what
    it saw. A mismatch is not an outcome: it is raised as an error."""

    status: str
    summary: str
    tally: Tally

    @property
    def exit_code(self) -> int:
        return 0 if self.status in ("ok", "approximate") else INCONCLUSIVE


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
    from convcanon.verify.judge import Tally

    rng = np.random.default_rng(seed)
    tally = Tally()
    used: set[str] = set()
    dull: list[str] = []
    for trial in range(trials):
        drawn = _trial_inputs(plan, before_text, before_name, rng, trial)
        used.add(drawn.dist)
        if drawn.insensitive:
            dull.append(f"trial {trial}: {drawn.insensitive}")
        where = f"engine {engine}, trial {trial}, seed {seed}, {drawn.dist} inputs"
        _judge_trial(plan, drawn, after_text, after_name, tally, tolerances, where)
    return _outcome(plan, tally, dull, sorted(used), trials, engine, after_name)


def _judge_trial(
    plan: Plan,
    drawn: Drawn,
    after_text: str,
    after_name: str,
    tally: Tally,
    tolerances: Tolerances,
    where: str,
) -> None:
    """AFTER (and its f64 copy) run on one trial's inputs, each output judged against BEFORE's
    and the truth; the first that differs is raised, with the errors tallied up to it."""
    from convcanon.verify.judge import judge_output

    out_before, truth = drawn.out_before, drawn.truth
    out_after = plan.run_after(after_text, after_name, plan.entry, drawn.inputs)
    if len(out_before) != len(out_after):
        raise ConvcanonError(
            f"mismatch: {len(out_before)} results before, {len(out_after)} after",
            SourceLoc(after_name),
        )
    after_f64 = _run_truth(plan.truth, plan.truth.after_text, after_name, plan.entry, drawn.inputs)
    for i, (b, a) in enumerate(zip(out_before, out_after, strict=True)):
        wide = None if truth is None else truth[i]
        wide_after = None if after_f64 is None else after_f64[i]
        b = np.asarray(b)
        after = as_bits_of(b, np.asarray(a))
        verdict = judge_output(i, b, after, wide, wide_after, plan.reduction, tally, tolerances)
        if not verdict.ok:
            raise Mismatch(f"mismatch ({where}): {verdict.message}", SourceLoc(after_name), tally)


def _outcome(
    plan: Plan,
    tally: Tally,
    dull: list[str],
    used: list[str],
    trials: int,
    engine: str,
    after_name: str,
) -> Outcome:
    """The verdict once every trial passed: inconclusive when an output responded to no input
    family, ill-conditioned when rounding decides, else ok; an error when nothing had elements."""
    if not tally.float_elements and not tally.exact_elements:
        raise ConvcanonError(
            f"nothing to compare: the results of @{plan.entry} have no elements",
            SourceLoc(after_name),
        )
    status, why = "ok", ""
    if dull:
        status, why = "inconclusive", "; ".join(dull)
    elif tally.ill_conditioned:
        status, why = "ill-conditioned", ill_conditioned_reason(tally)
    elif tally.approximate:
        status, why = "approximate", approximate_reason(tally)
    line = summary(status, why, trials, engine, plan.truth, tally, used)
    return Outcome(status, line + (f", {plan.input_note}" if plan.input_note else ""), tally)


def _run_truth(
    truth: Truth, text: str | None, filename: str, entry: str, inputs: list[np.ndarray]
) -> list[np.ndarray] | None:
    """`text` (a module's f64 copy) run on the truth's engine at the inputs in f64; None
    when there is no copy to run."""
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
        name = drawn_description(dist, plan.args)
        out_before = plan.run_before(before_text, before_name, plan.entry, inputs)
        truth = _run_truth(plan.truth, plan.truth.before_text, before_name, plan.entry, inputs)
        bad = non_finite(truth if truth is not None else [np.asarray(b) for b in out_before])
        what = "BEFORE in f64" if truth is not None else "BEFORE"
        if not bad and truth is not None:  # BEFORE overflowing its own type compares nothing
            bad = non_finite([np.asarray(b) for b in out_before])
            what = "BEFORE in its own type"
        if bad:
            detail = ", ".join(f"output {i}: {n} of {size} not finite" for i, n, size in bad)
            problems.append(f"{name} inputs make {what} non-finite ({detail})")
            continue
        drawn = Drawn(name, inputs, truth, out_before)
        dull = _insensitive_outputs(plan, before_text, before_name, drawn, dist, rng)
        if not dull:
            if problems:
                print(f"trial {trial}: {'; '.join(problems)}; drew {name} inputs instead")
            return drawn
        problems.append(f"{name} inputs: {dull}")
        first = first or drawn
    if first is not None:
        reason = "no input family moves every output (" + "; ".join(problems) + ")"
        return Drawn(first.dist, first.inputs, first.truth, first.out_before, reason)
    raise ConvcanonError(
        f"nothing to compare in trial {trial}: " + "; ".join(problems),
        SourceLoc(before_name),
    )


def _insensitive_outputs(
    plan: Plan,
    before_text: str,
    before_name: str,
    drawn: Drawn,
    dist: Distribution,
    rng: np.random.Generator,
) -> str:
    """Which outputs do not respond to the inputs (a saturated softmax, a constant): a float
    output, the truth (or BEFORE) at inputs scaled by up to `perturbation` of their types,
    element-wise; an integer or bool output, or any output when there is no float input to
    scale, at inputs drawn again from `dist` (a scaling near 1 moves no integer: an integer
    output clipped to a constant, or a comparison always false, said ok of any rewrite under
    it, beside a float output or not). "" when every output responds, or when there are no
    inputs to move."""
    from convcanon.verify.judge import MIN_RESPONSIVE, is_float, perturbation

    if not any(x.size for x in drawn.inputs):
        return ""
    scalable = any(is_float(x.dtype) and x.size for x in drawn.inputs)
    outputs = [np.asarray(b) for b in drawn.out_before]
    redrawn = [not (scalable and is_float(b.dtype)) for b in outputs]
    reach = max([perturbation(x.dtype) for x in drawn.inputs if is_float(x.dtype)], default=0.0)
    shares: dict[int, float] = {}
    if not all(redrawn):
        moved_inputs = perturbed(drawn.inputs, rng)
        shares |= _moved_shares(plan, before_text, before_name, drawn, moved_inputs, False)
    if any(redrawn):
        moved_inputs = plan.make_inputs(rng, dist)
        again = _moved_shares(plan, before_text, before_name, drawn, moved_inputs, True)
        shares |= {i: share for i, share in again.items() if redrawn[i]}
    dull = []
    for i, share in sorted(shares.items()):
        how = "drawn again" if redrawn[i] else f"scaled by 1 +- {reach:g}"
        if share < MIN_RESPONSIVE:
            dull.append(
                f"output {i} does not respond ({share:.0%} of its elements move when the inputs "
                f"are {how}; at least {MIN_RESPONSIVE:.0%} must)"
            )
    return ", ".join(dull)


def _moved_shares(
    plan: Plan,
    before_text: str,
    before_name: str,
    drawn: Drawn,
    moved_inputs: list[np.ndarray],
    exact_too: bool,
) -> dict[int, float]:
    """Each output's share of elements that move from `drawn` to `moved_inputs`: the truth's
    (or BEFORE's, without one); integer and bool outputs' only when `exact_too`."""
    from convcanon.verify.judge import responsive_share

    if drawn.truth is not None:
        base = drawn.truth
        moved = _run_truth(
            plan.truth, plan.truth.before_text, before_name, plan.entry, moved_inputs
        )
    else:
        base = [np.asarray(b) for b in drawn.out_before]
        moved = plan.run_before(before_text, before_name, plan.entry, moved_inputs)
    assert moved is not None
    return {
        i: responsive_share(np.asarray(own), np.asarray(b), np.asarray(m), exact_too)
        for i, (own, b, m) in enumerate(zip(drawn.out_before, base, moved, strict=True))
    }
