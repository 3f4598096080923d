// A unit-stride conv's explicit pad, in `conv-layout=keep`: written channels-last, between a
// transpose to [b, 0.., f] and one back, while the conv keeps its dimension numbers, so that an
// engine's own transpose into the conv cancels the one back and the pad feeds the conv.
// - A kernel-gradient conv (jax.grad's, of a 3x3/2 conv: the activation with batch and feature
//   swapped, [f, 0, 1, b]) always; dynamic batch too.
// - An NCHW or NCW forward conv where the pad grows the lhs by at most half.
// - Where it grows it by more (a 3x3 conv on 7x7), and on an NHWC conv, the pad stays in place.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general engine=xla-cpu}' | FileCheck %s

// CHECK-LABEL: func.func @kernel_gradient
// CHECK:       %[[T:.+]] = stablehlo.transpose %arg0, dims = [3, 1, 2, 0] : (tensor<32x16x16x8xf32>) -> tensor<8x16x16x32xf32>
// CHECK-NEXT:  %[[P:.+]] = stablehlo.pad %[[T]], %{{.+}}, low = [0, 1, 1, 0], high = [0, 0, 0, 0], {{.*}} -> tensor<8x17x17x32xf32>
// CHECK-NEXT:  %[[B:.+]] = stablehlo.transpose %[[P]], dims = [3, 1, 2, 0] : (tensor<8x17x17x32xf32>) -> tensor<32x17x17x8xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[B]], %arg1) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {pad = {{\[\[0, 0\], \[0, 0\]\]}}, rhs_dilate = [2, 2]}
func.func @kernel_gradient(%x: tensor<32x16x16x8xf32>, %g: tensor<32x8x8x16xf32>) -> tensor<3x3x8x16xf32> {
  %0 = stablehlo.convolution(%x, %g) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {pad = [[1, 0], [1, 0]], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<32x16x16x8xf32>, tensor<32x8x8x16xf32>) -> tensor<3x3x8x16xf32>
  return %0 : tensor<3x3x8x16xf32>
}

// CHECK-LABEL: func.func @kernel_gradient_dynamic_batch
// CHECK:       %[[T:.+]] = stablehlo.transpose %arg0, dims = [3, 1, 2, 0] : (tensor<32x16x16x?xf32>) -> tensor<?x16x16x32xf32>
// CHECK-NEXT:  %[[P:.+]] = stablehlo.pad %[[T]], {{.*}} -> tensor<?x17x17x32xf32>
// CHECK-NEXT:  %[[B:.+]] = stablehlo.transpose %[[P]], dims = [3, 1, 2, 0] : (tensor<?x17x17x32xf32>) -> tensor<32x17x17x?xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[B]], %arg1) {{.*}} -> tensor<3x3x?x16xf32>
func.func @kernel_gradient_dynamic_batch(%x: tensor<32x16x16x?xf32>, %g: tensor<32x8x8x16xf32>) -> tensor<3x3x?x16xf32> {
  %0 = stablehlo.convolution(%x, %g) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {pad = [[1, 0], [1, 0]], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<32x16x16x?xf32>, tensor<32x8x8x16xf32>) -> tensor<3x3x?x16xf32>
  return %0 : tensor<3x3x?x16xf32>
}

// CHECK-LABEL: func.func @nchw_forward
// CHECK:       %[[T:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 3, 1] : (tensor<1x8x16x16xf32>) -> tensor<1x16x16x8xf32>
// CHECK-NEXT:  %[[P:.+]] = stablehlo.pad %[[T]], %{{.+}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0], {{.*}} -> tensor<1x18x18x8xf32>
// CHECK-NEXT:  %[[B:.+]] = stablehlo.transpose %[[P]], dims = [0, 3, 1, 2] : (tensor<1x18x18x8xf32>) -> tensor<1x8x18x18xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[B]], %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = {{\[\[0, 0\], \[0, 0\]\]}}
// CHECK-NOT:   stablehlo.transpose
// CHECK:       return
func.func @nchw_forward(%x: tensor<1x8x16x16xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32>
  return %0 : tensor<1x16x16x16xf32>
}

// CHECK-LABEL: func.func @ncw_forward
// CHECK:       %[[T:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<1x8x64xf32>) -> tensor<1x64x8xf32>
// CHECK-NEXT:  %[[P:.+]] = stablehlo.pad %[[T]], %{{.+}}, low = [0, 3, 0], high = [0, 3, 0], {{.*}} -> tensor<1x70x8xf32>
// CHECK-NEXT:  %[[B:.+]] = stablehlo.transpose %[[P]], dims = [0, 2, 1] : (tensor<1x70x8xf32>) -> tensor<1x8x70xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[B]], %arg1) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0]
func.func @ncw_forward(%x: tensor<1x8x64xf32>, %w: tensor<8x8x7xf32>) -> tensor<1x8x64xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[3, 3]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x64xf32>, tensor<8x8x7xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}

// CHECK-LABEL: func.func @nchw_forward_7x7
// CHECK-NOT:   stablehlo.transpose
// CHECK:       %[[P:.+]] = stablehlo.pad %arg0, {{.*}} -> tensor<1x8x9x9xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[P]], %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]
// CHECK-NOT:   stablehlo.transpose
// CHECK:       return
func.func @nchw_forward_7x7(%x: tensor<1x8x7x7xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x7x7xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32>
  return %0 : tensor<1x16x7x7xf32>
}

// CHECK-LABEL: func.func @nhwc_forward
// CHECK-NOT:   stablehlo.transpose
// CHECK:       %[[P:.+]] = stablehlo.pad %arg0, {{.*}} -> tensor<1x18x18x8xf32>
// CHECK-NEXT:  stablehlo.convolution(%[[P]], %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
// CHECK-NOT:   stablehlo.transpose
// CHECK:       return
func.func @nhwc_forward(%x: tensor<1x16x16x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x16x16x16xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x16x16x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x16x16x16xf32>
  return %0 : tensor<1x16x16x16xf32>
}
