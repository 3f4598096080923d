// A 4x4 / 2 ConvTranspose (padding 1: lhs dilation 2, conv padding 2) has two output phases per
// dim, each reading its own input window with 2 taps: four 2x2 convs of the undilated input
// (the lattice multiply-adds), put in place by interleaving (concat on a unit axis + reshape),
// never by an interior pad and adds of mostly-zero tensors.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general}' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-COUNT-4: stablehlo.convolution({{.*}} : (tensor<1x9x9x4xf32>, tensor<2x2x4x6xf32>) -> tensor<1x8x8x6xf32>
// CHECK:       stablehlo.concatenate {{.*}}, dim = 3 : (tensor<1x8x8x1x6xf32>, tensor<1x8x8x1x6xf32>) -> tensor<1x8x8x2x6xf32>
// CHECK:       stablehlo.concatenate {{.*}}, dim = 3 : (tensor<1x8x8x1x6xf32>, tensor<1x8x8x1x6xf32>) -> tensor<1x8x8x2x6xf32>
// CHECK:       %[[ROWS:.+]] = stablehlo.concatenate {{.*}}, dim = 2 : (tensor<1x8x1x16x6xf32>, tensor<1x8x1x16x6xf32>) -> tensor<1x8x2x16x6xf32>
// CHECK-NEXT:  %[[OUT:.+]] = stablehlo.reshape %[[ROWS]] : (tensor<1x8x2x16x6xf32>) -> tensor<1x16x16x6xf32>
// CHECK-NEXT:  return %[[OUT]]
// CHECK-NOT:   stablehlo.add
// CHECK-NOT:   interior = [0, 1, 1, 0]
func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<4x4x4x6xf32>) -> tensor<1x16x16x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[2, 2], [2, 2]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x4xf32>, tensor<4x4x4x6xf32>) -> tensor<1x16x16x6xf32>
  return %0 : tensor<1x16x16x6xf32>
}
