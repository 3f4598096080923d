"""The gate's presets, options and reason strings, on ConvParams built directly."""

from __future__ import annotations

import pytest

from convcanon.hlo.config import resolve
from convcanon.hlo.conv_params import ConvParams, DimensionNumbers
from convcanon.hlo.gate import ConvOptions, decide


def params(
    spatial: tuple[int, ...] = (8, 8),
    kernel: tuple[int, ...] | None = None,
    stride: int = 2,
    pad: tuple[int, int] = (1, 1),
    lhs_dilation: int = 1,
) -> ConvParams:
    """An NHWC/HWIO-style conv with `len(spatial)` spatial dims."""
    n = len(spatial)
    kernel = kernel or (3,) * n
    sp = tuple(range(1, n + 1))
    dims = DimensionNumbers(0, n + 1, sp, n, n + 1, tuple(range(n)), 0, n + 1, sp)
    outs = tuple(
        ((h - 1) * lhs_dilation + 1 + sum(pad) - k) // stride + 1
        for h, k in zip(spatial, kernel, strict=True)
    )
    return ConvParams(
        lhs_shape=(1, *spatial, 3),
        rhs_shape=(*kernel, 3, 4),
        result_shape=(1, *outs, 4),
        element_type="f32",
        dims=dims,
        strides=(stride,) * n,
        padding=(pad,) * n,
        lhs_dilation=(lhs_dilation,) * n,
        rhs_dilation=(1,) * n,
        reversal=(False,) * n,
        feature_group_count=1,
        batch_group_count=1,
    )


NEURON = ConvOptions()
GENERAL = ConvOptions(gate="general")


@pytest.mark.parametrize(
    ("p", "options", "reason"),
    [
        (params(spatial=(8, 8, 8)), NEURON, "lhs rank 5 is not 4"),
        (params(spatial=(8,)), NEURON, "lhs rank 3 is not 4"),
        (
            params(spatial=(8, 1), kernel=(1, 1)),
            NEURON,
            "spatial extent 1 is too small (needs >= 2)",
        ),
        (params(spatial=(8, 3)), NEURON, "spatial extent 3 needs allow-small-spatial"),
        (
            params(spatial=(2, 8), kernel=(2, 2)),
            NEURON,
            "spatial extent 2 needs allow-small-spatial",
        ),
        (params(stride=32), NEURON, "stride 32 exceeds max-window-param 31"),
        (params(pad=(-1, 32), spatial=(40, 40)), NEURON, "padding 32 exceeds max-window-param 31"),
        (
            params(stride=1, pad=(0, 0)),
            NEURON,
            "already canonical (zero padding, unit stride, no lhs dilation)",
        ),
        (
            params(stride=1, pad=(0, 0)),
            GENERAL,
            "already canonical (zero padding, unit stride, no lhs dilation)",
        ),
        (
            params(stride=3, spatial=(40, 40)),
            ConvOptions(max_phases=8, merge_phases="none"),
            "needs 9 partial convs, over max-phases 8",
        ),
        (
            # merged: per dim phases of 2 and 1 taps, so 2 x 2 convs
            params(stride=2, spatial=(40, 40)),
            ConvOptions(max_phases=3, merge_phases="exact"),
            "needs 4 partial convs, over max-phases 3",
        ),
        (
            params(stride=3, spatial=(40, 40), lhs_dilation=2),
            ConvOptions(max_phases=8, max_window_param=40, merge_phases="none"),
            # per dim: output phase 1 has taps {0, 2} (2 stride phases), phase 0 tap {1}
            "needs 9 partial convs, over max-phases 8",
        ),
        (
            params(stride=1024, spatial=(2048, 2048), kernel=(1024, 1024)),
            ConvOptions(gate="general", merge_phases="none"),
            "needs 1048576 partial convs, over max-phases 64",
        ),
        (
            # rhs dilation 3 with stride 1024: the phases do not fold, 1023 slices per dim
            params(stride=1024, spatial=(4096, 4096), kernel=(1023, 1023))._replace(
                rhs_dilation=(3, 3),
                result_shape=(1, 1, 1, 4),
            ),
            ConvOptions(gate="general"),
            "needs 1046529 phase slices, over the limit of 4096",
        ),
        (
            params(stride=10**9, spatial=(10**9, 10**9), kernel=(70, 1)),
            ConvOptions(gate="general", merge_phases="none"),
            "needs 70 partial convs, over max-phases 64",
        ),
    ],
)
def test_rejections_name_the_rule(p: ConvParams, options: ConvOptions, reason: str) -> None:
    decision = decide(p, resolve(p, options))
    assert not decision.accepted
    assert decision.reason == reason


@pytest.mark.parametrize(
    ("p", "options", "reason"),
    [
        (params(), NEURON, "padding + stride"),
        (params(spatial=(8, 3)), ConvOptions(allow_small_spatial=True), "padding + stride"),
        (params(stride=32, spatial=(64, 64)), ConvOptions(max_window_param=32), "padding + stride"),
        (params(spatial=(8, 8, 8)), GENERAL, "padding + stride"),
        (params(spatial=(8,), stride=1), GENERAL, "padding"),
        (params(spatial=(1, 1), kernel=(1, 1), pad=(0, 0)), GENERAL, "stride"),
        (params(stride=1, pad=(0, 0), lhs_dilation=2), NEURON, "lhs dilation"),
        # merged, each is one conv: 1024 x 1024 phases fold into one; 70 one-tap phases too
        (
            params(stride=1024, spatial=(2048, 2048), kernel=(1024, 1024)),
            GENERAL,
            "padding + stride",
        ),
        (params(stride=10**9, spatial=(10**9, 10**9), kernel=(70, 1)), GENERAL, "padding + stride"),
    ],
)
def test_acceptances_say_what_will_be_rewritten(
    p: ConvParams, options: ConvOptions, reason: str
) -> None:
    decision = decide(p, resolve(p, options))
    assert decision.accepted, decision.reason
    assert decision.reason == reason


def test_dynamic_shapes_are_rejected_with_their_reason_by_both_presets() -> None:
    p = params()._replace(dynamic_reason="dynamic shape: lhs is tensor<?x8x8x3xf32>")
    for options in (NEURON, GENERAL):
        assert decide(p, resolve(p, options)).reason == "dynamic shape: lhs is tensor<?x8x8x3xf32>"


def test_options_come_from_the_pipeline_mapping() -> None:
    options = ConvOptions.from_mapping(
        {
            "gate": "general",
            "allow-small-spatial": True,
            "max-window-param": 7,
            "lhs-dilation": "interior-pad",
            "negative-padding": "slice",
            "verbose": True,
            "max-phases": 9,
            "wide-partials": False,
        }
    )
    assert options == ConvOptions("general", True, 7, "interior-pad", "slice", True, 9, False)
    assert ConvOptions.from_mapping({}) == ConvOptions()
