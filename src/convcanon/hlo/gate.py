"""The eligibility gate: which convs get canonicalized, and why not when they do not.

`neuron` reproduces the seed's `canCanonicalize` (rank 4, extents and window parameters small);
`general` accepts any static conv of rank >= 3. Both refuse a conv whose rewrite would emit more
than `max-phases` partial convs after merging (a 405-byte conv can ask for millions). Every
rejection carries a reason string, shown by `explain`, the pass statistics and `verbose` remarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from convcanon.hlo.params import ConvParams
from convcanon.hlo.phase_merge import MAX_PHASE_SLICES, MergeMode, MergePlan, merge_plan

Preset = Literal["neuron", "general"]
NegativePadding = Literal["pad", "slice"]
LhsDilation = Literal["polyphase", "interior-pad"]
ConvLayout = Literal["keep", "channels-last"]


class ConvOptions(NamedTuple):
    """The pass options (pipeline.py's `_CONV_OPTIONS`), typed."""

    gate: Preset = "neuron"
    allow_small_spatial: bool = False
    max_window_param: int = 31
    lhs_dilation: LhsDilation = "polyphase"
    negative_padding: NegativePadding = "pad"
    verbose: bool = False
    max_phases: int = 64
    wide_partials: bool = True
    merge_phases: MergeMode = "exact"
    max_mac_ratio: float = 2.0
    conv_layout: ConvLayout = "keep"

    @property
    def polyphase(self) -> bool:
        return self.lhs_dilation == "polyphase"

    @staticmethod
    def from_mapping(options: Mapping[str, bool | int | float | str]) -> ConvOptions:
        gate = str(options.get("gate", "neuron"))
        negative = str(options.get("negative-padding", "pad"))
        lhs_dilation = str(options.get("lhs-dilation", "polyphase"))
        merge = str(options.get("merge-phases", "exact"))
        layout = str(options.get("conv-layout", "keep"))
        if gate not in ("neuron", "general"):
            raise ValueError(f"unknown gate preset {gate!r}")
        if negative not in ("pad", "slice"):
            raise ValueError(f"unknown negative-padding mode {negative!r}")
        if lhs_dilation not in ("polyphase", "interior-pad"):
            raise ValueError(f"unknown lhs-dilation mode {lhs_dilation!r}")
        modes: dict[str, MergeMode] = {"exact": "exact", "pad-kernel": "pad-kernel", "none": "none"}
        if merge not in modes:
            raise ValueError(f"unknown merge-phases mode {merge!r}")
        if layout not in ("keep", "channels-last"):
            raise ValueError(f"unknown conv-layout {layout!r}")
        return ConvOptions(
            gate="neuron" if gate == "neuron" else "general",
            allow_small_spatial=bool(options.get("allow-small-spatial", False)),
            max_window_param=int(options.get("max-window-param", 31)),
            lhs_dilation="polyphase" if lhs_dilation == "polyphase" else "interior-pad",
            negative_padding="pad" if negative == "pad" else "slice",
            verbose=bool(options.get("verbose", False)),
            max_phases=int(options.get("max-phases", 64)),
            wide_partials=bool(options.get("wide-partials", True)),
            merge_phases=modes[merge],
            max_mac_ratio=float(options.get("max-mac-ratio", 2.0)),
            conv_layout="keep" if layout == "keep" else "channels-last",
        )

    def merge_plan(self, p: ConvParams) -> MergePlan:
        """The convs the rewrite of `p` (an accepted conv) emits under these options."""
        return merge_plan(p, self.polyphase, self.merge_phases, self.max_mac_ratio)


class Decision(NamedTuple):
    accepted: bool
    reason: str  # why rejected, or what will be canonicalized


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


def decide(p: ConvParams, o: ConvOptions) -> Decision:
    """Accept or reject one conv; the reason names the first rule that failed."""
    if p.dynamic_reason is not None:
        return Decision(False, p.dynamic_reason)
    if p.num_spatial == 0:
        return Decision(False, f"rank {p.rank} has no spatial dimension")
    if o.gate == "neuron":
        why = _neuron_rules(p, o)
        if why is not None:
            return Decision(False, why)
    if any(e <= 0 for e in p.out_spatial) or any(e <= 0 for e in p.lhs_spatial):
        return Decision(False, "empty spatial extent")
    work = []
    if any(lo or hi for lo, hi in p.padding):
        work.append("padding")
    if any(d != 1 for d in p.lhs_dilation):
        work.append("lhs dilation")
    if p.needs_stride:
        work.append("stride")
    if not work:
        return Decision(False, "already canonical (zero padding, unit stride, no lhs dilation)")
    if p.dynamic_batch and p.batch_group_count > 1:
        return Decision(False, "dynamic batch with batch_group_count > 1")
    merged = o.merge_plan(p)
    if merged.convs > o.max_phases:
        return Decision(
            False, f"needs {merged.convs} partial convs, over max-phases {o.max_phases}"
        )
    if merged.slices > MAX_PHASE_SLICES:
        return Decision(
            False, f"needs {merged.slices} phase slices, over the limit of {MAX_PHASE_SLICES}"
        )
    return Decision(True, " + ".join(work) + (" (dynamic batch)" if p.dynamic_batch else ""))
