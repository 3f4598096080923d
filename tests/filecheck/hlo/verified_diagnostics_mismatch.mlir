// Every way the diagnostics can disagree with the `expected-*` comments is an error at its place,
// as mlir-opt reports it, and the run fails with nothing written to stdout.
// RUN: not convcanon-opt %s -p 'stablehlo-canonicalize-conv{verbose=true}' --verify-diagnostics > %t.out 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: FileCheck %s --check-prefix=NOTHING --allow-empty < %t.out
// NOTHING-NOT: {{.}}

func.func @rank3(%x: tensor<1x8x2xf32>, %w: tensor<3x2x4xf32>) -> tensor<1x8x4xf32> {
  // CHECK-DAG: verified_diagnostics_mismatch.mlir:[[# @LINE + 1]]:8: error: unexpected remark: convolution not canonicalized: lhs rank 3 is not 4
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x2xf32>, tensor<3x2x4xf32>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

func.func @small(%x: tensor<1x3x8x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32> {
  // CHECK-DAG: verified_diagnostics_mismatch.mlir:[[# @LINE + 1]]:6: error: 'remark' diagnostic emitted when expecting a 'warning'
  // expected-warning @+1 {{needs allow-small-spatial}}
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x3x8x4xf32>
  return %0 : tensor<1x3x8x4xf32>
}

// CHECK-DAG: verified_diagnostics_mismatch.mlir:[[# @LINE + 1]]:4: error: expected error "never said" was not produced
// expected-error @unknown {{never said}}
// CHECK-DAG: verified_diagnostics_mismatch.mlir:[[# @LINE + 1]]:4: error: invalid regex:
// expected-error-re {{a {{(}} b}}
