// A conv pass over the other dialect's convolutions is an error naming the right pass, never a
// silent no-op; nothing is printed.
// RUN: not convcanon-opt %s --stablehlo-canonicalize-conv 2>&1 | FileCheck %s

// CHECK: dialect_mismatch.mlir:[[# @LINE + 3]]:8: error: stablehlo-canonicalize-conv found no stablehlo.convolution but 1 mhlo.convolution op: use canonicalize-conv for mhlo modules
// CHECK-NOT: module
func.func @main(%arg0: tensor<1x8x8x2xf32>, %arg1: tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = mhlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}
