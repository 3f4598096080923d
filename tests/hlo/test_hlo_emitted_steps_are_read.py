"""The emitter asks the builder only for ops the rewrite uses: every step it asks for is in the
program, in order, and each is read by a later step or is the value replacing the conv. No
reshape reads a reshape and no transpose a transpose (the emitter composes them), so nothing is
built to be thrown away or read through."""

from __future__ import annotations

from typing import get_args

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from convcanon.hlo.build import Builder
from convcanon.hlo.context import ir
from convcanon.hlo.conv_params import DYNAMIC
from convcanon.hlo.dialects import STABLEHLO
from convcanon.hlo.emit import emit
from convcanon.hlo.gate import ConvOptions
from convcanon.hlo.options import ConvLayout, Engine, LhsDilation, MergePhases, NegativePadding
from convcanon.hlo.params import read_conv_params
from convcanon.hlo.plan import ConvPlan, plan_conv
from convcanon.hlo.plan_phases import PhasePlan
from convcanon.hlo.program import Program, Ref, Step

from .cases import ConvCase, conv_cases, conv_module, convs_of, functions, parse


@st.composite
def pass_options(draw: st.DrawFn) -> ConvOptions:
    """Any engine policy, merge mode, layout and lhs-dilation form, under the general gate."""
    return ConvOptions(
        gate="general",
        engine=draw(st.sampled_from(get_args(Engine))),
        merge_phases=draw(st.sampled_from(get_args(MergePhases))),
        conv_layout=draw(st.sampled_from(get_args(ConvLayout))),
        lhs_dilation=draw(st.sampled_from(get_args(LhsDilation))),
        negative_padding=draw(st.sampled_from(get_args(NegativePadding))),
        wide_partials=draw(st.booleans()),
        max_mac_ratio=draw(st.sampled_from([1.0, 2.0, 3.0])),
        max_phases=4096,
    )


@st.composite
def all_zero_convs(draw: st.DrawFn) -> ConvCase:
    """A channels-first lhs-dilated conv whose every output reads only inserted or padded zeros:
    in its first spatial dim the lhs elements sit at r mod `ld` (0 < r < ld) of the dilated,
    padded lhs, and every tap reads a multiple of `ld` (stride and rhs dilation multiples of
    it). Its batch may be dynamic."""
    n = draw(st.integers(1, 2))
    ld = draw(st.integers(2, 3))
    k, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    lo = draw(st.integers(0, 2)) * ld + draw(st.integers(1, ld - 1))
    stride, rhs_dilation = ld * draw(st.integers(1, 2)), ld * draw(st.integers(1, 2))
    hi = draw(st.integers(0, 3)) + max(0, (k - 1) * rhs_dilation - (h - 1) * ld - lo)
    out = ((h - 1) * ld + 1 + lo + hi - (k - 1) * rhs_dilation - 1) // stride + 1
    other = [draw(st.integers(1, 3)) for _ in range(n - 1)]
    batch = DYNAMIC if draw(st.booleans()) else 2
    features, outputs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    element = draw(st.sampled_from(["f32", "f16"]))
    spatial = "".join(f", {i}" for i in range(n))
    text = conv_module(
        f"[b, f{spatial}]x[o, i{spatial}]->[b, f{spatial}]",
        (batch, features, h, *other),
        (outputs, features, k, *[1] * (n - 1)),
        (batch, outputs, out, *other),
        element,
        [stride] + [1] * (n - 1),
        [(lo, hi)] + [(0, 0)] * (n - 1),
        [ld] + [1] * (n - 1),
        [rhs_dilation] + [1] * (n - 1),
        [False] * n,
        1,
        1,
    )
    return ConvCase(text, (batch, features, h, *other), (outputs, features, k), element)


class _AskedBuilder(Builder):
    """A builder that keeps every step the emitter asks it for."""

    def __init__(self) -> None:
        super().__init__(STABLEHLO)
        self.asked: list[Step] = []

    def _add(self, step: Step, result: object) -> Ref:
        self.asked.append(step)
        return super()._add(step, result)  # type: ignore[arg-type]


def _emitted(text: str, options: ConvOptions) -> tuple[ConvPlan, Program, list[Step]] | None:
    """The plan of the one conv in `text`, its program and the steps the emitter asked for
    (None when the conv is not rewritten)."""
    hlo = parse(text)
    with hlo.module.context, ir.Location.unknown():
        (conv,) = [c for f in functions(hlo.module) for c in convs_of(f, STABLEHLO)]
        plan = plan_conv(read_conv_params(conv), options)
        if not plan.decision.accepted or not plan.zeros:
            return None
        builder = _AskedBuilder()
        types = (conv.operands[0].type, conv.operands[1].type, conv.results[0].type)
        program = emit(builder, plan, types)
        return plan, program, builder.asked


def _unread(program: Program) -> list[int]:
    read = {program.total}
    for step in program.steps:
        read.update(step.operands)
    return [i for i in range(len(program.steps)) if i + 2 not in read]


def _assert_every_step_read(program: Program, asked: list[Step]) -> None:
    assert list(program.steps) == asked, [s.short for s in asked]  # none left out
    assert _unread(program) == [], [s.short for s in program.steps]
    made_by = {i + 2: step.short for i, step in enumerate(program.steps)}
    for step in program.steps:
        if step.short in ("reshape", "dynamic_reshape"):
            assert made_by.get(step.operands[0]) not in ("reshape", "dynamic_reshape")
        if step.short == "transpose":
            assert made_by.get(step.operands[0]) != "transpose"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.one_of(
        conv_cases(elements=("f32", "f16", "i32"), dynamic=("batch", "feature")),
        all_zero_convs(),
    ),
    options=pass_options(),
)
def test_every_step_the_emitter_asks_for_is_read(case: ConvCase, options: ConvOptions) -> None:
    emitted = _emitted(case.text, options)
    assume(emitted is not None)
    assert emitted is not None
    _assert_every_step_read(*emitted[1:])


@settings(max_examples=60, deadline=None)
@given(case=all_zero_convs(), options=pass_options())
def test_an_all_zero_result_reads_no_operand_it_does_not_need(
    case: ConvCase, options: ConvOptions
) -> None:
    """A conv whose every output is a padded or inserted zero is one zero constant (placed in
    the conv's layout): no transpose of an operand whose values it never reads, only the lhs's
    dynamic batch size where the zeros have one."""
    emitted = _emitted(case.text, options._replace(lhs_dilation="polyphase"))
    assume(emitted is not None)
    assert emitted is not None
    plan, program, asked = emitted
    assert isinstance(plan.body, PhasePlan) and not plan.body.groups
    _assert_every_step_read(program, asked)
    assert "convolution" not in [s.short for s in program.steps]
