"""The eligibility gate (DESIGN 2.2): which convs get canonicalized, and why not when they do not.

`neuron` reproduces the seed's `canCanonicalize` (rank 4, extents and window parameters small);
`general` accepts any static conv of rank >= 3. Every rejection carries a reason string, shown by
`explain`, the pass statistics and `verbose` remarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from convcanon.hlo.params import ConvParams

Preset = Literal["neuron", "general"]
NegativePadding = Literal["pad", "slice"]


@dataclass(frozen=True)
class ConvOptions:
    """The pass options (pipeline.py's `_CONV_OPTIONS`), typed."""

    gate: Preset = "neuron"
    allow_small_spatial: bool = False
    max_window_param: int = 31
    fold_lhs_dilation: bool = True
    negative_padding: NegativePadding = "pad"
    verbose: bool = False

    @staticmethod
    def from_mapping(options: Mapping[str, bool | int | str]) -> ConvOptions:
        gate = str(options.get("gate", "neuron"))
        negative = str(options.get("negative-padding", "pad"))
        if gate not in ("neuron", "general"):
            raise ValueError(f"unknown gate preset {gate!r}")
        if negative not in ("pad", "slice"):
            raise ValueError(f"unknown negative-padding mode {negative!r}")
        return ConvOptions(
            gate="neuron" if gate == "neuron" else "general",
            allow_small_spatial=bool(options.get("allow-small-spatial", False)),
            max_window_param=int(options.get("max-window-param", 31)),
            fold_lhs_dilation=bool(options.get("fold-lhs-dilation", True)),
            negative_padding="pad" if negative == "pad" else "slice",
            verbose=bool(options.get("verbose", False)),
        )


@dataclass(frozen=True)
class Decision:
    accepted: bool
    reason: str  # why rejected, or what will be canonicalized


def _fmt(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


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
    if any(d != 1 for d in p.lhs_dilation) and not o.fold_lhs_dilation:
        return Decision(False, f"lhs dilation {_fmt(p.lhs_dilation)} needs fold-lhs-dilation")
    work = []
    if any(lo or hi for lo, hi in p.padding):
        work.append("padding")
    if any(d != 1 for d in p.lhs_dilation):
        work.append("lhs dilation")
    if p.needs_stride:
        work.append("stride")
    if not work:
        return Decision(False, "already canonical (zero padding, unit stride, no lhs dilation)")
    return Decision(True, " + ".join(work))
