"""How `verify` decides, per output: a translation validator's judgement, not a fixed tolerance.

The truth is BEFORE evaluated in f64 (a widened copy of the module). Two checks, both needed:

- AFTER in its own type, on the chosen engine, may be at most a small factor worse than BEFORE
  in its own type on the same engine, plus a floor: one step of the type at the output's scale,
  a few steps of the compute type (engines approximate exp, tanh, rsqrt to a few ulps), and the
  noise of a K-term sum in the accumulator (~sqrt(K) roundings of f32 for types narrower than
  f32, which engines accumulate in f32; of the type itself otherwise). Norm-wise, over the
  whole output: an exact reassociation rounds differently element by element, but not worse.
- AFTER's own f64 copy must agree with the truth to f64 rounding. Rounding cannot hide a wrong
  answer there, so a 10% change of one element is caught even in f8, where one rounding step of
  the type is 12.5% or more. An AFTER whose f64 copy is off by more than f64 rounding but within
  a few dozen ulps of the type it computes in is `approximate`, not wrong: an expansion written
  for the type (the polynomial `chlo-legalize-to-stablehlo` writes for an f32 `erf`) is as
  accurate as that type needs, and widening does not make it exact.

Integers and bools must equal BEFORE exactly. A truth that is not finite compares nothing: the
caller draws other inputs or fails, never passes.

Every error is kept absolute and relative to its output's scale (max |truth|): 4.56 means
nothing without knowing the outputs are near 1e5. An output whose BEFORE is itself far from its
f64 value (over `ILL_CONDITIONED` of its scale) is ill-conditioned: rounding, not the rewrite,
decides what its typed comparison sees, and the caller names it instead of saying ok.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

# AFTER may be this many times worse than BEFORE (norm-wise) before the floor is added.
FACTOR = 8.0
# the floor: (eps(type) + eps(accumulator) * (APPROX_ULPS + sqrt(K + 1))) * max|truth|; engines'
# exp, tanh, rsqrt are approximations good to a few ulps of the type they compute in
APPROX_ULPS = 4.0
# the f64 copies: F64_ULPS * eps(f64) * sqrt(K + 1) * max|truth|, generous (rounding differences
# grow with depth; a wrong answer is off by far more than 1e-12 of the output's scale)
F64_ULPS = 1024.0
# past that, AFTER's f64 copy is approximate (not wrong) within APPROXIMATE_ULPS * eps(compute
# type) * max|truth|: upstream's f32 expansions of erf, erfinv, lgamma, digamma, polygamma, i1e
# stay within 4.5 ulps of f32 of the output's scale widened (an expansion errs relative to its
# intermediate values, which may exceed the output); 64 is 128 times under one step of f16
APPROXIMATE_ULPS = 64.0
# BEFORE's own error over its output's scale past which the output is ill-conditioned:
# ILL_CONDITIONED_ULPS steps of the output's type (f32: 1.2e-3), at most ILL_CONDITIONED_MAX,
# and never under ROUNDING_ULPS steps (an f8 output is off by a step of 12.5% by rounding alone)
ILL_CONDITIONED_ULPS = 10_000.0
ILL_CONDITIONED_MAX = 0.1
ROUNDING_ULPS = 16.0
# an output responds to its inputs when at least MIN_RESPONSIVE of its elements move by more
# than RESPONSE of its scale when every float input is scaled by a random factor within
# PERTURBATION (at least PERTURBATION_ULPS steps of its type, at most PERTURBATION_MAX) of 1.
# Small, so that a saturated softmax keeps its 0s and 1s (a large one could flip which class
# is 1: that moves, but says nothing about the values under it); under 1, so that no factor
# flips a sign (16 steps of f8E4M3FN are 2.0: a positive input could turn negative)
PERTURBATION = 1e-3
PERTURBATION_ULPS = 16.0
PERTURBATION_MAX = 0.5
RESPONSE = 1e-6
MIN_RESPONSIVE = 0.1


@dataclass(frozen=True)
class Tolerances:
    """What AFTER's typed error may add to FACTOR x BEFORE's: `atol + rtol * scale`; `rtol`
    None is the type's floor (eps(type) + eps(accumulator) * (APPROX_ULPS + sqrt(K + 1)))."""

    rtol: float | None = None
    atol: float = 0.0

    def floor(self, dtype: np.dtype, reduction: int, scale: float) -> float:
        if self.rtol is not None:
            return self.atol + self.rtol * scale
        eps = epsilon(dtype)
        accumulator = accumulator_epsilon(dtype)
        return self.atol + (eps + accumulator * (APPROX_ULPS + math.sqrt(reduction + 1))) * scale


DEFAULT_TOLERANCES = Tolerances()


def is_narrow_int(dtype: np.dtype) -> bool:
    """ml_dtypes' int4/uint4 (and 2-bit) types: numpy calls them void, they hold integers."""
    return dtype.kind == "V" and dtype.name.startswith(("int", "uint"))


def is_float(dtype: np.dtype) -> bool:
    """Floats, complex and ml_dtypes' bf16/fp8/fp4 (void to numpy), not its narrow integers."""
    return dtype.kind in "fc" or (dtype.kind == "V" and not is_narrow_int(dtype))


def epsilon(dtype: np.dtype) -> float:
    if dtype.kind == "c":
        dtype = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    return float(ml_dtypes.finfo(dtype).eps)


def accumulator_epsilon(dtype: np.dtype) -> float:
    """The epsilon of the type `dtype` is computed in: f32 for narrower floats (engines and
    upstream's expansions compute them in f32), the type itself otherwise."""
    return min(epsilon(dtype), epsilon(np.dtype(np.float32)))


def _compute_type(dtype: np.dtype) -> str:
    return "f32" if accumulator_epsilon(dtype) < epsilon(dtype) else "its type"


def non_finite(values: list[np.ndarray]) -> list[tuple[int, int, int]]:
    """(output, non-finite count, size) of each float output with a NaN or an infinity."""
    found = []
    for index, value in enumerate(values):
        if is_float(value.dtype) and value.size:
            wide = value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)
            count = int((~np.isfinite(wide)).sum())
            if count:
                found.append((index, count, value.size))
    return found


@dataclass
class Tally:
    """What was compared over all trials: element counts and the worst errors seen."""

    float_elements: int = 0
    exact_elements: int = 0
    worst_after: float = 0.0
    worst_before: float = 0.0
    worst_share: float = 0.0  # AFTER's error / its allowance, the closest call
    worst_f64: float = 0.0
    f64_compared: int = 0
    worst_f64_share: float = 0.0
    worst_after_relative: float = 0.0  # AFTER's error over its output's scale, the worst
    worst_before_relative: float = 0.0
    scale: float = 0.0  # the largest output scale (max |truth|) seen
    # per ill-conditioned output: BEFORE's error, its share of the scale, AFTER's, its share
    ill_conditioned: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)
    # per approximate output: its elements whose f64 copy is past f64 rounding, and the worst
    # such error over the output's scale
    approximate: dict[int, tuple[int, float]] = field(default_factory=dict)
    worst_approximate_share: float = 0.0  # of the approximation's allowance

    def errors(self) -> str:
        """AFTER's and BEFORE's worst errors, absolute and relative to the output's scale."""
        return (
            f"AFTER's max error {self.worst_after:.3g} ({self.worst_after_relative:.3g} of the "
            f"output's scale), BEFORE's {self.worst_before:.3g} "
            f"({self.worst_before_relative:.3g}); output scale {self.scale:.3g}"
        )

    def equal_elements(self) -> str:
        """What the exact comparison of integer and bool outputs found."""
        return f"{self.exact_elements} integer/bool element(s) equal"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str = ""


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _errors(x: np.ndarray, truth: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        err = np.abs(_wide(x) - truth)
    return np.where(np.isnan(err), np.inf, err)


def judge_output(
    index: int,
    before: np.ndarray,
    after: np.ndarray,
    truth: np.ndarray | None,
    after_f64: np.ndarray | None,
    reduction: int,
    tally: Tally,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
) -> Verdict:
    """Judge output `index`; `truth` is BEFORE in f64 (None: BEFORE itself is the truth)."""
    if before.shape != after.shape:
        return Verdict(False, f"output {index}: shape {list(before.shape)} != {list(after.shape)}")
    if before.dtype != after.dtype:
        return Verdict(False, f"output {index}: element type {after.dtype}, before {before.dtype}")
    if before.size == 0:
        return Verdict(True)
    if not is_float(before.dtype):
        return _judge_exact(index, before, after, tally)
    errors = _FloatErrors.measure(before, after, truth, after_f64, reduction, tolerances)
    errors.record(index, before, tally)
    bad = errors.typed_bad | errors.f64_bad
    if not bad.any():
        return Verdict(True)
    return Verdict(False, errors.mismatch(index, before, after, bad))


def _judge_exact(index: int, before: np.ndarray, after: np.ndarray, tally: Tally) -> Verdict:
    """Integers and bools: equal to BEFORE element for element, or the first that is not."""
    tally.exact_elements += before.size
    bad = before != after
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        return Verdict(
            False,
            f"output {index} differs at index {list(where)}: before {before[where]}, "
            f"after {after[where]} ({int(bad.sum())} of {bad.size} elements; must be equal)",
        )
    return Verdict(True)


@dataclass(frozen=True)
class _FloatErrors:
    """One float output's errors against the truth `t` and what each check allows, kept
    together so the tally and the mismatch message read the same numbers."""

    t: np.ndarray  # the truth, wide
    own_truth: bool  # BEFORE itself is the truth (no f64 copy)
    largest: float  # max |truth|
    scale: float  # `largest`, or the smallest f64 when the truth is all zeros
    err_before: np.ndarray
    err_after: np.ndarray
    floor: float
    allowed: float  # FACTOR x BEFORE's worst error + floor
    typed_bad: np.ndarray
    f64_allowed: float  # f64 rounding: AFTER's f64 copy past it is approximate
    approximate_allowed: float  # and past this, wrong
    after_f64: np.ndarray | None  # AFTER evaluated in f64; None when it was not run
    err_f64: np.ndarray | None  # its error against the truth
    f64_bad: np.ndarray

    @staticmethod
    def measure(
        before: np.ndarray,
        after: np.ndarray,
        truth: np.ndarray | None,
        after_f64: np.ndarray | None,
        reduction: int,
        tolerances: Tolerances,
    ) -> _FloatErrors:
        """Every error and allowance of one output, computed once."""
        own_truth = truth is None
        t = _wide(before) if truth is None else _wide(np.asarray(truth))
        largest = float(np.abs(t).max())
        scale = largest if largest > 0 else float(ml_dtypes.finfo(np.float64).tiny)
        err_before, err_after = _errors(before, t), _errors(after, t)
        # a truth in BEFORE's own type carries BEFORE's rounding: allow AFTER twice the floor
        floor = tolerances.floor(before.dtype, reduction, scale) * (2.0 if own_truth else 1.0)
        allowed = FACTOR * float(err_before.max()) + floor
        f64_allowed = F64_ULPS * epsilon(np.dtype(np.float64)) * math.sqrt(reduction + 1) * scale
        approximate_allowed = (
            f64_allowed + APPROXIMATE_ULPS * accumulator_epsilon(before.dtype) * scale
        )
        after_values = err_f64 = None
        f64_bad = np.zeros(before.shape, dtype=bool)
        if after_f64 is not None and not own_truth:
            after_values = np.asarray(after_f64)
            err_f64 = _errors(after_values, t)
            f64_bad = err_f64 > approximate_allowed
        return _FloatErrors(
            t=t,
            own_truth=own_truth,
            largest=largest,
            scale=scale,
            err_before=err_before,
            err_after=err_after,
            floor=floor,
            allowed=allowed,
            typed_bad=err_after > allowed,
            f64_allowed=f64_allowed,
            approximate_allowed=approximate_allowed,
            after_f64=after_values,
            err_f64=err_f64,
            f64_bad=f64_bad,
        )

    def record(self, index: int, before: np.ndarray, tally: Tally) -> None:
        """Fold this output's worst errors (and closest call) into the tally."""
        if self.err_f64 is not None:
            worst_f64 = float(self.err_f64.max())
            tally.worst_f64 = max(tally.worst_f64, worst_f64)
            tally.worst_f64_share = max(tally.worst_f64_share, worst_f64 / self.f64_allowed)
            tally.f64_compared += before.size
            inexact = int(np.count_nonzero(self.err_f64 > self.f64_allowed))
            if inexact:
                count, worst = tally.approximate.get(index, (0, 0.0))
                tally.approximate[index] = (count + inexact, max(worst, worst_f64 / self.scale))
                share = worst_f64 / self.approximate_allowed
                tally.worst_approximate_share = max(tally.worst_approximate_share, share)
        tally.float_elements += before.size
        worst_after, worst_before = float(self.err_after.max()), float(self.err_before.max())
        scale = self.scale
        tally.worst_after = max(tally.worst_after, worst_after)
        tally.worst_before = max(tally.worst_before, worst_before)
        tally.worst_after_relative = max(tally.worst_after_relative, worst_after / scale)
        tally.worst_before_relative = max(tally.worst_before_relative, worst_before / scale)
        tally.scale = max(tally.scale, self.largest)
        if not self.own_truth and worst_before / scale > ill_conditioned_bound(before.dtype):
            seen = tally.ill_conditioned.get(index, (0.0, 0.0, 0.0, 0.0))
            tally.ill_conditioned[index] = (
                max(seen[0], worst_before),
                max(seen[1], worst_before / scale),
                max(seen[2], worst_after),
                max(seen[3], worst_after / scale),
            )
        allowed = self.allowed
        share = worst_after / allowed if allowed > 0 else (0.0 if worst_after == 0 else math.inf)
        tally.worst_share = max(tally.worst_share, share)

    def mismatch(self, index: int, before: np.ndarray, after: np.ndarray, bad: np.ndarray) -> str:
        """The first element that fails a check, and which check it fails by how much."""
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        truth_text = "" if self.own_truth else f", f64 truth {self.t[where]:.6g}"
        if self.typed_bad[where]:
            err = self.err_after[where]
            why = (
                f"AFTER's error {err:.3g} > allowed {self.allowed:.3g} "
                f"({FACTOR:g} x BEFORE's worst error {float(self.err_before.max()):.3g} + floor "
                f"{self.floor:.3g}; {err / self.scale:.3g} of the output's scale {self.scale:.3g})"
            )
        else:
            assert self.err_f64 is not None and self.after_f64 is not None
            allowed = self.approximate_allowed
            why = (
                f"AFTER evaluated in f64 gives {self.after_f64[where]:.6g}, "
                f"{self.err_f64[where]:.3g} from the truth (allowed {allowed:.3g}: f64 rounding "
                f"and {APPROXIMATE_ULPS:g} steps of {_compute_type(before.dtype)})"
            )
        return (
            f"output {index} differs at index {list(where)}: before {before[where]}, "
            f"after {after[where]}{truth_text} ({int(bad.sum())} of {bad.size} elements; {why})"
        )


def ill_conditioned_bound(dtype: np.dtype) -> float:
    """BEFORE's error over its scale past which an output of `dtype` is ill-conditioned."""
    eps = epsilon(dtype)
    return max(min(ILL_CONDITIONED_ULPS * eps, ILL_CONDITIONED_MAX), ROUNDING_ULPS * eps)


def responsive_share(
    output: np.ndarray, base: np.ndarray, moved: np.ndarray, exact_too: bool = False
) -> float:
    """The share of `output`'s elements that moved (`base` to `moved`, both wide) by more than
    RESPONSE of its scale; an integer or bool output's share that changed at all when
    `exact_too` (the inputs were drawn again), else 1.0."""
    if output.size == 0:
        return 1.0
    if not is_float(output.dtype):
        if not exact_too:
            return 1.0
        return float(np.count_nonzero(np.asarray(base) != np.asarray(moved))) / output.size
    wide_base, wide_moved = _wide(np.asarray(base)), _wide(np.asarray(moved))
    scale = float(np.abs(wide_base).max())
    if not math.isfinite(scale) or scale == 0.0:
        return 0.0
    with np.errstate(all="ignore"):
        moved_by = np.abs(wide_moved - wide_base)
    return float(np.count_nonzero(moved_by > RESPONSE * scale)) / output.size


def perturbation(dtype: np.dtype) -> float:
    """How far from 1 the factors that scale an input of `dtype` reach."""
    return min(max(PERTURBATION, PERTURBATION_ULPS * epsilon(dtype)), PERTURBATION_MAX)
