"""The rewrite plan of one conv configuration: a pure value, built before any op.

`plan_conv(p, options)` decides everything the rewrite of a conv with params `p` does:
the channels-last move, the explicit pad (or crop) of the lhs, each partial conv's lhs and
kernel source (a space-to-depth fold, strided slices or the operand itself) and its own final
`ConvParams`, and how the partials become the result (a sum, a depth-to-space, an interleave of
output phases, one wide `convert`). The emitter turns a plan into ops and decides nothing; the
gate, `explain`, the statistics and the remarks read it. Plans depend only on the conv's params,
the options and the engine policy, so the pass builds one per conv configuration.
"""

from __future__ import annotations

import math

from convcanon.hlo.config import ConvConfig, resolve
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.gate import ConvOptions, Decision, decide
from convcanon.hlo.phase_merge import within_tap_limit
from convcanon.hlo.phase_plan import lattice_macs, lhs_dilation_plans
from convcanon.hlo.plan_layout import ChannelsLast, is_channels_last, to_channels_last
from convcanon.hlo.plan_phases import PhasePlan, plan_phases, reads_kernel, reads_lhs
from convcanon.hlo.plan_window import PartialConv, Slices, WindowPlan, plan_window
from convcanon.records import NamedTuple


class ConvPlan(NamedTuple):
    """Everything one conv configuration's rewrite does, and what it adds up to."""

    params: ConvParams
    decision: Decision
    policy: str
    merge: str  # how its phases merge: exact, pad-kernel (zero-extended kernels) or none
    lattice_macs: int
    # the rewrite, for an accepted conv:
    channels_last: ChannelsLast | None = None
    body: WindowPlan | PhasePlan | None = None  # None: not rewritten
    wide: bool = False  # partials summed in f32 and converted once
    zeros: bool = True  # every pad the rewrite may emit has a zero of its type (else EUET001)
    lhs_phases: int = 0  # output phases of the lhs-dilation rewrite (0: not used)
    unmerged: int = 0  # partial convs without phase merging
    summed: int = 0  # most partial convs summed into one output element
    counters: tuple[tuple[str, int], ...] = ()  # statistics the rewrite adds

    @property
    def partials(self) -> tuple[PartialConv, ...]:
        if isinstance(self.body, WindowPlan):
            return self.body.partials
        if isinstance(self.body, PhasePlan):
            return tuple(c for g in self.body.groups for c in g.conv.partials)
        return ()

    @property
    def macs_after(self) -> int:
        return sum(c.params.macs for c in self.partials)


# -- planning ----------------------------------------------------------------------------------


def plan_conv(p: ConvParams, options: ConvOptions) -> ConvPlan:
    """The plan of one conv: the gate's decision, and for an accepted conv its rewrite.

    The options and the engine policy are resolved once, to the choices for `p` that the gate
    and the planner read. The gate counts partial convs per dim before anything is enumerated,
    so a conv that would need millions of phases is refused without planning them."""
    config = resolve(p, options)
    decision = decide(p, config)
    counted = p.dynamic_reason is None and p.num_spatial > 0 and within_tap_limit(p)
    left_alone = ConvPlan(
        params=p,
        decision=decision,
        policy=config.policy.name,
        merge=config.merge,
        lattice_macs=lattice_macs(p) if counted else 0,
    )
    if decision.merged is None:  # rejected: an accepted conv carries the gate's count
        return left_alone
    channels_last, body, counters = _rewrite(p, config)
    emitted = _partial_count(body)
    if emitted > options.max_phases:  # the policy wrote some phases as one conv per tap
        over = f"over max-phases {options.max_phases}"
        return left_alone._replace(
            decision=Decision(False, f"needs {emitted} partial convs (one per tap), {over}")
        )
    return _accepted(left_alone, config, channels_last, body, counters)


def _rewrite(
    p: ConvParams, config: ConvConfig
) -> tuple[ChannelsLast | None, WindowPlan | PhasePlan, dict[str, int]]:
    """The channels-last move and the rewrite of accepted `p`, and the statistics they add."""
    counters: dict[str, int] = {}
    channels_last = None
    conv = p
    if config.channels_last and not is_channels_last(p):
        channels_last = to_channels_last(p)
        conv = channels_last.params
        counters["channels-last"] = 1
    if config.polyphase:
        counters["rewritten-lhs-dilation"] = 1
        phases = plan_phases(conv, config, p, channels_last.rhs if channels_last else None)
        if channels_last is not None:
            channels_last = channels_last._replace(
                moves_lhs=reads_lhs(phases), moves_kernel=reads_kernel(phases)
            )
        return channels_last, phases, counters
    body = plan_window(conv, config, p, False)
    if body.pads:
        counters["rewritten-pad"] = 1
    if conv.needs_stride:
        counters["rewritten-stride"] = 1
    return channels_last, body, counters


def _accepted(
    plan: ConvPlan,
    config: ConvConfig,
    channels_last: ChannelsLast | None,
    body: WindowPlan | PhasePlan,
    counters: dict[str, int],
) -> ConvPlan:
    """`plan` (accepted, not yet rewritten) rewritten as `body`: how its partials are summed,
    and what the rewrite adds up to."""
    p, merged = plan.params, plan.decision.merged
    assert merged is not None
    summed = max(merged.summed, _most_summed(body))
    wide = config.options.wide_partials and summed > 1 and p.narrow_result
    if wide:
        counters["wide-partials"] = 1
    if merged.convs < merged.unmerged:
        counters["merged-phases"] = merged.unmerged - merged.convs
    polyphase = config.polyphase
    return plan._replace(
        channels_last=channels_last,
        body=body,
        wide=wide,
        zeros=zeros_available(p, config, body),
        lhs_phases=math.prod(len(d.phases) for d in lhs_dilation_plans(p)) if polyphase else 0,
        unmerged=merged.unmerged,
        summed=summed,
        counters=tuple(counters.items()),
    )


def _partial_count(body: WindowPlan | PhasePlan) -> int:
    """The partial convs `body` emits: the gate's count of merged phases, or more where the
    policy writes a partial as one conv per tap (at most `max_split_taps` each, so planning them
    before this check is bounded)."""
    if isinstance(body, WindowPlan):
        return len(body.partials)
    return sum(len(g.conv.partials) for g in body.groups)


def _most_summed(body: WindowPlan | PhasePlan) -> int:
    """The most partial convs the plan sums into one output element: the gate counts merged
    phases, not the per-tap convs a policy splits line partials into (an output phase of one
    conv can become several)."""
    if isinstance(body, WindowPlan):
        return len(body.partials)
    return max((len(g.conv.partials) for g in body.groups), default=0)


def zeros_available(p: ConvParams, config: ConvConfig, body: WindowPlan | PhasePlan) -> bool:
    """Whether every pad the rewrite `body` of accepted `p` may emit has a zero: the lhs's, the
    kernel's when it is zero-extended, and the result's for the pads that place output
    phases."""
    extends = _extends_kernel(body)
    if (p.needs_pad or extends) and not p.lhs_zero:
        return False
    if config.polyphase and not p.result_zero:
        return False
    return not extends or p.rhs_zero


def _extends_kernel(body: WindowPlan | PhasePlan) -> bool:
    """Whether the rewrite zero-extends a kernel (merge-phases=pad-kernel, where that merges
    phases): appended taps, or output phases widened to a shared window."""
    if isinstance(body, WindowPlan):
        return body.kernel_pad is not None
    return any(
        g.conv.kernel_pad is not None
        or isinstance(g.kernel, Slices)
        and g.kernel.pads is not None
        and any(any(pair) for combo in g.kernel.pads for pair in combo)
        for g in body.groups
    )
