"""Local translation validation: every rewritten conv judged as a program of its own.

A whole program can hide a wrong rewrite (a saturated softmax turns any error into the same 0s
and 1s); one conv cannot. Each site pairs a conv of BEFORE with the ops AFTER has in its place
(`regions`); the conv alone, on operands drawn fresh at its types, in f64 is the truth, and the
rewrite's ops run on the chosen engine, judged by the same rules as a whole program (`compare`).
With a pipeline, BEFORE is first printed without its locations and parsed again, so each op's
location is its own place in that text: two convs on one source line cannot be confused.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass, field

from convcanon.diagnostics import ConvcanonError
from convcanon.verify.judge import DEFAULT_TOLERANCES, Tolerances

_PLAIN_NAME = "<BEFORE without its locations>"
_LOCAL_ENTRY = "main"
_DYNAMIC_BATCH = 2  # a conv with a dynamic batch is judged at this size


@dataclass(frozen=True)
class ConvVerdict:
    """One conv's local verdict: `ok`, `mismatch`, `error` (an engine refused a piece),
    `inconclusive`, `ill-conditioned`, or `not judged` (its rewrite could not be isolated;
    `message` says why). Errors are AFTER's worst, absolute and over the output's scale."""

    location: str
    verdict: str
    error: float | None = None
    relative_error: float | None = None
    before_error: float | None = None
    message: str = ""

    def line(self) -> str:
        detail = self.message.removeprefix("mismatch ")
        return f"{self.location}: {self.verdict}" + (f": {detail}" if detail else "")


@dataclass
class LocalReport:
    """Every rewritten conv's verdict, and the errors (mismatches) to report at each conv."""

    verdicts: list[ConvVerdict] = field(default_factory=list)
    errors: list[ConvcanonError] = field(default_factory=list)


def judge_convs(
    before_text: str,
    before_name: str,
    after_text: str | None = None,
    after_name: str = "<after>",
    pipeline: str | None = None,
    engine: str = "reference",
    trials: int = 1,
    seed: int = 0,
    tolerances: Tolerances = DEFAULT_TOLERANCES,
) -> LocalReport:
    """Judge each conv of BEFORE whose ops AFTER changed: AFTER is `after_text` (paired by
    location: print it with locations) or, with `pipeline`, BEFORE after it."""
    from convcanon.hlo.context import print_module, source_loc
    from convcanon.reference.parsed import read_only_file, read_only_module
    from convcanon.verify.regions import conv_sites, function_ops, is_conv

    original = read_only_file(before_text, before_name)
    convs = [op for op in function_ops(original.module) if is_conv(op)]
    positions = original.positions_of([op.name for op in convs])  # of a debug-info input
    labels = [
        source_loc(op.location, before_name, position=position)
        for op, position in zip(convs, positions, strict=True)
    ]
    before_module, name = original.module, before_name
    if pipeline is not None:
        plain = print_module(original.module)
        after_text = after_pipeline(plain, _PLAIN_NAME, pipeline, with_locations=True)
        before_module, name, after_name = read_only_module(plain, _PLAIN_NAME), _PLAIN_NAME, ""
    assert after_text is not None
    after_module = read_only_module(after_text, after_name)
    sites = conv_sites(before_module, name, after_module, after_name, labels)
    report = LocalReport()
    judged: dict[tuple[str, str], ConvVerdict] = {}
    for site in sites:
        if site.before is not None and not site.changed:
            continue
        label = str(site.loc)
        if site.before is None or site.after is None:
            report.verdicts.append(ConvVerdict(label, "not judged", message=site.reason))
            continue
        pair = (site.before, site.after)
        if pair not in judged:
            judged[pair] = _judge_piece(site.before, site.after, engine, trials, seed, tolerances)
        verdict = judged[pair]
        verdict = ConvVerdict(label, *[getattr(verdict, f) for f in _FIELDS])
        report.verdicts.append(verdict)
        if verdict.verdict in ("mismatch", "error"):
            report.errors.append(
                ConvcanonError(f"local check of this conv's rewrite: {verdict.message}", site.loc)
            )
    return report


def after_pipeline(
    text: str, filename: str, pipeline: str, with_locations: bool | None = None
) -> str:
    """`text` after `pipeline`, printed as text, with every op's location or none as asked
    (None: as the input had them)."""
    from convcanon.driver import PrintOptions, transform_text

    options = PrintOptions(debug_info=with_locations)
    printed = transform_text(text, filename, pipeline, print_options=options)
    assert isinstance(printed, str)  # text is the default output format
    return printed


_FIELDS = ("verdict", "error", "relative_error", "before_error", "message")


def _judge_piece(
    before: str, after: str, engine: str, trials: int, seed: int, tolerances: Tolerances
) -> ConvVerdict:
    from convcanon.verify.compare import Mismatch, compare
    from convcanon.verify.plan import hlo_plan

    name = "<conv>"
    try:
        if "?" in before:  # a dynamic batch: judged at one size
            from convcanon.refine import refine_at_batch

            before = refine_at_batch(before, name, _DYNAMIC_BATCH, _LOCAL_ENTRY)
            after = refine_at_batch(after, name, _DYNAMIC_BATCH, _LOCAL_ENTRY)
        with contextlib.redirect_stdout(io.StringIO()):  # the report says what matters
            plan = hlo_plan(before, name, after, name, _LOCAL_ENTRY, engine)
            outcome = compare(plan, before, name, after, name, engine, trials, seed, tolerances)
    except Mismatch as err:
        tally = err.tally
        return ConvVerdict(
            "",
            "mismatch",
            tally.worst_after,
            tally.worst_after_relative,
            tally.worst_before,
            err.message,
        )
    except ConvcanonError as err:
        return ConvVerdict("", "error", message=err.folded_message())
    tally = outcome.tally
    return ConvVerdict(
        "",
        outcome.status,
        tally.worst_after,
        tally.worst_after_relative,
        tally.worst_before,
        # an integer conv has no float error: an "output scale 0" would read as no signal
        tally.errors() if tally.float_elements else tally.equal_elements(),
    )


def judge_convs_of_file(
    before_text: str,
    before_name: str,
    after_text: str,
    after_name: str,
    pipeline: str | None,
    engine: str,
    trials: int,
    seed: int,
    tolerances: Tolerances,
) -> LocalReport:
    """`verify`'s local check: the report printed (nothing when no conv was rewritten or none
    could be paired: AFTER printed without locations), the mismatches returned."""
    report = judge_convs(
        before_text,
        before_name,
        None if pipeline is not None else after_text,
        after_name,
        pipeline,
        engine,
        trials,
        seed,
        tolerances,
    )
    if all(v.verdict == "not judged" for v in report.verdicts) and pipeline is None:
        if report.verdicts:
            # Say so, or an `ok` below reads as if each rewrite had been judged too.
            print(
                f"note: local check not run for {len(report.verdicts)} conv(s): "
                f"{report.verdicts[0].message}",
                file=sys.stderr,
            )
        return report
    print(
        f"local check: {len(report.verdicts)} rewritten conv(s), each judged on its own on "
        f"engine {engine} against the conv alone in f64:"
    )
    for verdict in report.verdicts:
        print(f"  {verdict.line()}")
    return report
