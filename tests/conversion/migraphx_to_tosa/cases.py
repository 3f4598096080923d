"""Hand-written migraphx programs covering every lowering, the seed's NHWC example first."""

from __future__ import annotations

from .programs import ConvConfig, Program, conv_program, layout_strides

NHWC = (0, 2, 3, 1)


def seed_nhwc_conv_exp() -> str:
    """Seed 003: NHWC input and OHWI-stored weights, NHWC result, then exp."""
    p = Program()
    x = p.arg((1, 16, 4, 4), (256, 1, 64, 16))
    w = p.arg((2, 16, 3, 3), (144, 1, 48, 16))
    attrs = (
        "dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, "
        "stride = [1, 1]"
    )
    y = p.op("convolution", [x, w], (1, 2, 2, 2), attrs, strides=(8, 1, 4, 2))
    return p.text([p.op("exp", [y], (1, 2, 2, 2), strides=(8, 1, 4, 2))])


def _conv(
    channels: int,
    out_channels: int,
    group: int,
    spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    begins: tuple[int, ...],
    ends: tuple[int, ...],
    dilation: tuple[int, ...] | None = None,
) -> ConvConfig:
    return ConvConfig(
        n=2,
        channels=channels,
        out_channels=out_channels,
        group=group,
        spatial=spatial,
        kernel=kernel,
        stride=stride,
        dilation=dilation or (1,) * len(spatial),
        begins=begins,
        ends=ends,
    )


def _standard(cfg: ConvConfig, bias: bool = False, nhwc: bool = False) -> str:
    def strides(lens: tuple[int, ...]) -> tuple[int, ...]:
        order = (0, *range(2, len(lens)), 1) if nhwc else None
        return layout_strides(lens, order)

    return conv_program(
        cfg, strides(cfg.in_lens), strides(cfg.w_lens), strides(cfg.out_lens), bias=bias
    )


def conv_stride_remainder_shrinks_pad() -> str:
    # (6 - 1 + 1 + 1 - 2) % 2 == 1: the end pad shrinks from 1 to 0
    return _standard(_conv(3, 4, 1, (6, 7), (3, 3), (2, 2), (1, 1), (1, 1)))


def conv_stride_remainder_slices_input() -> str:
    # (6 - 1 - 2) % 2 == 1 with no end pad: the last input row is sliced off
    return _standard(_conv(2, 3, 1, (6, 5), (3, 2), (2, 2), (0, 0), (0, 0)), nhwc=True)


def conv_windows_only_in_begin_padding() -> str:
    # W: (1 - 1 + 2 + 0 - 0) % 3 == 2 exceeds the end pad and the whole input: pad explicitly
    cfg = _conv(2, 3, 1, (1, 1), (2, 1), (2, 3), (0, 2), (2, 0), (1, 2))
    return _standard(cfg)


def conv1d_grouped() -> str:
    return _standard(_conv(6, 4, 2, (9,), (3,), (2,), (1,), (2,), (2,)))


def conv3d_strided() -> str:
    return _standard(_conv(2, 3, 1, (4, 5, 4), (2, 3, 2), (1, 2, 2), (0, 1, 1), (1, 0, 1)))


def depthwise_nhwc_bias_relu() -> str:
    return _standard(_conv(3, 6, 3, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1)), bias=True, nhwc=True)


def dot_transposed_broadcast_batch() -> str:
    p = Program()
    a = p.arg((2, 3, 4, 5), layout_strides((2, 3, 4, 5), (1, 0, 3, 2)))
    b0 = p.arg((1, 1, 6, 5))
    bt = p.op("transpose", [b0], (1, 1, 5, 6), "permutation = [0, 1, 3, 2]")
    b = p.op("multibroadcast", [bt], (2, 3, 5, 6), "out_lens = [2, 3, 5, 6]", strides=(0, 0, 1, 5))
    return p.text([p.op("dot", [a, b], (2, 3, 4, 6), strides=layout_strides((2, 3, 4, 6), NHWC))])


def reductions_over_broadcast_input() -> str:
    p = Program()
    x = p.arg((3, 4, 5), (0, 1, 4))  # dim 0 broadcast, dims 1/2 transposed
    s = p.op("reduce_sum", [x], (1, 4, 1), "axes = [0, 2]")
    m = p.op("reduce_mean", [x], (3, 1, 5), "axes = [1]")
    mx = p.op("reduce_max", [x], (1, 1, 5), "axes = [0, 1]")
    return p.text([s, m, mx])


def softmax_transposed_with_gaps() -> str:
    p = Program()
    x = p.arg((2, 3, 4), layout_strides((2, 3, 4), (2, 0, 1), (0, 1, 0)))
    y = p.op(
        "softmax",
        [x],
        (2, 3, 4),
        "axis = 1 : i64",
        strides=layout_strides((2, 3, 4), None, (0, 2, 1)),
    )
    return p.text([y])


def where_convert_clip_literal() -> str:
    p = Program()
    cond = p.arg((2, 3), et="i1")
    x = p.arg((2, 3), (1, 2))
    scaled = p.op(
        "mul",
        [
            x,
            p.literal(
                "dense<[[1.5, -2.5, 3.5], [-0.5, 2.0, -7.25]]> : tensor<2x3xf32>",
                (2, 3),
                (3, 1),
                "f32",
            ),
        ],
        (2, 3),
    )
    as_int = p.op("convert", [scaled], (2, 3), et="i32", keyword="to")
    back = p.op("convert", [as_int], (2, 3), et="f32", keyword="to")
    lo = p.literal("dense<-1.0> : tensor<1xf32>", (1, 1), (1, 1), "f32")
    lo2 = p.op("multibroadcast", [lo], (2, 3), "out_lens = [2, 3]", strides=(0, 0))
    hi = p.arg((3,))
    hi2 = p.op("multibroadcast", [hi], (2, 3), "out_lens = [2, 3]", strides=(0, 1))
    clipped = p.op("clip", [back, lo2, hi2], (2, 3))
    return p.text([p.op("where", [cond, clipped, x], (2, 3), strides=(1, 2), et="f32")])


def slice_reshape_gaps() -> str:
    p = Program()
    x = p.arg((4, 6), layout_strides((4, 6), (1, 0), (1, 0)))
    s = p.op("slice", [x], (4, 4), "axes = [1], ends = [-1], starts = [1]")
    r = p.op("reshape", [s], (2, 8), "dims = [2, 8]")
    return p.text([p.op("sqrt", [r], (2, 8), strides=layout_strides((2, 8), None, (0, 3)))])


HAND_WRITTEN = {
    f.__name__: f
    for f in (
        seed_nhwc_conv_exp,
        conv_stride_remainder_shrinks_pad,
        conv_stride_remainder_slices_input,
        conv_windows_only_in_begin_padding,
        conv1d_grouped,
        conv3d_strided,
        depthwise_nhwc_bias_relu,
        dot_transposed_broadcast_batch,
        reductions_over_broadcast_input,
        softmax_transposed_with_gaps,
        where_convert_clip_literal,
        slice_reshape_gaps,
    )
}
