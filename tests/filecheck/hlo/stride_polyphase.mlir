// A strided conv with a wider-than-1 window becomes the exact polyphase sum: per spatial dim,
// phase p takes the taps k with k mod s == p (kernel slice start p, stride s) and the lhs slice
// start p, stride s; every phase pair is a unit-stride conv and the partials are added.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general merge-phases=none engine=xla-cpu}' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK:       %[[X00:.+]] = stablehlo.slice %arg0 [0:1, 0:9:2, 0:9:2, 0:2] : (tensor<1x9x9x2xf32>) -> tensor<1x5x5x2xf32>
// CHECK-NEXT:  %[[W00:.+]] = stablehlo.slice %arg1 [0:3:2, 0:3:2, 0:2, 0:4] : (tensor<3x3x2x4xf32>) -> tensor<2x2x2x4xf32>
// CHECK-NEXT:  %[[C00:.+]] = stablehlo.convolution(%[[X00]], %[[W00]]) {{.*}} window = {stride = [1, 1]{{.*}}} {{.*}} -> tensor<1x4x4x4xf32>
// CHECK-NEXT:  %[[X01:.+]] = stablehlo.slice %arg0 [0:1, 0:9:2, 1:8:2, 0:2]
// CHECK-NEXT:  %[[W01:.+]] = stablehlo.slice %arg1 [0:3:2, 1:2, 0:2, 0:4] : (tensor<3x3x2x4xf32>) -> tensor<2x1x2x4xf32>
// CHECK-NEXT:  %[[C01:.+]] = stablehlo.convolution(%[[X01]], %[[W01]])
// CHECK-NEXT:  %[[S1:.+]] = stablehlo.add %[[C00]], %[[C01]] : tensor<1x4x4x4xf32>
// CHECK-NEXT:  stablehlo.slice %arg0 [0:1, 1:8:2, 0:9:2, 0:2]
// CHECK-NEXT:  stablehlo.slice %arg1 [1:2, 0:3:2, 0:2, 0:4]
// CHECK-NEXT:  %[[C10:.+]] = stablehlo.convolution
// CHECK-NEXT:  %[[S2:.+]] = stablehlo.add %[[S1]], %[[C10]]
// CHECK-NEXT:  stablehlo.slice %arg0 [0:1, 1:8:2, 1:8:2, 0:2]
// CHECK-NEXT:  stablehlo.slice %arg1 [1:2, 1:2, 0:2, 0:4]
// CHECK-NEXT:  %[[C11:.+]] = stablehlo.convolution
// CHECK-NEXT:  %[[S3:.+]] = stablehlo.add %[[S2]], %[[C11]]
// CHECK-NEXT:  return %[[S3]]
// CHECK-NOT:   stride = [2
func.func @main(%x: tensor<1x9x9x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// f16: the partials are computed and summed in f32, converted once to the result type.
// CHECK-LABEL: func.func @f16
// CHECK:       %[[A:.+]] = stablehlo.convolution{{.*}} -> tensor<1x4x9x4xf32>
// CHECK:       %[[B:.+]] = stablehlo.convolution{{.*}} -> tensor<1x4x9x4xf32>
// CHECK-NEXT:  %[[SUM:.+]] = stablehlo.add %[[A]], %[[B]] : tensor<1x4x9x4xf32>
// CHECK-NEXT:  %[[OUT:.+]] = stablehlo.convert %[[SUM]] : (tensor<1x4x9x4xf32>) -> tensor<1x4x9x4xf16>
// CHECK-NEXT:  return %[[OUT]]
func.func @f16(%x: tensor<1x9x9x2xf16>, %w: tensor<3x1x2x4xf16>) -> tensor<1x4x9x4xf16> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x2xf16>, tensor<3x1x2x4xf16>) -> tensor<1x4x9x4xf16>
  return %0 : tensor<1x4x9x4xf16>
}
