"""Kernels shaped like rocMLIR's own fusion e2e tests (pr-e2e: attention, conv-layouts,
gemm-layouts), small: their layouts are ones the old tiling rule refused.

- GQA and LSE attention: a KV broadcast to the query heads and reshaped, declared with the
  unbroadcast strides (dims 0 and 1 overlap), and the key's transpose declared with its input's
  strides;
- int4 attention: scales and zero points read every second element (smallest stride 2);
- broadcasted conv in NCHW, NCHWc and NCHW-HWc: a group of channels broadcast with stride 1
  declared on the broadcast dim, then reshaped into the conv's input;
- gemm broadcasted-k, broadcasted-b and transA-transB gemm-k: a multibroadcast declared with a
  stride on its broadcast dim, and the result's transpose declared with its input's strides;
- an fp4 split-K GEMM whose partial sums are reduced twice (sum and max), its scales broadcast
  with a stride on the broadcast dim.

Each lowers, passes iree-opt, and equals the migraphx reference on IREE and on our TOSA
interpreter; each contradicted intermediate is named in a warning; `strict-strides` restores
the error.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text

from .harness import check_with_iree
from .test_conformant_kernels import check

# the reference and the lowering print no numpy warning, whatever the values
pytestmark = pytest.mark.filterwarnings("error")


def _attention(lse: bool) -> str:
    """4 query heads over 2 KV heads (GQA); with `lse` also the log-sum-exp of each row."""
    kv, q = "<2x2x3x8xf32, 48x24x8x1>", "<2x4x3x8xf32, 96x24x8x1>"
    heads = "<2x4x3x8xf32, 48x24x8x1>"  # the reshaped broadcast, declared unbroadcast
    results = f"!migraphx.shaped{q}" + (", !migraphx.shaped<2x4x3xf32, 12x3x1>" if lse else "")
    lines = [
        f"%vb = migraphx.multibroadcast %v {{out_dyn_dims = [], out_lens = [2, 2, 2, 3, 8]}} : "
        f"{kv} -> <2x2x2x3x8xf32, 48x24x0x8x1>",
        f"%vr = migraphx.reshape %vb {{dims = [2, 4, 3, 8]}} : <2x2x2x3x8xf32, 48x24x0x8x1> -> "
        f"{heads}",
        f"%kb = migraphx.multibroadcast %k {{out_dyn_dims = [], out_lens = [2, 2, 2, 3, 8]}} : "
        f"{kv} -> <2x2x2x3x8xf32, 48x24x0x8x1>",
        f"%kr = migraphx.reshape %kb {{dims = [2, 4, 3, 8]}} : <2x2x2x3x8xf32, 48x24x0x8x1> -> "
        f"{heads}",
        f"%kt = migraphx.transpose %kr {{permutation = [0, 1, 3, 2]}} : {heads} -> "
        "<2x4x8x3xf32, 48x24x8x1>",
        f"%s = migraphx.dot %q, %kt : {q}, <2x4x8x3xf32, 48x24x8x1> -> <2x4x3x3xf32, 36x9x3x1>",
    ]
    if not lse:
        lines += [
            "%p = migraphx.softmax %s {axis = 3 : i64} : <2x4x3x3xf32, 36x9x3x1> -> "
            "<2x4x3x3xf32, 36x9x3x1>",
            f"%o = migraphx.dot %p, %vr : <2x4x3x3xf32, 36x9x3x1>, {heads} -> {q}",
            f"return %o : {results}",
        ]
    else:
        row, full = "<2x4x3x1xf32, 12x3x1x1>", "<2x4x3x3xf32, 36x9x3x1>"
        lines += [
            f"%m = migraphx.reduce_max %s {{axes = [3]}} : {full} -> {row}",
            f"%mb = migraphx.multibroadcast %m {{out_dyn_dims = [], out_lens = [2, 4, 3, 3]}} : "
            f"{row} -> <2x4x3x3xf32, 12x3x1x0>",
            f"%d = migraphx.sub %s, %mb : {full}, <2x4x3x3xf32, 12x3x1x0> -> {full}",
            f"%e = migraphx.exp %d : {full} -> {full}",
            f"%t = migraphx.reduce_sum %e {{axes = [3]}} : {full} -> {row}",
            f"%l = migraphx.log %t : {row} -> {row}",
            f"%lm = migraphx.add %l, %m : {row}, {row} -> {row}",
            f"%lse = migraphx.reshape %lm {{dims = [2, 4, 3]}} : {row} -> <2x4x3xf32, 12x3x1>",
            f"%r = migraphx.recip %t : {row} -> {row}",
            f"%rb = migraphx.multibroadcast %r {{out_dyn_dims = [], out_lens = [2, 4, 3, 3]}} : "
            f"{row} -> <2x4x3x3xf32, 12x3x1x0>",
            f"%p = migraphx.mul %e, %rb : {full}, <2x4x3x3xf32, 12x3x1x0> -> {full}",
            f"%o = migraphx.dot %p, %vr : {full}, {heads} -> {q}",
            f"return %o, %lse : {results}",
        ]
    body = "".join(f"  {line}\n" for line in lines)
    return (
        f"func.func @attention(%q: !migraphx.shaped{q}, %k: !migraphx.shaped{kv}, "
        f"%v: !migraphx.shaped{kv}) -> ({results}) {{\n{body}}}\n"
    )


INT4_ATTENTION = """\
func.func @attention(%scale: !migraphx.shaped<8x8xf32, 32x2>, \
%zero: !migraphx.shaped<8x8xui8, 32x2>, %q: !migraphx.shaped<4x8xf32, 8x1>, \
%w: !migraphx.shaped<8x4xui8, 4x1>, %v: !migraphx.shaped<8x8xf32, 8x1>) \
-> !migraphx.shaped<4x8xf32, 8x1> {
  %0 = migraphx.unpack %w {axis = 1 : i64} : <8x4xui8, 4x1> -> <8x8xui8, 8x1>
  %1 = migraphx.dequantizelinear %0, %scale, %zero : <8x8xui8, 8x1>, <8x8xf32, 32x2>, \
!migraphx.shaped<8x8xui8, 32x2> -> <8x8xf32, 8x1>
  %2 = migraphx.dot %q, %1 : <4x8xf32, 8x1>, <8x8xf32, 8x1> -> <4x8xf32, 8x1>
  %3 = migraphx.softmax %2 {axis = 1 : i64} : <4x8xf32, 8x1> -> <4x8xf32, 8x1>
  %4 = migraphx.dot %3, %v : <4x8xf32, 8x1>, <8x8xf32, 8x1> -> <4x8xf32, 8x1>
  return %4 : !migraphx.shaped<4x8xf32, 8x1>
}
"""


def _broadcasted_conv(x: str, x_bcast: str, out_lens: str, reshaped: str, w: str, y: str) -> str:
    """Two groups of channels broadcast to four, reshaped into a 3x3 conv, bias, SiLU."""
    bias = "<1x3x6x6xf32, 0x1x0x0>"
    return f"""\
func.func @conv(%w: !migraphx.shaped{w}, %x: !migraphx.shaped{x}, %b: !migraphx.shaped{bias}) \
-> !migraphx.shaped{y} {{
  %0 = migraphx.multibroadcast %x {{out_dyn_dims = [], out_lens = [{out_lens}]}} : {x} -> {x_bcast}
  %1 = migraphx.reshape %0 {{dims = [1, 4, 6, 6]}} : {x_bcast} -> {reshaped}
  %2 = migraphx.convolution %1, %w {{dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], \
padding_mode = 0 : i64, stride = [1, 1]}} : {reshaped}, {w} -> {y}
  %3 = migraphx.add %2, %b : {y}, {bias} -> {y}
  %4 = migraphx.sigmoid %3 : {y} -> {y}
  %5 = migraphx.mul %3, %4 : {y}, {y} -> {y}
  return %5 : !migraphx.shaped{y}
}}
"""


CONV_NCHW = _broadcasted_conv(
    "<1x2x1x6x6xf32, 72x36x1x6x1>",
    "<1x2x2x6x6xf32, 72x36x1x6x1>",
    "1, 2, 2, 6, 6",
    "<1x4x6x6xf32, 144x36x6x1>",
    "<3x4x3x3xf32, 36x9x3x1>",
    "<1x3x6x6xf32, 108x36x6x1>",
)
CONV_NCHWC = _broadcasted_conv(
    "<1x2x1x6x6xf32, 72x36x1x6x1>",
    "<1x2x2x6x6xf32, 72x36x1x6x1>",
    "1, 2, 2, 6, 6",
    "<1x4x6x6xf32, 144x1x24x4>",
    "<3x4x3x3xf32, 36x1x12x4>",
    "<1x3x6x6xf32, 108x1x18x3>",
)
# H and W blocked 3x2 (HWc): memory [g][h2][w2][h1][w1]
CONV_NCHW_HWC = _broadcasted_conv(
    "<1x2x1x3x2x3x2xf32, 72x36x1x3x18x1x9>",
    "<1x2x2x3x2x3x2xf32, 72x36x1x3x18x1x9>",
    "1, 2, 2, 3, 2, 3, 2",
    "<1x4x6x6xf32, 144x1x24x4>",
    "<3x4x3x3xf32, 36x1x12x4>",
    "<1x3x6x6xf32, 108x1x18x3>",
)


def _gemm(args: str, head: str, a: str, b: str) -> str:
    """[2, 8, 6] x [2, 6, 4], the result split into heads and transposed, a broadcast bias."""
    out = "<2x2x2x2x4xf32, 32x2x1x16x4>"
    bias = "<2x2x2x2x4xf32, 0x2x1x16x4>"
    return f"""\
func.func @gemm({args}, %c: !migraphx.shaped{bias}) -> !migraphx.shaped{out} {{
{head}  %2 = migraphx.dot {a}, {b} : <2x8x6xf32, 48x6x1>, <2x6x4xf32, 24x4x1> -> \
<2x8x4xf32, 32x4x1>
  %3 = migraphx.reshape %2 {{dims = [2, 2, 4, 2, 2]}} : <2x8x4xf32, 32x4x1> -> \
<2x2x4x2x2xf32, 32x16x4x2x1>
  %4 = migraphx.transpose %3 {{permutation = [0, 3, 4, 1, 2]}} : <2x2x4x2x2xf32, 32x16x4x2x1> -> \
<2x2x2x2x4xf32, 32x16x4x2x1>
  %5 = migraphx.add %4, %c : <2x2x2x2x4xf32, 32x16x4x2x1>, {bias} -> {out}
  return %5 : !migraphx.shaped{out}
}}
"""


GEMM_BROADCASTED_K = (
    _gemm(
        "%a: !migraphx.shaped<2x8x1xf32, 8x1x1>, %b: !migraphx.shaped<2x4x6xf32, 24x1x4>",
        "  %0 = migraphx.multibroadcast %a {out_dyn_dims = [], out_lens = [2, 8, 6]} : "
        "<2x8x1xf32, 8x1x1> -> <2x8x6xf32, 48x6x1>\n"
        "  %1 = migraphx.transpose %b {permutation = [0, 2, 1]} : <2x4x6xf32, 24x1x4> -> "
        "<2x6x4xf32, 24x4x1>\n",
        "%0",
        "%1",
    )
    .replace("<2x8x6xf32, 48x6x1>\n", "<2x8x6xf32, 8x1x1>\n", 1)
    .replace("%0, %1 : <2x8x6xf32, 48x6x1>", "%0, %1 : <2x8x6xf32, 8x1x1>")
)
GEMM_BROADCASTED_B = _gemm(
    "%a: !migraphx.shaped<1x6x8xf32, 48x1x6>, %b: !migraphx.shaped<1x4x6xf32, 24x1x4>",
    "  %ta = migraphx.transpose %a {permutation = [0, 2, 1]} : <1x6x8xf32, 48x1x6> -> "
    "<1x8x6xf32, 48x6x1>\n"
    "  %tb = migraphx.transpose %b {permutation = [0, 2, 1]} : <1x4x6xf32, 24x1x4> -> "
    "<1x6x4xf32, 24x4x1>\n"
    "  %0 = migraphx.multibroadcast %ta {out_dyn_dims = [], out_lens = [2, 8, 6]} : "
    "<1x8x6xf32, 48x6x1> -> <2x8x6xf32, 48x6x1>\n"
    "  %1 = migraphx.multibroadcast %tb {out_dyn_dims = [], out_lens = [2, 6, 4]} : "
    "<1x6x4xf32, 24x4x1> -> <2x6x4xf32, 24x4x1>\n",
    "%0",
    "%1",
)
GEMM_TRANS_A_TRANS_B = _gemm(
    "%a: !migraphx.shaped<2x8x6xf32, 48x1x8>, %b: !migraphx.shaped<2x6x4xf32, 24x1x6>",
    "",
    "%a",
    "%b",
).replace(
    "%a, %b : <2x8x6xf32, 48x6x1>, <2x6x4xf32, 24x4x1>",
    "%a, %b : <2x8x6xf32, 48x1x8>, <2x6x4xf32, 24x1x6>",
)

# K = 64 split in two blocks of 32 (the batch), one e8m0 scale per row and block of the lhs
# (broadcast along K, declared with stride 1 there) and per column and block of the rhs; the
# two partial GEMMs summed and maxed over the split.
FP4_SPLIT_K = """\
func.func @split_k(%a: !migraphx.shaped<2x16x32xf4E2M1FN, 512x32x1>, \
%b: !migraphx.shaped<2x32x8xf4E2M1FN, 256x8x1>, %sa: !migraphx.shaped<2x16x1xf32, 16x1x1>, \
%sb: !migraphx.shaped<2x1x8xf32, 8x8x1>) -> (!migraphx.shaped<1x16x8xf32, 128x8x1>, \
!migraphx.shaped<1x16x8xf32, 128x8x1>) {
  %0 = migraphx.multibroadcast %sa {out_dyn_dims = [], out_lens = [2, 16, 32]} : \
<2x16x1xf32, 16x1x1> -> <2x16x32xf32, 16x1x1>
  %1 = migraphx.multibroadcast %sb {out_dyn_dims = [], out_lens = [2, 32, 8]} : \
<2x1x8xf32, 8x8x1> -> <2x32x8xf32, 8x0x1>
  %2 = migraphx.convert %0 : <2x16x32xf32, 16x1x1> to <2x16x32xf8E8M0FNU, 16x1x1>
  %3 = migraphx.convert %1 : <2x32x8xf32, 8x0x1> to <2x32x8xf8E8M0FNU, 8x0x1>
  %4 = migraphx.quant_dot %a scaled by %2, %b scaled by %3 : \
<2x16x32xf4E2M1FN, 512x32x1> scaled by !migraphx.shaped<2x16x32xf8E8M0FNU, 16x1x1>, \
<2x32x8xf4E2M1FN, 256x8x1> scaled by !migraphx.shaped<2x32x8xf8E8M0FNU, 8x0x1> -> \
<2x16x8xf32, 128x8x1>
  %5 = migraphx.reduce_sum %4 {axes = [0]} : <2x16x8xf32, 128x8x1> -> <1x16x8xf32, 128x8x1>
  %6 = migraphx.reduce_max %4 {axes = [0]} : <2x16x8xf32, 128x8x1> -> <1x16x8xf32, 128x8x1>
  return %5, %6 : !migraphx.shaped<1x16x8xf32, 128x8x1>, !migraphx.shaped<1x16x8xf32, 128x8x1>
}
"""

# name -> (program, the value a warning names (None: no contradiction), the strict error)
KERNELS: dict[str, tuple[str, str | None, str]] = {
    "gqa attention": (
        _attention(False),
        "%kt",
        "layout is not representable: dims 0 and 1 overlap",
    ),
    "lse attention": (_attention(True), "%kt", "layout is not representable: dims 0 and 1 overlap"),
    "int4 attention": (INT4_ATTENTION, None, "the smallest non-zero stride is 2"),
    "broadcasted conv nchw": (CONV_NCHW, "%0", "%0 is declared with strides"),
    "broadcasted conv nchwc": (CONV_NCHWC, "%0", "%0 is declared with strides"),
    "broadcasted conv nchw-hwc": (CONV_NCHW_HWC, "%0", "%0 is declared with strides"),
    "gemm broadcasted-k": (GEMM_BROADCASTED_K, "%0", "%0 is declared with strides"),
    "gemm broadcasted-b": (GEMM_BROADCASTED_B, "%0", "%0 is declared with strides"),
    "gemm transA-transB gemm-k": (GEMM_TRANS_A_TRANS_B, "%4", "%4 is declared with strides"),
    "fp4 split-K multi-reduce": (FP4_SPLIT_K, "%0", "%0 is declared with strides"),
}


def _fp4(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 16, n).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_equals_the_reference_on_iree(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    text, named, _ = KERNELS[name]
    if name.startswith("fp4"):
        rng = np.random.default_rng(0)
        scales = [(2.0 ** rng.integers(-3, 4, 32)).astype(np.float32) for _ in range(2)]
        check(text, [_fp4(rng, 1024), _fp4(rng, 512), scales[0], scales[1][:16]], summands=64)
    else:
        check_with_iree(text, rtol=1e-5)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    if named is None:
        assert not warnings
    else:
        assert warnings and all(
            f": warning: {named} is declared with strides" in w for w in warnings[:1]
        ), warnings


def _lower_strict(text: str) -> None:
    module = parse_file_text(text, "k.mlir")
    assert isinstance(module, ModuleOp)
    migraphx_to_tosa(module, {"strict-strides": True})


@pytest.mark.parametrize("name", list(KERNELS))
def test_strict_strides_restores_the_error(name: str) -> None:
    text, _, message = KERNELS[name]
    with pytest.raises(ConvcanonError) as raised:
        _lower_strict(text)
    rendered = raised.value.render()
    assert rendered.startswith("k.mlir:") and ": error: " in rendered, rendered
    assert message.split(": ", 1)[-1] in rendered, rendered
