// min-transposes: 1: tosa.matmul needs K^T as [B*H, D, S] and K is stored [B, H, S, D]
func.func @main(%q: !migraphx.shaped<1x2x4x8xf16, 64x32x8x1>, %k: !migraphx.shaped<1x2x4x8xf16, 64x32x8x1>, %v: !migraphx.shaped<1x2x4x8xf16, 64x32x8x1>) -> !migraphx.shaped<1x2x4x8xf16, 64x32x8x1> {
  %kt = migraphx.transpose %k {permutation = [0, 1, 3, 2]} : <1x2x4x8xf16, 64x32x8x1> -> <1x2x8x4xf16, 64x32x1x8>
  %s = migraphx.dot %q, %kt : <1x2x4x8xf16, 64x32x8x1>, <1x2x8x4xf16, 64x32x1x8> -> <1x2x4x4xf16, 32x16x4x1>
  %scale = migraphx.literal(dense<3.535160e-01> : tensor<1xf16>) : <1xf16, 0>
  %scale_b = migraphx.multibroadcast %scale {out_dyn_dims = [], out_lens = [1, 2, 4, 4]} : <1xf16, 0> -> <1x2x4x4xf16, 0x0x0x0>
  %scaled = migraphx.mul %s, %scale_b : <1x2x4x4xf16, 32x16x4x1>, <1x2x4x4xf16, 0x0x0x0> -> <1x2x4x4xf16, 32x16x4x1>
  %mask = migraphx.literal(dense<[[[[0x0000, 0xFC00, 0xFC00, 0xFC00], [0x0000, 0x0000, 0xFC00, 0xFC00], [0x0000, 0x0000, 0x0000, 0xFC00], [0x0000, 0x0000, 0x0000, 0x0000]]]]> : tensor<1x1x4x4xf16>) : <1x1x4x4xf16, 16x16x4x1>
  %mask_b = migraphx.multibroadcast %mask {out_dyn_dims = [], out_lens = [1, 2, 4, 4]} : <1x1x4x4xf16, 16x16x4x1> -> <1x2x4x4xf16, 16x0x4x1>
  %masked = migraphx.add %scaled, %mask_b : <1x2x4x4xf16, 32x16x4x1>, <1x2x4x4xf16, 16x0x4x1> -> <1x2x4x4xf16, 32x16x4x1>
  %p = migraphx.softmax %masked {axis = 3 : i64} : <1x2x4x4xf16, 32x16x4x1> -> <1x2x4x4xf16, 32x16x4x1>
  %o = migraphx.dot %p, %v : <1x2x4x4xf16, 32x16x4x1>, <1x2x4x8xf16, 64x32x8x1> -> <1x2x4x8xf16, 64x32x8x1>
  return %o : !migraphx.shaped<1x2x4x8xf16, 64x32x8x1>
}
