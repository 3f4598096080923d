"""How `verify` gets two migraphx/TOSA modules ready to run on the same inputs (a `Plan`): flat
buffers sized from the entry's signature, integers of one width read as one buffer whatever their
sign, and which side runs where under `--engine iree`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.verify.inputs import Distribution, random_buffers
from convcanon.verify.plan import Plan, Truth, check_same_args

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from convcanon.verify.engines import Engine


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
    migraphx-to-tosa, except opposite a TOSA module (`_runners`).
    """
    from convcanon.reference.migraphx_interp import flat_args
    from convcanon.verify import half_b

    _check_half_b_engine(engine, before_name)
    modules = (half_b.parse(before_text, before_name), half_b.parse(after_text, after_name))
    function = half_b.entry_function(modules[0], before_name, entry)
    name = function.sym_name.data
    args = flat_args(function)
    half_b.check_memory(function, args, before_name)  # random inputs are allocated below
    after_args = flat_args(half_b.entry_function(modules[1], after_name, name))
    if [(a.shape, _bits(a.dtype)) for a in args] != [(a.shape, _bits(a.dtype)) for a in after_args]:
        check_same_args(name, args, after_args, after_name)
    divisors = half_b.integer_divisor_args(function)
    reduction = max(half_b.longest_reduction(m) for m in modules)
    run_before, run_after = _runners(engine, args, after_args, modules)
    truth = _half_b_truth(before_text, before_name, after_text, after_name)
    make_inputs = _inputs_with_nonzero_divisors(args, divisors)
    note = _divisor_note(divisors)
    return Plan(name, args, make_inputs, reduction, run_before, run_after, truth, note)


def _check_half_b_engine(engine: str, before_name: str) -> None:
    """Refuse an engine that runs only StableHLO (XLA), before anything is parsed."""
    from convcanon.verify.engines import HALF_B_ENGINES

    if engine not in HALF_B_ENGINES:
        raise ConvcanonError(
            f"engine '{engine}' runs StableHLO; migraphx/TOSA modules run on "
            f"{' or '.join(HALF_B_ENGINES)}",
            SourceLoc(before_name),
        )


def _inputs_with_nonzero_divisors(
    args: list, divisors: list[int]
) -> Callable[[np.random.Generator, Distribution], list[np.ndarray]]:
    """Random buffers for `args`, with every zero of an integer divisor argument drawn as one:
    integer division by zero is undefined, so it compares nothing."""

    def make_inputs(rng: np.random.Generator, dist: Distribution) -> list[np.ndarray]:
        inputs = random_buffers(args, rng, dist)
        for k in divisors:
            inputs[k] = np.where(inputs[k] == 0, np.ones_like(inputs[k]), inputs[k])
        return inputs

    return make_inputs


def _divisor_note(divisors: list[int]) -> str:
    """The summary's note on the divisor arguments drawn nonzero ("" when there are none)."""
    if not divisors:
        return ""
    return (
        f"integer divisor argument(s) {', '.join(f'arg{k}' for k in divisors)} drawn nonzero "
        "(division by zero is undefined)"
    )


def _runners(
    engine: str, args: list, after_args: list, modules: Sequence[ModuleOp]
) -> tuple[Engine, Engine]:
    """What runs BEFORE and AFTER: `engine` for both, AFTER fed its own integer signedness;
    under `iree`, a migraphx module opposite a TOSA one is the expected result and runs on the
    migraphx reference (lowering it would compare IREE with itself)."""
    from convcanon.verify import half_b
    from convcanon.verify.engines import HALF_B_ENGINES

    run_before = run_after = HALF_B_ENGINES[engine]
    if any(a.dtype != b.dtype for a, b in zip(args, after_args, strict=True)):
        run_after = _viewing_inputs_as([a.dtype for a in after_args], run_after)
    is_migraphx = [half_b.has_migraphx_ops(m) for m in modules]
    if engine == "iree" and is_migraphx[0] != is_migraphx[1]:
        reference = HALF_B_ENGINES["reference"]
        run_before, run_after = (
            (reference, run_after) if is_migraphx[0] else (run_before, reference)
        )
        side = "before" if is_migraphx[0] else "after"
        print(
            f"{side} is a migraphx module: it runs on the reference interpreter, the TOSA on IREE"
        )
    return run_before, run_after


def _half_b_truth(before_text: str, before_name: str, after_text: str, after_name: str) -> Truth:
    """Both modules with their floats in f64 on the migraphx reference, which computes f64
    exactly; no truth when BEFORE has no such copy (TOSA, hex literals)."""
    from convcanon.verify import half_b
    from convcanon.verify.engines import HALF_B_ENGINES

    wide_before, why = half_b.widened_text(before_text, before_name)
    if wide_before is None:
        return Truth(None, None, None, "", f"no f64 copy: {why}")
    wide_after, why_not = half_b.widened_text(after_text, after_name)
    reference = HALF_B_ENGINES["reference"]
    return Truth(wide_before, wide_after, reference, "migraphx reference", "", why_not)


def _bits(dtype: np.dtype) -> tuple[str, int]:
    """Integers of one width are one buffer whatever their sign: migraphx's ui8 is TOSA's i8."""
    return ("int" if dtype.kind in "iu" else dtype.str, dtype.itemsize)


def _viewing_inputs_as(dtypes: list[np.dtype], run: Engine) -> Engine:
    """`run` fed each input viewed as AFTER's own integer type (the same bits, its signedness)."""

    def viewed(
        text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        return run(text, filename, entry, [x.view(d) for x, d in zip(inputs, dtypes, strict=True)])

    return viewed


def as_bits_of(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """AFTER's integers read with BEFORE's signedness (a lowering makes ui8 signless i8)."""
    if before.dtype != after.dtype and _bits(before.dtype) == _bits(after.dtype):
        return after.view(before.dtype)
    return after
