"""Layouts flow through the lowering: transposes compose, identities vanish, size-1 moves are
reshapes, broadcasts stay implicit (no tile, never a multiply by ones)."""

from __future__ import annotations

from .cases import seed_nhwc_conv_exp
from .harness import check_with_interpreter
from .programs import ConvConfig, Program, conv_program, layout_strides


def count(tosa_text: str, op: str) -> int:
    return tosa_text.count(f'"tosa.{op}"')


def nhwc(lens: tuple[int, ...]) -> tuple[int, ...]:
    return layout_strides(lens, (0, *range(2, len(lens)), 1))


def test_seed_nhwc_conv_chain_emits_no_transpose() -> None:
    text = check_with_interpreter(seed_nhwc_conv_exp())
    assert count(text, "transpose") == 0
    assert count(text, "conv2d") == 1


def test_nhwc_conv_bias_relu_conv_chain_emits_no_transpose_tile_or_mul() -> None:
    p = Program()
    x = p.arg((1, 4, 5, 5), nhwc((1, 4, 5, 5)))
    w1 = p.arg((6, 4, 3, 3), nhwc((6, 4, 3, 3)))
    attrs = (
        "dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, "
        "stride = [1, 1]"
    )
    lens = (1, 6, 5, 5)
    y = p.op("convolution", [x, w1], lens, attrs, strides=nhwc(lens))
    b = p.arg((6,))
    bb = p.op(
        "broadcast", [b], lens, "axis = 1 : i64, out_lens = [1, 6, 5, 5]", strides=(0, 1, 0, 0)
    )
    y = p.op("relu", [p.op("add", [y, bb], lens, strides=nhwc(lens))], lens, strides=nhwc(lens))
    w2 = p.arg((2, 6, 1, 1), nhwc((2, 6, 1, 1)))
    z = p.op(
        "convolution",
        [y, w2],
        (1, 2, 5, 5),
        attrs.replace("[1, 1, 1, 1]", "[0, 0, 0, 0]"),
        strides=nhwc((1, 2, 5, 5)),
    )
    text = check_with_interpreter(p.text([z]))
    assert count(text, "transpose") == 0
    assert count(text, "tile") == 0
    assert count(text, "mul") == 0
    assert count(text, "conv2d") == 2


def test_standard_nchw_conv_needs_exactly_three_transposes() -> None:
    """TOSA wants NHWC/OHWI: input, weights and result each move once, no more."""
    cfg = ConvConfig(1, 3, 4, 1, (5, 5), (3, 3), (1, 1), (1, 1), (0, 0), (0, 0))
    lens = [cfg.in_lens, cfg.w_lens, cfg.out_lens]
    text = check_with_interpreter(conv_program(cfg, *(layout_strides(n) for n in lens)))
    assert count(text, "transpose") == 3


def test_transpose_chain_composes_to_nothing() -> None:
    p = Program()
    x = p.arg((2, 3, 4))
    t1 = p.op("transpose", [x], (4, 2, 3), "permutation = [2, 0, 1]")
    t2 = p.op("transpose", [t1], (3, 4, 2), "permutation = [2, 0, 1]")
    t3 = p.op("transpose", [t2], (2, 3, 4), "permutation = [2, 0, 1]")
    text = check_with_interpreter(p.text([p.op("exp", [t3], (2, 3, 4))]))
    assert count(text, "transpose") == 0


def test_transposed_argument_to_transposed_result_emits_no_transpose() -> None:
    p = Program()
    strides = layout_strides((3, 4, 5), (2, 0, 1))
    x = p.arg((3, 4, 5), strides)
    y = p.arg((3, 4, 5), strides)
    text = check_with_interpreter(p.text([p.op("add", [x, y], (3, 4, 5), strides=strides)]))
    assert count(text, "transpose") == 0


def test_unit_dim_moves_are_reshapes() -> None:
    p = Program()
    x = p.arg((1, 3, 1, 4), layout_strides((1, 3, 1, 4), (2, 0, 1, 3)))
    t = p.op("transpose", [x], (3, 1, 4, 1), "permutation = [1, 0, 3, 2]")
    text = check_with_interpreter(p.text([p.op("tanh", [t], (3, 1, 4, 1))]))
    assert count(text, "transpose") == 0


def test_broadcast_stays_implicit_until_written() -> None:
    p = Program()
    x = p.arg((4, 5))
    row = p.arg((5,))
    wide = p.op("multibroadcast", [row], (4, 5), "out_lens = [4, 5]", strides=(0, 1))
    s = p.op("add", [x, wide], (4, 5))
    text = check_with_interpreter(p.text([s]))
    assert count(text, "tile") == 0 and count(text, "mul") == 0
    # writing the broadcast value itself to a full buffer must materialize it, once
    p2 = Program()
    r = p2.arg((5,))
    w2 = p2.op("multibroadcast", [r], (4, 5), "out_lens = [4, 5]", strides=(0, 1))
    text2 = check_with_interpreter(p2.text([p2.op("exp", [w2], (4, 5))]))
    assert count(text2, "tile") == 1
    assert count(text2, "exp") == 1 and '"tosa.exp"(%' in text2
    exp_line = next(line for line in text2.splitlines() if '"tosa.exp"' in line)
    assert "tensor<1x5xf32>" in exp_line  # exp runs on the 5 values, before the tile


def test_sum_over_broadcast_dim_scales_instead_of_tiling() -> None:
    p = Program()
    x = p.arg((3, 4), (0, 1))
    text = check_with_interpreter(p.text([p.op("reduce_sum", [x], (1, 4), "axes = [0]")]))
    assert count(text, "tile") == 0 and count(text, "reduce_sum") == 0


def test_mixed_operand_layouts_move_only_the_operand_the_result_does_not_share() -> None:
    p = Program()
    transposed = layout_strides((2, 3, 4), (2, 0, 1))
    x = p.arg((2, 3, 4))
    y = p.arg((2, 3, 4), transposed)
    text = check_with_interpreter(p.text([p.op("add", [x, y], (2, 3, 4), strides=transposed)]))
    assert count(text, "transpose") == 1


def test_dot_with_weights_shared_across_the_batch_does_not_tile_them() -> None:
    p = Program()
    x = p.arg((2, 3, 4, 5))
    w = p.arg((5, 6))
    wb = p.op("multibroadcast", [w], (2, 3, 5, 6), "out_lens = [2, 3, 5, 6]", strides=(0, 0, 6, 1))
    text = check_with_interpreter(p.text([p.op("dot", [x, wb], (2, 3, 4, 6))]))
    assert count(text, "tile") == 0 and count(text, "transpose") == 0
    assert "tensor<1x24x5xf32>" in text  # the batch folded into the matmul's rows
