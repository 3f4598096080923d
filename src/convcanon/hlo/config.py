"""One conv configuration's options and engine policy, resolved once: what gate and planner read.

The pass options say what was asked (`merge-phases=auto`, `conv-layout=auto`, `engine`) and the
engine policy what that engine runs fastest. For one conv they come down to a few plain choices
(how its phases merge, whether it moves channels-last, whether its partials are one conv per
tap), made here once per conv configuration, as MLIR resolves `TosaToLinalgNamedOptions` into
the patterns it registers: the gate's count of partial convs and the plan then read the same
choices, and neither looks the policy up again.
"""

from __future__ import annotations

from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.options import ConvOptions
from convcanon.hlo.phase_merge import MergeMode
from convcanon.hlo.phase_plan import uses_polyphase
from convcanon.hlo.policy import POLICIES, EnginePolicy
from convcanon.records import NamedTuple


class ConvConfig(NamedTuple):
    """The choices the rewrite of one conv configuration is planned under."""

    options: ConvOptions  # as given, but `merge_phases` is `merge`
    policy: EnginePolicy  # the engine's cost choices, for those asked per partial conv
    merge: MergeMode  # how its phases merge: `auto` resolved to the policy's mode for this conv
    polyphase: bool  # its lhs dilation becomes output phases (lhs-dilation=polyphase)
    channels_last: bool  # it is computed channels-last between transposes
    per_tap: bool  # every partial is one conv per tap (a depthwise conv the policy splits)
    kernel: tuple[int, ...]  # its kernel extents, of which the policy tells line partials apart

    def splits_line(self, taps: tuple[int, ...]) -> bool:
        """Whether a partial with `taps` per spatial dim is written as one conv per tap."""
        return self.policy.splits_line(self.kernel, taps)


def resolve(p: ConvParams, options: ConvOptions) -> ConvConfig:
    """The choices for `p` under `options` and the policy of `options.engine`."""
    policy = POLICIES[options.engine]
    merge = policy.merge_mode(p, options.merge_phases, options.max_mac_ratio)
    polyphase = uses_polyphase(p, options.polyphase)
    layout = options.conv_layout
    static = p.dynamic_reason is None  # shapes read (else the gate skips it)
    return ConvConfig(
        options=options._replace(merge_phases=merge),
        policy=policy,
        merge=merge,
        polyphase=polyphase,
        channels_last=layout == "channels-last" or (layout == "auto" and policy.channels_last),
        per_tap=static and policy.splits_depthwise(p, p.kernel_spatial, merge, polyphase),
        kernel=p.kernel_spatial if static else (),
    )
