// The pass's diagnostics, checked by --verify-diagnostics as mlir-opt checks its own: the gate's
// remarks at each conv it leaves (verbose=true), the dialect mismatch and a verifier error, each
// where the `expected-*` comment puts it. A chunk that fails as expected prints nothing; the
// others print their module.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{verbose=true}' --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @rank3
// CHECK-NEXT: stablehlo.convolution
func.func @rank3(%x: tensor<1x8x2xf32>, %w: tensor<3x2x4xf32>) -> tensor<1x8x4xf32> {
  // expected-remark @below {{convolution not canonicalized: lhs rank 3 is not 4}}
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x2xf32>, tensor<3x2x4xf32>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @canonical
func.func @canonical(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  // expected-remark @above {{already canonical}}
  return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK-LABEL: func.func @small
func.func @small(%x: tensor<1x3x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32>
  // expected-remark-re @-1 {{spatial extent {{[0-9]+}} needs allow-small-spatial}}
  return %0 : tensor<1x3x8x4xf32>
}

// -----

// CHECK-NOT: @mhlo_conv
func.func @mhlo_conv(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32> {
  // expected-error @+1 {{found no stablehlo.convolution but 1 mhlo.convolution op: use canonicalize-conv for mhlo modules}}
  %0 = mhlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK-NOT: @mismatch
func.func @mismatch(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32> // expected-error {{requires the same shape for all operands and results}}
  return %a : tensor<4xf32>
}

// -----

// A stride-2 conv the default gate takes: rewritten, and nothing to say.
// CHECK-LABEL: func.func @strided
// CHECK: stablehlo.pad
// CHECK-NOT: stride = [2, 2]
func.func @strided(%x: tensor<1x8x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
