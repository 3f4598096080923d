// A depthwise 3x3 / 2 conv (8 groups of one channel). By default (engine=xla-cpu) each tap is
// one 1x1 depthwise conv on a strided slice of the padded input, summed: XLA CPU fuses those
// scales into one loop, where its depthwise conv kernel is slow. Under engine=iree-cpu the four
// stride phases stay convs (2x2, and the 2x1, 1x2 line phases split into 1x1 taps, and 1x1),
// each still depthwise. With merge-phases=pad-kernel the kernel is zero-extended to 4x4 (16/9
// of the multiply-adds, within max-mac-ratio 2) and the phases are ONE 2x2 conv over 4
// channels per group.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv' | FileCheck %s --check-prefix=TAPS
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{engine=iree-cpu}' | FileCheck %s --check-prefix=IREE
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{merge-phases=pad-kernel}' | FileCheck %s --check-prefix=PADK

// TAPS-LABEL:   func.func @main
// TAPS:         %[[P:.+]] = stablehlo.pad %arg0
// TAPS-COUNT-9: stablehlo.convolution{{.*}}feature_group_count = 8 : i64{{.*}}(tensor<1x8x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x8x8x8xf32>
// TAPS-NOT:     stablehlo.convolution
// TAPS:         %[[SUM:.+]] = stablehlo.add
// TAPS-NEXT:    return %[[SUM]]
// IREE-LABEL:   func.func @main
// IREE:         stablehlo.convolution{{.*}}feature_group_count = 8 : i64{{.*}}(tensor<1x9x9x8xf32>, tensor<2x2x1x8xf32>) -> tensor<1x8x8x8xf32>
// IREE-COUNT-5: stablehlo.convolution{{.*}}feature_group_count = 8 : i64{{.*}}(tensor<1x8x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x8x8x8xf32>
// IREE-NOT:     stablehlo.convolution
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
