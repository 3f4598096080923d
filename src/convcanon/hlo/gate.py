"""The eligibility gate: which convs get canonicalized, and why not when they do not.

`neuron` reproduces the seed's `canCanonicalize` (rank 4, extents and window parameters small);
`general` accepts any conv of rank >= 3 whose spatial extents are static (a dynamic batch or
contracted feature extent is carried through the rewrite). Both refuse a conv whose rewrite
would emit more than `max-phases` partial convs after merging (a 405-byte conv can ask for
millions). Every rejection carries a reason string, shown by `explain`, the pass statistics
and `verbose` remarks.
"""

from __future__ import annotations

from convcanon.hlo.config import ConvConfig
from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.options import ConvOptions
from convcanon.hlo.phase_merge import (
    MAX_KERNEL_TAPS,
    MAX_PHASE_SLICES,
    MergePlan,
    merge_plan,
    within_tap_limit,
)
from convcanon.records import NamedTuple

__all__ = ["ConvOptions", "Decision", "decide"]


class Decision(NamedTuple):
    accepted: bool
    reason: str  # why rejected, or what will be canonicalized
    canonical: bool = False  # nothing to do: not a rejection
    merged: MergePlan | None = None  # the convs the rewrite emits, counted (an accepted conv's)


def _neuron_rules(p: ConvParams, o: ConvOptions) -> str | None:
    """Seed rules 1-3: rank 4, lhs spatial extents, window parameter bound."""
    for what, rank in (("lhs", len(p.lhs_shape)), ("rhs", len(p.rhs_shape))):
        if rank != 4:
            return f"{what} rank {rank} is not 4"
    for extent in p.lhs_spatial:
        if extent <= 1:
            return f"spatial extent {extent} is too small (needs >= 2)"
        if extent <= 3 and not o.allow_small_spatial:
            return f"spatial extent {extent} needs allow-small-spatial"
    for stride in p.strides:
        if stride > o.max_window_param:
            return f"stride {stride} exceeds max-window-param {o.max_window_param}"
    for pair in p.padding:
        for amount in pair:
            if abs(amount) > o.max_window_param:
                return f"padding {amount} exceeds max-window-param {o.max_window_param}"
    return None


def decide(p: ConvParams, config: ConvConfig) -> Decision:
    """Accept or reject one conv; the reason names the first rule that failed."""
    o = config.options
    if p.dynamic_reason is not None:
        return Decision(False, p.dynamic_reason)
    if p.num_spatial == 0:
        return Decision(False, f"rank {p.rank} has no spatial dimension")
    work = []
    if any(lo or hi for lo, hi in p.padding):
        work.append("padding")
    if any(d != 1 for d in p.lhs_dilation):
        work.append("lhs dilation")
    if p.needs_stride:
        work.append("stride")
    if not work:  # nothing to do is not a rejection, whatever the gate's rules
        return Decision(
            False, "already canonical (zero padding, unit stride, no lhs dilation)", canonical=True
        )
    if o.gate == "neuron":
        why = _neuron_rules(p, o)
        if why is not None:
            return Decision(False, why)
    if any(e <= 0 for e in p.out_spatial) or any(e <= 0 for e in p.lhs_spatial):
        return Decision(False, "empty spatial extent")
    if not within_tap_limit(p):
        return Decision(
            False,
            f"kernel extent {max(p.kernel_spatial)} over the limit of {MAX_KERNEL_TAPS} taps",
        )
    if p.dynamic_batch and p.batch_group_count > 1:
        return Decision(False, "dynamic batch with batch_group_count > 1")
    if p.dynamic_feature and p.feature_group_count > 1:
        # the kernel's input features are a fraction of the dynamic extent, a size no value
        # of the conv holds for the rewrite's slices to read
        return Decision(False, "dynamic feature extent with feature_group_count > 1")
    # a depthwise conv's stride phases split per tap are never joined
    mode = "none" if config.per_tap and not config.polyphase else config.merge
    merged = merge_plan(p, config.polyphase, mode, o.max_mac_ratio)
    if merged.convs > o.max_phases:
        return Decision(
            False, f"needs {merged.convs} partial convs, over max-phases {o.max_phases}"
        )
    if merged.slices > MAX_PHASE_SLICES:
        return Decision(
            False, f"needs {merged.slices} phase slices, over the limit of {MAX_PHASE_SLICES}"
        )
    dynamic = (
        " (dynamic batch)" if p.dynamic_batch else " (dynamic feature)" if p.dynamic_feature else ""
    )
    return Decision(True, " + ".join(work) + dynamic, merged=merged)
