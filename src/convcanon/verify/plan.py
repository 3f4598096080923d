"""How `verify` gets two HLO modules ready to run on the same inputs (a `Plan`): their signatures
checked alike, the engine that runs them, and the truth: both widened to f64, run where f64 is
f64 (XLA under `--engine xla`, else the reference interpreter, else XLA from the first op the
interpreter lacks). Modules too large to run are refused before any input is drawn.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.verify.inputs import Distribution, random_inputs
from convcanon.verify.signature import module_signature

if TYPE_CHECKING:
    from convcanon.verify.engines import Engine


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


def check_same_args(entry: str, before: list, after: list, after_name: str) -> None:
    """Refuse two entries that take different arguments: one input set must fit both."""
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
    """StableHLO/MHLO modules: arguments and weights read from BEFORE's entry, AFTER's checked
    alike, both run on `engine`; every module to run checked against the memory limit first."""
    from convcanon.verify.engines import ENGINES

    sig_before = module_signature(before_text, before_name, entry)
    sig_after = module_signature(after_text, after_name, sig_before.entry)
    check_same_args(sig_before.entry, sig_before.args, sig_after.args, after_name)
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
    from convcanon.reference import hlo_interp
    from convcanon.reference.parsed import read_only_module

    for (text, filename), reference in zip(modules, on_reference, strict=True):
        if text is not None:
            module = read_only_module(text, filename)
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
        wide_before.text, wide_after.text, run or ReferenceElseXla(), name, "", after_reason
    )


class ReferenceElseXla:
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


def _describe(args: list) -> str:
    return "(" + ", ".join(f"{t.element}{list(t.shape)}" for t in args) + ")"
