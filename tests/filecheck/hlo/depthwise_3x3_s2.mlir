// A depthwise 3x3 / 2 conv (8 groups of one channel): in `exact` mode its four stride phases
// have four sub-kernel shapes (2x2, 2x1, 1x2, 1x1) and stay four convs, each still depthwise;
// with merge-phases=pad-kernel the kernel is zero-extended to 4x4 (16/9 of the multiply-adds,
// within max-mac-ratio 2) and the phases are ONE 2x2 conv over 4 channels per group.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv' | FileCheck %s --check-prefix=EXACT
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{merge-phases=pad-kernel}' | FileCheck %s --check-prefix=PADK

// EXACT-LABEL: func.func @main
// EXACT-COUNT-4: stablehlo.convolution{{.*}}feature_group_count = 8 : i64
// EXACT:       %[[SUM:.+]] = stablehlo.add
// EXACT-NEXT:  return %[[SUM]]
// PADK-LABEL:  func.func @main
// PADK:        %[[W:.+]] = stablehlo.pad %arg1, %{{.+}}, low = [0, 0, 0, 0], high = [1, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<3x3x1x8xf32>, tensor<f32>) -> tensor<4x4x1x8xf32>
// PADK:        stablehlo.transpose {{.*}} -> tensor<1x9x9x8x2x2x1xf32>
// PADK:        %[[C:.+]] = stablehlo.convolution({{.*}}feature_group_count = 8 : i64} : (tensor<1x9x9x32xf32>, tensor<2x2x4x8xf32>) -> tensor<1x8x8x8xf32>
// PADK-NEXT:   return %[[C]]
// PADK-NOT:    stablehlo.add
func.func @main(%x: tensor<1x16x16x8xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 8 : i64} : (tensor<1x16x16x8xf32>, tensor<3x3x1x8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}
