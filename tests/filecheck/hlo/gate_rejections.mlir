// Every convolution the gate refuses is left unchanged, with a `verbose` remark giving the reason
// at its location. gate=neuron (default): rank 4 only, extents >= 4 unless allow-small-spatial,
// |padding| and strides <= max-window-param; both presets: static shapes, something to do, and
// at most max-phases partial convs.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{verbose=true}' -o /dev/null 2>&1 | FileCheck %s --check-prefixes=NEURON,BOTH
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{verbose=true gate=general}' -o /dev/null 2>&1 | FileCheck %s --check-prefixes=GENERAL,BOTH
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general}' | FileCheck %s --check-prefix=OUT

// NEURON: gate_rejections.mlir:[[# @LINE + 3]]:8: remark: convolution not canonicalized: lhs rank 3 is not 4
// GENERAL-NOT: lhs rank 3
func.func @rank3(%x: tensor<1x8x2xf32>, %w: tensor<3x2x4xf32>) -> tensor<1x8x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x2xf32>, tensor<3x2x4xf32>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// NEURON: gate_rejections.mlir:[[# @LINE + 2]]:8: remark: convolution not canonicalized: spatial extent 3 needs allow-small-spatial
func.func @small(%x: tensor<1x3x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32>
  return %0 : tensor<1x3x8x4xf32>
}

// NEURON: gate_rejections.mlir:[[# @LINE + 2]]:8: remark: convolution not canonicalized: padding 32 exceeds max-window-param 31
func.func @bigpad(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x70x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[32, 32], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x70x6x4xf32>
  return %0 : tensor<1x70x6x4xf32>
}

// BOTH: gate_rejections.mlir:[[# @LINE + 5]]:8: remark: convolution not canonicalized: already canonical (zero padding, unit stride, no lhs dilation)
// OUT-LABEL: func.func @canonical
// OUT-NEXT:  %[[C:.+]] = stablehlo.convolution(%arg0, %arg1)
// OUT-NEXT:  return %[[C]]
func.func @canonical(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// A dynamic batch is rewritten (dynamic_batch.mlir); a dynamic spatial extent is not.
// BOTH: gate_rejections.mlir:[[# @LINE + 4]]:8: remark: convolution not canonicalized: dynamic spatial or feature extent: lhs is tensor<1x?x8x2xf32>
// OUT-LABEL: func.func @dynamic
// OUT-NEXT:  stablehlo.convolution(%arg0, %arg1) {{.*}}stride = [2, 2], pad = {{\[\[}}1, 1], [1, 1]]
func.func @dynamic(%x: tensor<1x?x8x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x?x4x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x?x8x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x?x4x2xf32>
  return %0 : tensor<1x?x4x2xf32>
}

// Merged phases are few (at most 2 per dim), but with rhs dilation they are joined slice by
// slice: 70 x 70 one-tap phases would be 4900 slices.
// NEURON: gate_rejections.mlir:[[# @LINE + 5]]:8: remark: convolution not canonicalized: stride 97 exceeds max-window-param 31
// GENERAL: gate_rejections.mlir:[[# @LINE + 4]]:8: remark: convolution not canonicalized: needs 4900 phase slices, over the limit of 4096
// OUT-LABEL: func.func @phases
// OUT-NEXT:  stablehlo.convolution(%arg0, %arg1) {{.*}}stride = [97, 97]
func.func @phases(%x: tensor<1x139x139x1xf32>, %w: tensor<70x70x1x1xf32>) -> tensor<1x1x1x1xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [97, 97], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x139x139x1xf32>, tensor<70x70x1x1xf32>) -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}
