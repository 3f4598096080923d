// Window padding becomes an explicit stablehlo.pad of the lhs spatial dims (zero of the lhs
// element type, 0 on batch and feature dims); the conv that remains has zero padding.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general}' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK:       %[[ZERO:.+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  %[[PAD:.+]] = stablehlo.pad %arg0, %[[ZERO]], low = [0, 1, 2, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x8x8x2xf32>, tensor<f32>) -> tensor<1x10x11x2xf32>
// CHECK-NEXT:  %[[CONV:.+]] = stablehlo.convolution(%[[PAD]], %arg1) {{.*}} window = {stride = [1, 1], pad = {{\[\[}}0, 0], [0, 0]]} {{.*}} -> tensor<1x8x9x4xf32>
// CHECK-NEXT:  return %[[CONV]]
func.func @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x8x9x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [2, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x8x9x4xf32>
  return %0 : tensor<1x8x9x4xf32>
}

// A bf16 conv pads with a bf16 zero.
// CHECK-LABEL: func.func @bf16
// CHECK:       stablehlo.constant dense<0.000000e+00> : tensor<bf16>
// CHECK:       stablehlo.pad {{.*}} -> tensor<1x10x10x2xbf16>
func.func @bf16(%x: tensor<1x8x8x2xbf16>, %w: tensor<3x3x2x4xbf16>) -> tensor<1x8x8x4xbf16> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xbf16>, tensor<3x3x2x4xbf16>) -> tensor<1x8x8x4xbf16>
  return %0 : tensor<1x8x8x4xbf16>
}
