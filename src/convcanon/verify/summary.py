"""The line `verify` prints for one comparison: its verdict, what the float outputs were judged
against and how closely, how many integer elements matched, and which input families were drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convcanon.verify.plan import ReferenceElseXla

if TYPE_CHECKING:
    from convcanon.verify.judge import Tally
    from convcanon.verify.plan import Truth


def summary(
    status: str, why: str, trials: int, engine: str, truth: Truth, tally: Tally, used: list[str]
) -> str:
    """`status` and `why`, then the errors seen against the truth (named by the engine it ran on,
    XLA once the reference fell back to it) and the input families drawn."""
    parts = [f"{status}: {trials} trial(s) on engine {engine}"]
    if why:
        parts.append(why)
    if tally.float_elements:
        name = truth.name
        if isinstance(truth.run, ReferenceElseXla) and truth.run.fallback is not None:
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
        if tally.approximate:
            parts.append(
                f"AFTER in f64 within {tally.worst_f64:.3g} of the truth "
                f"({tally.worst_approximate_share:.0%} of an approximation's allowance)"
            )
        elif tally.f64_compared:
            parts.append(
                f"AFTER in f64 within {tally.worst_f64:.3g} of the truth "
                f"({tally.worst_f64_share:.0%} of its allowance)"
            )
        elif truth.before_text is not None:
            parts.append(f"AFTER not run in f64 ({truth.after_reason or 'no f64 copy'})")
    if tally.exact_elements:
        parts.append(tally.equal_elements())
    parts.append(f"inputs {', '.join(used)}")
    return "; ".join(parts)


def ill_conditioned_reason(tally: Tally) -> str:
    """Why each ill-conditioned output decides nothing: BEFORE's and AFTER's distance from f64."""
    return "; ".join(
        f"output {i}: BEFORE in its own type is {before:.3g} from its f64 value ({share:.3g} of "
        f"its scale), AFTER {after:.3g} ({after_share:.3g}): rounding, not the rewrite, decides "
        "what the typed comparison sees"
        for i, (before, share, after, after_share) in sorted(tally.ill_conditioned.items())
    )


def approximate_reason(tally: Tally) -> str:
    """Where AFTER's f64 copy is past f64 rounding though its own type agrees: an approximation
    written for the type it computes in (an expansion of erf or lgamma), not an exact rewrite."""
    from convcanon.verify.judge import APPROXIMATE_ULPS

    outputs = ", ".join(
        f"output {i}: {count} element(s), up to {worst:.3g} of its scale"
        for i, (count, worst) in sorted(tally.approximate.items())
    )
    return (
        f"AFTER evaluated in f64 is past f64 rounding ({outputs}) but within {APPROXIMATE_ULPS:g} "
        "steps of the type it computes in: AFTER approximates BEFORE, as an expansion written "
        "for that type does (chlo-legalize-to-stablehlo's erf, lgamma), and is not exact"
    )
