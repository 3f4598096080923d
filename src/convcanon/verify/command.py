"""`convcanon verify BEFORE AFTER` (or `verify FILE -p PIPELINE`): each rewritten conv judged
on its own (`local`), then the whole program (`compare`), a verdict and an exit status.

Shape-polymorphic modules (`tensor<?x...>` arguments, as jax.export writes them) are refined to
static shapes at each batch size and judged at each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError
from convcanon.fileio.limits import check_timeout
from convcanon.fileio.module_input import read_mlir_input
from convcanon.fileio.reading import refuse_stdin_twice
from convcanon.reference.parsed import each_text_parsed_once
from convcanon.verify.compare import compare
from convcanon.verify.engine_process import DEFAULT_TIME_LIMIT, time_limit
from convcanon.verify.half_b_plan import half_b_plan
from convcanon.verify.placement import one_report
from convcanon.verify.plan import hlo_plan

if TYPE_CHECKING:
    from convcanon.verify.judge import Tolerances

DEFAULT_BATCH_SIZES = (1, 2, 5)
MAX_TRIALS = 10_000  # each trial runs both modules: a count past this would never end


def verify_command(
    before: str,
    after: str | None,
    engine: str = "reference",
    trials: int = 3,
    seed: int = 0,
    entry: str | None = None,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    timeout: float = DEFAULT_TIME_LIMIT,
    pipeline: str | None = None,
    rtol: float | None = None,
    atol: float = 0.0,
) -> int:
    """Run both modules on `trials` random input sets; a mismatch is an error (exit 1) at AFTER,
    no signal is exit `compare.INCONCLUSIVE` (3).

    With `pipeline` (and no AFTER), AFTER is BEFORE after it, and each rewritten conv is first
    judged on its own (`convcanon.verify.local`); two files are judged conv by conv too where
    AFTER carries BEFORE's locations. Shape-polymorphic StableHLO/MHLO modules (`tensor<?x...>`
    entry arguments) are refined to static shapes at each of `batch_sizes` (every dynamic dim
    set to it) and compared at each. Each XLA or IREE run (one module, one trial) may take at
    most `timeout` seconds.
    """
    from convcanon.verify.judge import Tolerances

    tolerances = Tolerances(rtol, atol)
    check_options(engine, trials, seed, batch_sizes, tolerances)
    if after is None and pipeline is None:
        raise UsageError("verify needs AFTER, or -p PIPELINE to make AFTER from BEFORE")
    if after is not None and pipeline is not None:
        raise UsageError("verify takes AFTER or -p PIPELINE, not both")
    refuse_stdin_twice({"BEFORE": before, "AFTER": after})
    with time_limit(check_timeout(timeout)), one_report(), each_text_parsed_once():
        return _verify(
            before, after, engine, trials, seed, entry, batch_sizes, pipeline, tolerances
        )


def check_options(
    engine: str, trials: int, seed: int, batch_sizes: Sequence[int], tolerances: Tolerances
) -> None:
    """Usage errors before anything is read."""
    from convcanon.verify.engines import ENGINES

    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    if not 1 <= trials <= MAX_TRIALS:
        raise UsageError(f"--trials must be at least 1 and at most {MAX_TRIALS}")
    if seed < 0:
        raise UsageError("--seed must be a non-negative integer")
    if not batch_sizes or any(b < 1 for b in batch_sizes):
        raise UsageError("--batch-sizes must be integers >= 1")
    for name, value in (("--rtol", tolerances.rtol), ("--atol", tolerances.atol)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise UsageError(f"{name} must be a finite number >= 0, not {value}")


def _verify(
    before: str,
    after: str | None,
    engine: str,
    trials: int,
    seed: int,
    entry: str | None,
    batch_sizes: Sequence[int],
    pipeline: str | None,
    tolerances: Tolerances,
) -> int:
    before_name, before_text = read_mlir_input(before)
    if pipeline is not None:
        from convcanon.verify.local import after_pipeline

        after_name, after_text = before_name, after_pipeline(before_text, before_name, pipeline)
    else:
        assert after is not None
        after_name, after_text = read_mlir_input(after)
    from convcanon.ir_kind import sniff_framework

    # A module without dialect ops (a lowering that folded to a bare return) is either kind.
    kinds = {sniff_framework(t, "") for t in (before_text, after_text)} - {""} or {"hlo"}
    if len(kinds) > 1:
        raise ConvcanonError(
            "cannot compare a StableHLO/MHLO module with a migraphx/TOSA module",
            SourceLoc(after_name),
        )
    files = (before_text, before_name, after_text, after_name)
    errors: list[ConvcanonError] = []
    code = 0
    if kinds == {"hlo"}:
        from convcanon.verify.local import judge_convs_of_file

        local = judge_convs_of_file(*files, pipeline, engine, trials, seed, tolerances)
        errors += local.errors
    try:
        code = _verify_whole(files, kinds, engine, trials, seed, entry, batch_sizes, tolerances)
    except ConvcanonError as err:
        errors.append(err)
    if errors:
        raise errors[0] if len(errors) == 1 else SeveralErrors(errors)
    return code


class SeveralErrors(ConvcanonError):
    """The local check's mismatches and the whole program's, each at its own place with its
    own notes."""

    def __init__(self, errors: list[ConvcanonError]) -> None:
        super().__init__(errors[0].message)
        self.errors = errors

    def render(self) -> str:
        return "\n".join(err.render() for err in self.errors)


def _verify_whole(
    files: tuple[str, str, str, str],
    kinds: set[str],
    engine: str,
    trials: int,
    seed: int,
    entry: str | None,
    batch_sizes: Sequence[int],
    tolerances: Tolerances,
) -> int:
    """The whole-program verdict: its summary printed, its exit status returned."""
    before_text, before_name, after_text, after_name = files
    if kinds == {"xdsl"}:
        plan = half_b_plan(*files, entry, engine)
        outcome = compare(plan, *files, engine, trials, seed, tolerances)
        print(outcome.summary)
        return outcome.exit_code
    from convcanon.refine import check_batch_sizes, dynamic_arguments, refine_at_batch

    dynamic = [
        dynamic_arguments(t, n, entry)
        for t, n in ((before_text, before_name), (after_text, after_name))
    ]
    if not any(dynamic):
        outcome = compare(hlo_plan(*files, entry, engine), *files, engine, trials, seed, tolerances)
        print(outcome.summary)
        return outcome.exit_code
    batch_sizes = list(dict.fromkeys(batch_sizes))  # each size once, in the order given
    for text, name in ((before_text, before_name), (after_text, after_name)):
        check_batch_sizes(text, name, batch_sizes)
    shown = " vs ".join(dict.fromkeys(f"({', '.join(d)})" for d in dynamic if d))
    sizes = ", ".join(map(str, batch_sizes))
    print(f"shape-polymorphic: @main takes {shown}; both refined at batch size {sizes}")
    code = 0
    for batch in batch_sizes:
        try:
            refined = (
                refine_at_batch(before_text, before_name, batch, entry),
                before_name,
                refine_at_batch(after_text, after_name, batch, entry),
                after_name,
            )
            plan = hlo_plan(*refined, entry, engine)
            outcome = compare(plan, *refined, engine, trials, seed, tolerances)
        except ConvcanonError as err:
            err.message = f"batch size {batch}: {err.message}"
            raise
        print(f"batch {batch}: {outcome.summary}")
        code = max(code, outcome.exit_code)
    return code
