// Negative padding crops. negative-padding=pad (default) emits one pad with negative amounts;
// negative-padding=slice pads the positive parts and slices off the negative ones.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general}' | FileCheck %s --check-prefix=PAD
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general negative-padding=slice}' | FileCheck %s --check-prefix=SLICE

// PAD:       %[[P:.+]] = stablehlo.pad %arg0, %{{.+}}, low = [0, 2, -1, 0], high = [0, -1, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x8x8x2xf32>, tensor<f32>) -> tensor<1x9x8x2xf32>
// PAD-NOT:   stablehlo.slice
// PAD:       stablehlo.convolution(%[[P]], %arg1) {{.*}} pad = {{\[\[}}0, 0], [0, 0]]}

// SLICE:     %[[P:.+]] = stablehlo.pad %arg0, %{{.+}}, low = [0, 2, 0, 0], high = [0, 0, 1, 0], interior = [0, 0, 0, 0] : (tensor<1x8x8x2xf32>, tensor<f32>) -> tensor<1x10x9x2xf32>
// SLICE-NEXT: %[[S:.+]] = stablehlo.slice %[[P]] [0:1, 0:9, 1:9, 0:2] : (tensor<1x10x9x2xf32>) -> tensor<1x9x8x2xf32>
// SLICE-NEXT: stablehlo.convolution(%[[S]], %arg1) {{.*}} pad = {{\[\[}}0, 0], [0, 0]]} {{.*}} -> tensor<1x7x6x4xf32>
func.func @main(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x7x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, -1], [-1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x7x6x4xf32>
  return %0 : tensor<1x7x6x4xf32>
}
