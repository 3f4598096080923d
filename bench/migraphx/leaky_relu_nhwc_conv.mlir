// min-transposes: 0: NHWC input, OHWI-stored weights and an NHWC result; greater, mul and where run in the conv's own NHWC order
func.func @main(%x: !migraphx.shaped<1x4x5x5xf32, 100x1x20x4>, %w: !migraphx.shaped<6x4x3x3xf32, 36x1x12x4>) -> !migraphx.shaped<1x6x5x5xf32, 150x1x30x6> {
  %c = migraphx.convolution %x, %w {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x4x5x5xf32, 100x1x20x4>, <6x4x3x3xf32, 36x1x12x4> -> <1x6x5x5xf32, 150x1x30x6>
  %zero = migraphx.literal(dense<0.000000e+00> : tensor<1xf32>) : <1xf32, 0>
  %zero_b = migraphx.multibroadcast %zero {out_dyn_dims = [], out_lens = [1, 6, 5, 5]} : <1xf32, 0> -> <1x6x5x5xf32, 0x0x0x0>
  %gt = migraphx.greater %c, %zero_b : <1x6x5x5xf32, 150x1x30x6>, <1x6x5x5xf32, 0x0x0x0> -> <1x6x5x5xf32, 150x1x30x6>
  %pos = migraphx.convert %gt {target_type = 0 : i64} : <1x6x5x5xf32, 150x1x30x6> to <1x6x5x5xsi8, 150x1x30x6>
  %alpha = migraphx.literal(dense<1.000000e-01> : tensor<1xf32>) : <1xf32, 0>
  %alpha_b = migraphx.multibroadcast %alpha {out_dyn_dims = [], out_lens = [1, 6, 5, 5]} : <1xf32, 0> -> <1x6x5x5xf32, 0x0x0x0>
  %neg = migraphx.mul %alpha_b, %c : <1x6x5x5xf32, 0x0x0x0>, <1x6x5x5xf32, 150x1x30x6> -> <1x6x5x5xf32, 150x1x30x6>
  %out = migraphx.where %pos, %c, %neg : <1x6x5x5xsi8, 150x1x30x6>, <1x6x5x5xf32, 150x1x30x6>, <1x6x5x5xf32, 150x1x30x6> -> <1x6x5x5xf32, 150x1x30x6>
  return %out : !migraphx.shaped<1x6x5x5xf32, 150x1x30x6>
}
