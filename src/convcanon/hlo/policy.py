"""Engine policies: the cost choices among exact forms, kept out of the algebra.

Every rewrite the planner can build is exact and at the multiply-add floor; which of them runs
fastest depends on the engine that compiles the result. Where an explicit pad sits and whether
the data movement in front of a channels-first conv is laid out channels-last are such choices.
Each policy is a named value passed to the planner, chosen from published measurements (the
bench's runtime results), as XLA passes take cost callbacks: a new backend adds a policy, never
a branch inside a rewrite.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.phase_merge import has_line_phase, kernel_extension
from convcanon.records import NamedTuple

if TYPE_CHECKING:
    from convcanon.hlo.phase_merge import MergeMode


class EnginePolicy(NamedTuple):
    """The cost choices of one engine."""

    name: str
    # Every rewritten conv is computed channels-last (`[b, 0.., f]x[0.., i, o]`) between
    # transposes, unless the conv-layout option says otherwise.
    channels_last: bool
    # Merged stride phases are read from a space-to-depth fold even when no group merges two
    # phases (a 3x3/2 conv): one copy of the lhs in front of every partial; otherwise each
    # partial reads strided slices, half the ops.
    fold_single_phases: bool
    # A strided conv whose phase groups read one space-to-depth fold folds its lhs channels-last
    # (`[b, 0.., f]`), each group transposed back: an engine that computes convs channels-last
    # cancels those transposes against its own, so the fold and the lhs's producer stay in its
    # layout (XLA CPU: wav2vec2's feature encoder x1.40 -> x0.92, NCHW ResNets 3-5% faster).
    fold_channels_last: bool
    # A unit-stride channels-first conv's explicit pad is written channels-last (transpose, pad,
    # transpose back), so that the pad feeds the engine's own channels-last conv and folds back
    # into it (XLA CPU's YNNPACK runs a 3x3 conv on a padded copy x1.4-x2.6 slower at 14x14 to
    # 112x112)...
    pad_channels_last: bool
    # ...unless it grows the lhs by more than this ratio (a 3x3 conv on 7x7 and smaller): there
    # the unpadded conv costs little more (x1.1), and XLA CPU grows a library fusion of a
    # following reduction (a ResNet's global pool) up through the whole last stage.
    max_routed_pad_growth: tuple[int, int]
    # A partial conv whose kernel is a line (taps in one spatial dim only) cut from a kernel
    # that is not one is written as one 1x1 conv per tap, on shifted slices of its lhs: same
    # multiply-adds. Such partials are the 2x1 and 1x2 stride phases of a 3x3/2 conv and the
    # 2x1 and 1x2 output phases of a 3x3/2 transposed conv (its input gradient, a
    # ConvTranspose); "not a line" is asked of the source conv's kernel. An engine may compile a
    # conv with one unit kernel dim as a generic loop nest, not as a conv (IREE CPU: a
    # 2x1x32x64 conv on 17x16 px takes 580-780 us, its two 1x1 convs 98 us, the whole 3x3/2
    # conv 230 us).
    split_line_partials: bool
    # The partial convs of a strided depthwise conv (one input feature per group) are written as
    # one 1x1 conv per tap: a 1x1 depthwise conv is a per-feature scale, which XLA CPU fuses
    # with the other taps' and their sum into one loop, where its depthwise conv kernel is slow
    # for every other kernel shape (EfficientNet-B0's strided depthwise convs at 224 px:
    # x2.1-x3.0 as phase convs, x0.04-x0.11 of the original split; IREE CPU runs them
    # x1.0-x1.2 as phase convs and x1.0-x1.5 split).
    split_depthwise: bool
    # No split writes more convs than this per partial (a line of taps) or per depthwise
    # kernel: the splits measured are of 3x3 and 5x5 kernels, and a kernel extent declared in a
    # few bytes must not become thousands of ops (a 3x20000 conv with stride (2, 1) had a line
    # phase of 20000 taps).
    max_split_taps: int
    # Under merge-phases=auto, a strided conv over at most this many input features (an image
    # stem: RGB) zero-extends its sub-kernels so that its phases merge into one conv
    # (pad-kernel, within max-mac-ratio of the floor): the partial convs of a 3-feature conv
    # are each bound by moving data, not by multiply-adds, and one wider conv costs less than
    # four narrow ones and their sums. Every other conv stays at the floor (exact). XLA CPU, a
    # 3x3/2 stem 3->32: x1.94 -> x0.54 at 224 px, x1.73 -> x0.68 at 64 px; 7x7/2 3->64: x1.74
    # both ways at 224 px, x1.43 -> x1.34 at 64 px; with 8 or more features it loses.
    pad_kernel_features: int
    # ...only where the exact form has a line phase (a 3x3/2 conv's 2x1 and 1x2; a 7x7/2 conv
    # has none): IREE CPU runs the 7x7/2 stem's four phase convs well (x0.94-x0.97 against
    # x1.20-x1.23 zero-extended) and a 3x3/2 stem's split line phases badly (x3.19 against
    # x1.70 zero-extended at 224 px).
    pad_kernel_needs_line: bool

    def merge_mode(self, p: ConvParams, requested: str, max_mac_ratio: float) -> MergeMode:
        """How `p`'s phases merge: as `requested`, or under `auto` as this policy chooses
        (pad-kernel only where a kernel extension within `max_mac_ratio` merges phases)."""
        if requested in ("exact", "pad-kernel", "none"):
            return requested
        stem = (
            p.dynamic_reason is None
            and p.needs_stride
            and set(p.lhs_dilation) == {1}
            and not batch_inside(p)
            and not p.dynamic_feature
            and p.rhs_zero
            and p.lhs_shape[p.dims.lhs_feature] <= self.pad_kernel_features
            and (not self.pad_kernel_needs_line or has_line_phase(p))
            and any(kernel_extension(p, max_mac_ratio))
            and not self.splits_depthwise(p, p.kernel_spatial, "exact")
        )
        return "pad-kernel" if stem else "exact"

    def splits_line(self, kernel: tuple[int, ...], taps: tuple[int, ...]) -> bool:
        """Whether a partial with `taps` per spatial dim, of a conv with kernel extents
        `kernel`, is written as one conv per tap."""
        lines = sum(t > 1 for t in taps) == 1
        return (
            self.split_line_partials
            and lines
            and sum(k > 1 for k in kernel) > 1
            and math.prod(taps) <= self.max_split_taps
        )

    def splits_depthwise(
        self, p: ConvParams, kernel: tuple[int, ...], mode: str, phase: bool = False
    ) -> bool:
        """Whether every partial of `p` (strided, or an output `phase` of a conv with kernel
        extents `kernel`) is one conv per tap, its phases never joined: merge mode `mode` keeps
        the floor, `p` is depthwise (one input feature per group, of several groups) and the
        kernel has at most `max_split_taps` taps."""
        return (
            self.split_depthwise
            and (p.needs_stride or phase)
            and mode in ("exact", "none")
            and p.feature_group_count > 1
            and p.rhs_shape[p.dims.rhs_in_feature] == 1
            and math.prod(kernel) <= self.max_split_taps
        )

    def routes_pad(self, p: ConvParams) -> bool:
        """Whether the explicit pad of unit-stride `p` is written channels-last. Always so for a
        kernel-gradient conv (`batch_inside`): no engine computes a conv in that layout."""
        if batch_inside(p):
            return True
        if not self.pad_channels_last or p.dims.lhs_feature == p.rank - 1:
            return False
        num, den = self.max_routed_pad_growth
        return den * math.prod(p.padded_spatial) <= num * math.prod(p.lhs_spatial)


def batch_inside(p: ConvParams) -> bool:
    """Whether the lhs's batch is not its outermost dim: a kernel-gradient conv (`jax.grad`'s,
    `[f, 0.., b]`: the activation with batch and feature swapped) is one."""
    return p.dims.lhs_batch != 0


XLA_CPU = EnginePolicy(
    "xla-cpu",
    channels_last=False,
    fold_single_phases=True,
    fold_channels_last=True,
    pad_channels_last=True,
    max_routed_pad_growth=(3, 2),
    split_line_partials=False,
    split_depthwise=True,
    max_split_taps=25,
    pad_kernel_features=4,
    pad_kernel_needs_line=False,
)
# IREE lays a channels-first conv out channels-last itself and fuses only the conv's own pad into
# that transpose, so an explicit NCHW pad costs a dispatch and a slow conv: the PyTorch-shaped
# ResNet-18 runs x8.81 (224 px) / x5.48 (64 px) with xla-cpu's forms, x1.05 / x0.89
# channels-last. IREE compiles a 3x3/2 conv's 2x1 and 1x2 phases as loop nests, not convs: split
# into 1x1 convs per tap, the VGG-style stack at 64 px runs x0.90, against x2.74 with
# xla-cpu's forms and x4.1 with strided slices and whole line phases
# (bench/RESULTS_runtime_policies.md; bench/RESULTS_runtime_engines_convs.md, "Why IREE's
# strided partial convs are slow").
IREE_CPU = XLA_CPU._replace(
    name="iree-cpu",
    channels_last=True,
    fold_single_phases=False,
    fold_channels_last=False,
    pad_channels_last=False,
    split_line_partials=True,
    split_depthwise=False,
    pad_kernel_needs_line=True,
)
# The default, for engines not measured: IREE's channels-last convs and split line phases, with
# XLA's space-to-depth fold, channels-last, in front of every strided conv and XLA's per-tap
# depthwise convs. Of the forms measured it is the one that serves both engines (8 programs,
# bench/RESULTS_runtime_policies.md): IREE x0.92 small / x0.92 full (iree-cpu x0.93 / x0.90),
# XLA x0.98 / x1.09 (xla-cpu x0.81 / x1.05); xla-cpu's forms run NCHW programs and small
# strided stacks x2.2-x9.2 on IREE; strided slices instead of the fold were XLA x1.24 full size
# (wav2vec2's encoder x1.65) and kept line phases left IREE's VGG-style stack at x4.8. The split
# line phases are what it pays on XLA (the VGG-style stack x1.72 against x1.46 with them kept, the
# training step x1.16 against x1.05), and what IREE cannot do without (x1.06 against x6.14).
GENERIC = IREE_CPU._replace(
    name="generic", fold_single_phases=True, fold_channels_last=True, split_depthwise=True
)

POLICIES = {policy.name: policy for policy in (XLA_CPU, IREE_CPU, GENERIC)}
