"""The conv passes' options (`canonicalize-conv`, `stablehlo-canonicalize-conv`), declared once.

Each field is one option: its name (`_` for `-`), type, default and `Doc` (help, least value) give
the pipeline parser, `--help`, the Python API's checks and the options table of docs/cli.md (see
`convcanon.options`). Adding an option is adding a field here; code reads it as `opts.name`.
Imported by the pass registry for `--help`, so it imports nothing heavy.
"""

from collections.abc import Mapping
from typing import Annotated, Literal

from convcanon.options import Doc, options_from_mapping
from convcanon.records import NamedTuple

Preset = Literal["neuron", "general"]
NegativePadding = Literal["pad", "slice"]
LhsDilation = Literal["polyphase", "interior-pad"]
ConvLayout = Literal["auto", "keep", "channels-last"]
Engine = Literal["xla-cpu", "iree-cpu", "generic"]
MergePhases = Literal["auto", "exact", "pad-kernel", "none"]


class ConvOptions(NamedTuple):
    """The conv passes' options, typed; each field's `Doc` is its `--help` and README text."""

    gate: Annotated[
        Preset,
        Doc(
            "eligibility preset: neuron (rank-4 convs with small parameters, as the production"
            " pass) or general (any static conv of rank >= 3)"
        ),
    ] = "neuron"
    allow_small_spatial: Annotated[
        bool, Doc("accept lhs spatial extents of 2 or 3 (gate=neuron)")
    ] = False
    max_window_param: Annotated[
        int, Doc("largest stride or |padding| accepted (gate=neuron)", minimum=1)
    ] = 31
    lhs_dilation: Annotated[
        LhsDilation,
        Doc(
            "polyphase: one conv per output phase, never multiplying inserted zeros;"
            " interior-pad: fold it into the pad's interior padding"
        ),
    ] = "polyphase"
    negative_padding: Annotated[
        NegativePadding,
        Doc("pad: negative pad amounts; slice: positive pad then slice for the negative parts"),
    ] = "pad"
    verbose: Annotated[bool, Doc("remark on convs whose operands come from another conv")] = False
    max_phases: Annotated[
        int,
        Doc(
            "largest number of partial convs one conv's rewrite may emit, counted after phase"
            " merging; a conv needing more is left alone, with that reason",
            minimum=1,
        ),
    ] = 64
    wide_partials: Annotated[
        bool,
        Doc(
            "f16/bf16/f8 convs split in partials: sum them in f32 and convert once (false: round"
            " each partial to the result type)"
        ),
    ] = True
    merge_phases: Annotated[
        MergePhases,
        Doc(
            "auto: as the engine policy chooses (exact, or pad-kernel for a strided conv over"
            " as few input features as an image stem's); exact: partial convs of equal shape"
            " become one conv (inputs concatenated on the"
            " feature dim), at the same multiply-adds; pad-kernel: sub-kernels are also"
            " zero-extended so that a strided dim's phases all merge and a transposed conv's"
            " output phases read one window (a 4x4/2 ConvTranspose is one 3x3 conv with 4x the"
            " features at 9/4 of the floor, with max-mac-ratio=2.25), within max-mac-ratio of"
            " the floor; none: one conv per phase, placed with interior pads and summed"
        ),
    ] = "auto"
    max_mac_ratio: Annotated[
        float,
        Doc(
            "merge-phases=pad-kernel (or auto, where the policy chooses it): largest multiply-adds"
            " of a rewritten conv over its floor"
            " (1: no extra multiply-adds)",
            minimum=1,
        ),
    ] = 2.0
    conv_layout: Annotated[
        ConvLayout,
        Doc(
            "auto: as the engine policy chooses; keep: rewritten convs keep their dimension"
            " numbers (under engine=xla-cpu a channels-first strided conv's fold, a"
            " kernel-gradient conv's pad and a unit-stride conv's pad, unless it grows the lhs by"
            " more than half, are laid out channels-last in front of them); channels-last: move"
            " each rewritten conv to [b, 0.., f]x[0.., i, o] between transposes, for engines that"
            " compute channels-last"
        ),
    ] = "auto"
    engine: Annotated[
        Engine,
        Doc(
            "the engine whose cost choices the planner makes among exact forms (layout, fold"
            " vs slices, where a pad sits, an image stem's zero-extended kernel): xla-cpu"
            " (XLA CPU), iree-cpu (IREE llvm-cpu), generic"
            " (the choices that serve both, for engines not measured)"
        ),
    ] = "generic"

    @property
    def polyphase(self) -> bool:
        return self.lhs_dilation == "polyphase"

    @staticmethod
    def from_mapping(options: Mapping[str, object]) -> "ConvOptions":
        """The parser's or the API's option mapping (pipeline names), each value checked."""
        return options_from_mapping(ConvOptions, options, "canonicalize-conv")
