// With a 1-wide window (ResNet's 1x1 stride-2 projection) only phase 0 exists: one strided lhs
// slice and one unit-stride conv, no kernel slice and no add.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general}' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT:  %[[X:.+]] = stablehlo.slice %arg0 [0:1, 0:7:2, 0:7:2, 0:2] : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK-NEXT:  %[[C:.+]] = stablehlo.convolution(%[[X]], %arg1) {{.*}} window = {stride = [1, 1]{{.*}}} {{.*}} -> tensor<1x4x4x4xf32>
// CHECK-NEXT:  return %[[C]]
// CHECK-NOT:   stablehlo.add
func.func @main(%x: tensor<1x8x8x2xf32>, %w: tensor<1x1x2x4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
