"""Kernels with types outside TOSA 1.0's profiles, written as MIGraphX's MLIR emitter writes them
(and as rocMLIR's passes leave them: fp4/int4 arguments after realize-fp4/int4), lowered in the
default `types=conformant` form: iree-opt verifies them, no tensor of such a type is left, and
IREE and our TOSA interpreter equal the migraphx reference over MIGraphX's buffers (packed
nibbles stay packed).

Block scales are powers of two (what MIGraphX's MX quantization produces): e8m0 holds them
exactly under any rounding rule. Quantize scales are powers of two too, so x / scale (the
reference) and x * (1 / scale) (the lowering) are the same number.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from .harness import assert_close, reference
from .test_conformant_codes import lowered, on_both_engines


def check(
    text: str,
    inputs: list[np.ndarray],
    rtol: float = 1e-6,
    iree: bool = True,
    summands: int | None = None,
) -> str:
    """Equal to the migraphx reference on IREE (if `iree`) and on our TOSA interpreter: floats
    to `rtol` (f32 sums in another order), 1-byte float results bit for bit. `summands`: each
    result is an f32 sum of that many exact products, which may cancel; another summation order
    may then differ by up to `summands` roundings at the result's largest magnitude."""
    tosa = lowered(text)
    expected = reference(text, inputs)
    for engine, got in on_both_engines(tosa, inputs, iree).items():
        assert len(got) == len(expected), engine
        for g, e in zip(got, expected, strict=True):
            if e.dtype.itemsize == 1 and e.dtype.kind == "V":
                np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8), err_msg=engine)
            elif summands is not None:
                bound = summands * float(np.finfo(np.float32).eps) * float(np.max(np.abs(e)))
                np.testing.assert_allclose(g, e, rtol=0, atol=bound, err_msg=engine)
            else:
                assert_close([g], [e], rtol)
    return tosa


def _fp4(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 16, n).astype(np.uint8).view(ml_dtypes.float4_e2m1fn)


def _powers_of_two(rng: np.random.Generator, n: int) -> np.ndarray:
    return (2.0 ** rng.integers(-4, 5, n)).astype(np.float32)


# -- fp4 x e8m0 ------------------------------------------------------------------------------------

# MIGraphX's fp4 GEMM: the rhs multibroadcast to a batch, f32 scales broadcast over blocks of
# 32 and reshaped to the operands' lens, converted to e8m0, `quant_dot ... scaled by`.
MXFP4_GEMM = """\
func.func @mlir_quant_dot_fp4(%arg0: !migraphx.shaped<1x64x32xf4E2M1FN, 2048x32x1>, \
%arg1: !migraphx.shaped<32x64xf4E2M1FN, 64x1>, %arg2: !migraphx.shaped<1x2x1x32xf32, 64x32x32x1>, \
%arg3: !migraphx.shaped<1x32x2x1xf32, 64x2x1x1>) -> !migraphx.shaped<1x64x64xf32, 4096x64x1> {
  %0 = migraphx.multibroadcast %arg1 {out_dyn_dims = [], out_lens = [1, 32, 64]} : \
<32x64xf4E2M1FN, 64x1> -> <1x32x64xf4E2M1FN, 0x64x1>
  %1 = migraphx.multibroadcast %arg2 {out_dyn_dims = [], out_lens = [1, 2, 32, 32]} : \
<1x2x1x32xf32, 64x32x32x1> -> <1x2x32x32xf32, 64x32x0x1>
  %2 = migraphx.reshape %1 {dims = [1, 64, 32]} : <1x2x32x32xf32, 64x32x0x1> -> \
<1x64x32xf32, 2048x32x1>
  %3 = migraphx.multibroadcast %arg3 {out_dyn_dims = [], out_lens = [1, 32, 2, 32]} : \
<1x32x2x1xf32, 64x2x1x1> -> <1x32x2x32xf32, 64x2x1x0>
  %4 = migraphx.reshape %3 {dims = [1, 32, 64]} : <1x32x2x32xf32, 64x2x1x0> -> \
<1x32x64xf32, 2048x64x1>
  %sa = migraphx.convert %2 : !migraphx.shaped<1x64x32xf32, 2048x32x1> to \
!migraphx.shaped<1x64x32xf8E8M0FNU, 2048x32x1>
  %sb = migraphx.convert %4 : !migraphx.shaped<1x32x64xf32, 2048x64x1> to \
!migraphx.shaped<1x32x64xf8E8M0FNU, 2048x64x1>
  %5 = migraphx.quant_dot %arg0 scaled by %sa, %0 scaled by %sb : \
<1x64x32xf4E2M1FN, 2048x32x1> scaled by !migraphx.shaped<1x64x32xf8E8M0FNU, 2048x32x1>, \
<1x32x64xf4E2M1FN, 0x64x1> scaled by !migraphx.shaped<1x32x64xf8E8M0FNU, 2048x64x1> -> \
<1x64x64xf32, 4096x64x1>
  return %5 : !migraphx.shaped<1x64x64xf32, 4096x64x1>
}
"""


def test_mxfp4_gemm_with_e8m0_scales_equals_reference_on_iree() -> None:
    rng = np.random.default_rng(0)
    inputs = [_fp4(rng, 2048), _fp4(rng, 2048), _powers_of_two(rng, 64), _powers_of_two(rng, 64)]
    tosa = check(MXFP4_GEMM, inputs)
    assert "tosa.gather" in tosa and "tosa.matmul" in tosa
    assert "tensor<1024xi8> {convcanon.element = f4E2M1FN, convcanon.elements = 2048" in tosa


def _k_blocked_gemm(m: int, k: int, n: int) -> str:
    """One e8m0 scale per 32 elements of K (OCP MX): scale args [M, K/32] and [K/32, N]
    broadcast along K, the lhs transposed in memory, the fp4 data as arguments."""
    blocks = k // 32
    a_t, b_t = f"<{m}x{k}xf4E2M1FN, 1x{m}>", f"<{k}x{n}xf4E2M1FN, {n}x1>"
    sa_t, sb_t = f"<{m}x{k}xf8E8M0FNU, {k}x1>", f"<{k}x{n}xf8E8M0FNU, {n}x1>"
    lines = [
        f"%a0 = migraphx.unsqueeze %sa {{axes = [2]}} : <{m}x{blocks}xf32, {blocks}x1> -> "
        f"<{m}x{blocks}x1xf32, {blocks}x1x1>",
        f"%a1 = migraphx.multibroadcast %a0 {{out_lens = [{m}, {blocks}, 32]}} : "
        f"<{m}x{blocks}x1xf32, {blocks}x1x1> -> <{m}x{blocks}x32xf32, {blocks}x1x0>",
        f"%a2 = migraphx.reshape %a1 {{dims = [{m}, {k}]}} : <{m}x{blocks}x32xf32, "
        f"{blocks}x1x0> -> <{m}x{k}xf32, {k}x1>",
        f"%b0 = migraphx.unsqueeze %sb {{axes = [1]}} : <{blocks}x{n}xf32, {n}x1> -> "
        f"<{blocks}x1x{n}xf32, {n}x{n}x1>",
        f"%b1 = migraphx.multibroadcast %b0 {{out_lens = [{blocks}, 32, {n}]}} : "
        f"<{blocks}x1x{n}xf32, {n}x{n}x1> -> <{blocks}x32x{n}xf32, {n}x0x1>",
        f"%b2 = migraphx.reshape %b1 {{dims = [{k}, {n}]}} : <{blocks}x32x{n}xf32, {n}x0x1> "
        f"-> <{k}x{n}xf32, {n}x1>",
        f"%ea = migraphx.convert %a2 : <{m}x{k}xf32, {k}x1> to {sa_t}",
        f"%eb = migraphx.convert %b2 : <{k}x{n}xf32, {n}x1> to {sb_t}",
        f"%r = migraphx.quant_dot %a scaled by %ea, %b scaled by %eb : {a_t} scaled by "
        f"!migraphx.shaped{sa_t}, {b_t} scaled by !migraphx.shaped{sb_t} -> <{m}x{n}xf32, {n}x1>",
    ]
    body = "\n".join(f"  {line}" for line in lines)
    return (
        f"func.func @main(%a: !migraphx.shaped{a_t}, %b: !migraphx.shaped{b_t}, "
        f"%sa: !migraphx.shaped<{m}x{blocks}xf32, {blocks}x1>, "
        f"%sb: !migraphx.shaped<{blocks}x{n}xf32, {n}x1>) -> !migraphx.shaped<{m}x{n}xf32, {n}x1> "
        f"{{\n{body}\n  return %r : !migraphx.shaped<{m}x{n}xf32, {n}x1>\n}}\n"
    )


@pytest.mark.parametrize(("m", "k", "n"), [(3, 64, 5), (4, 96, 1)])
def test_k_blocked_mxfp4_gemm_equals_reference_on_iree(m: int, k: int, n: int) -> None:
    """Odd element counts leave a half-used last byte (m * k and k * n are even here, the
    scale counts not)."""
    rng = np.random.default_rng(m + k + n)
    blocks = k // 32
    inputs = [
        _fp4(rng, m * k),
        _fp4(rng, k * n),
        _powers_of_two(rng, m * blocks),
        _powers_of_two(rng, blocks * n),
    ]
    check(_k_blocked_gemm(m, k, n), inputs)


# -- fp8 FNUZ --------------------------------------------------------------------------------------


def _quantize_dot(et: str, n: int) -> str:
    """rocMLIR's quantizelinear-with-bias fusion: quantize to FNUZ fp8, quant_dot of the
    result with itself into f32."""
    t = f"<{n}x{n}x{et}, {n}x1>"
    f = f"<{n}x{n}xf32, {n}x1>"
    return (
        f"func.func @mlir_quantizelinear_{et}(%input: !migraphx.shaped{f}, "
        f"%scale: !migraphx.shaped{f}, %bias: !migraphx.shaped{t}) -> !migraphx.shaped{f} {{\n"
        f"    %result = migraphx.quantizelinear %input, %scale, %bias : {f}, {f}, "
        f"!migraphx.shaped{t} -> {t}\n"
        f"    %dot_result = migraphx.quant_dot %result, %result : {t}, {t} -> {f}\n"
        f"    return %dot_result : !migraphx.shaped{f}\n}}\n"
    )


def _finite_fnuz(rng: np.random.Generator, et: str, n: int) -> np.ndarray:
    dtype = ml_dtypes.float8_e4m3fnuz if et == "f8E4M3FNUZ" else ml_dtypes.float8_e5m2fnuz
    codes = rng.integers(0, 256, n).astype(np.uint8)
    codes[codes == 0x80] = 0  # NaN: MIGraphX's and the reference's NaN agree, but sums of NaN
    values = codes.view(dtype)
    return values if et == "f8E4M3FNUZ" else (values.astype(np.float32) / 256).astype(dtype)


@pytest.mark.parametrize("et", ["f8E4M3FNUZ", "f8E5M2FNUZ"])
def test_fnuz_quantize_then_quant_dot_equals_reference_on_iree(et: str) -> None:
    """Inputs up to 1e5 saturate at the type's largest finite value. The dot's products
    (up to 57344^2) cancel in some sums, so the tolerance is the f32 sum's, not per element."""
    rng = np.random.default_rng(1)
    n = 8
    x = (rng.standard_normal(n * n) * rng.choice([1.0, 100.0, 1e5], n * n)).astype(np.float32)
    scale = _powers_of_two(rng, n * n)
    check(_quantize_dot(et, n), [x, scale, _finite_fnuz(rng, et, n * n)], summands=n)


@pytest.mark.parametrize("et", ["f8E4M3FNUZ", "f8E5M2FNUZ"])
def test_fnuz_quantize_and_dequantize_round_trip_on_iree(et: str) -> None:
    """quantizelinear to FNUZ returned as it is (an fp8 buffer) and dequantizelinear of an FNUZ
    argument with an FNUZ zero point, per-channel scales broadcast as MIGraphX sends them."""
    t, f = f"<4x6x{et}, 6x1>", "<4x6xf32, 6x1>"
    text = (
        f"func.func @main(%x: !migraphx.shaped{f}, %s: !migraphx.shaped<6xf32, 1>, "
        f"%q: !migraphx.shaped{t}, %z: !migraphx.shaped{t}) -> "
        f"(!migraphx.shaped{t}, !migraphx.shaped{f}) {{\n"
        "  %sb = migraphx.multibroadcast %s {out_lens = [4, 6]} : <6xf32, 1> -> <4x6xf32, 0x1>\n"
        f"  %0 = migraphx.quantizelinear %x, %sb : {f}, <4x6xf32, 0x1> -> {t}\n"
        f"  %1 = migraphx.dequantizelinear %q, %sb, %z : {t}, <4x6xf32, 0x1>, "
        f"!migraphx.shaped{t} -> {f}\n"
        f"  return %0, %1 : !migraphx.shaped{t}, !migraphx.shaped{f}\n}}\n"
    )
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(24) * 300).astype(np.float32)
    x[:4] = [np.inf, -np.inf, 1e30, -0.0]
    tosa = check(text, [x, _powers_of_two(rng, 6), *(_finite_fnuz(rng, et, 24) for _ in "qz")])
    assert "f8E4M3FNUZ>" not in tosa and "f8E5M2FNUZ>" not in tosa


# -- int4 ------------------------------------------------------------------------------------------

# After rocMLIR's realize-int4: int4 arguments (MIGraphX's packed bytes) read through layouts,
# then converted; plus MIGraphX's own unpack of i8 bytes to si4 and a dequantize.
INT4_CONVERTS = """\
func.func @main(%x: !migraphx.shaped<8x4xsi4, 4x1>, %t: !migraphx.shaped<9x4x8xsi4, 32x1x4>, \
%m: !migraphx.shaped<1x8x1xui4, 2x1x2>, %p: !migraphx.shaped<3x2xi8, 2x1>, \
%s: !migraphx.shaped<3x4xf32, 4x1>) -> (!migraphx.shaped<8x4xsi8, 4x1>, \
!migraphx.shaped<9x8x4xf16, 32x4x1>, !migraphx.shaped<4x8x3xsi32, 24x3x1>, \
!migraphx.shaped<3x4xf32, 4x1>, !migraphx.shaped<8x4xui4, 4x1>) {
  %0 = migraphx.convert %x : <8x4xsi4, 4x1> to <8x4xsi8, 4x1>
  %1 = migraphx.transpose %t {permutation = [0, 2, 1]} : <9x4x8xsi4, 32x1x4> -> \
<9x8x4xsi4, 32x4x1>
  %2 = migraphx.convert %1 : <9x8x4xsi4, 32x4x1> to <9x8x4xf16, 32x4x1>
  %3 = migraphx.multibroadcast %m {out_lens = [4, 8, 3]} : <1x8x1xui4, 2x1x2> -> \
<4x8x3xui4, 0x1x0>
  %4 = migraphx.convert %3 : <4x8x3xui4, 0x1x0> to <4x8x3xsi32, 24x3x1>
  %5 = migraphx.unpack %p {axis = 1 : i64} : <3x2xi8, 2x1> -> <3x4xsi4, 4x1>
  %6 = migraphx.dequantizelinear %5, %s : <3x4xsi4, 4x1>, <3x4xf32, 4x1> -> <3x4xf32, 4x1>
  %7 = migraphx.add %0, %0 : <8x4xsi8, 4x1>, <8x4xsi8, 4x1> -> <8x4xsi8, 4x1>
  %8 = migraphx.convert %7 : <8x4xsi8, 4x1> to <8x4xui4, 4x1>
  return %0, %2, %4, %6, %8 : !migraphx.shaped<8x4xsi8, 4x1>, \
!migraphx.shaped<9x8x4xf16, 32x4x1>, !migraphx.shaped<4x8x3xsi32, 24x3x1>, \
!migraphx.shaped<3x4xf32, 4x1>, !migraphx.shaped<8x4xui4, 4x1>
}
"""


def test_int4_converts_and_unpack_equal_reference_on_iree() -> None:
    rng = np.random.default_rng(3)
    inputs = [
        rng.integers(-8, 8, 32).astype(ml_dtypes.int4),
        rng.integers(-8, 8, 288).astype(ml_dtypes.int4),
        rng.integers(0, 16, 8).astype(ml_dtypes.uint4),
        rng.integers(-128, 128, 6).astype(np.int8),
        rng.uniform(0.5, 2.0, 12).astype(np.float32),
    ]
    tosa = check(INT4_CONVERTS, inputs)
    assert "tensor<16xi8> {convcanon.element = si4, convcanon.elements = 32" in tosa
    assert "tensor<4xi8> {convcanon.element = ui4, convcanon.elements = 8" in tosa


# A splat fp8 literal broadcast into an fp8 add (MIGraphX's fp8 ops compute in f32 and round
# back), a full si4 literal into an int4 add (sums kept inside -8..7: the reference computes
# int4 arithmetic through f32 and cannot wrap).
LITERALS = """\
func.func @main(%x: !migraphx.shaped<4xf8E4M3FNUZ, 1>) -> (!migraphx.shaped<4xf8E4M3FNUZ, 1>, \
!migraphx.shaped<4xsi4, 1>) {
  %c = migraphx.literal (dense<1.5> : tensor<1xf8E4M3FNUZ>) : <1xf8E4M3FNUZ, 0>
  %b = migraphx.multibroadcast %c {out_lens = [4]} : <1xf8E4M3FNUZ, 0> -> <4xf8E4M3FNUZ, 0>
  %s = migraphx.add %x, %b : <4xf8E4M3FNUZ, 1>, <4xf8E4M3FNUZ, 0> -> <4xf8E4M3FNUZ, 1>
  %i = migraphx.literal (dense<[-4, 3, 2, -1]> : tensor<4xsi4>) : <4xsi4, 1>
  %j = migraphx.add %i, %i : <4xsi4, 1>, <4xsi4, 1> -> <4xsi4, 1>
  return %s, %j : !migraphx.shaped<4xf8E4M3FNUZ, 1>, !migraphx.shaped<4xsi4, 1>
}
"""


def test_foreign_literals_are_storage_constants_on_iree() -> None:
    x = np.array([1.0, -2.0, 100.0, 0.25], np.float32).astype(ml_dtypes.float8_e4m3fnuz)
    tosa = check(LITERALS, [x])
    assert "dense<[-4, 3, 2, -1]> : tensor<4xi8>" in tosa
    assert "dense<68> : tensor<1xi8>" in tosa  # 1.5: biased exponent 8, mantissa 0.5: 0x44
