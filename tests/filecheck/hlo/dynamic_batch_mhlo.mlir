// canonicalize-conv on MHLO with a dynamic batch: the same ops in mhlo (real_dynamic_slice,
// get_dimension_size, dynamic_reshape), every op of the rewrite staying in mhlo.
// RUN: convcanon-opt %s --canonicalize-conv='merge-phases=exact' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK:       mhlo.get_dimension_size
// CHECK:       mhlo.real_dynamic_slice
// CHECK:       mhlo.convolution({{.*}} -> tensor<?x4x4x4xf32>
// CHECK-COUNT-3: mhlo.real_dynamic_slice
// CHECK:       mhlo.add
// CHECK-LABEL: func.func @transposed
// CHECK:       mhlo.dynamic_reshape
// CHECK:       mhlo.transpose
// CHECK:       mhlo.dynamic_reshape
// CHECK-NOT:   stablehlo.
func.func @main(%x: tensor<?x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x4x4xf32> {
  %0 = mhlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<?x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x4x4xf32>
  return %0 : tensor<?x4x4x4xf32>
}

func.func @transposed(%x: tensor<?x8x8x4xf32>, %w: tensor<2x2x4x6xf32>) -> tensor<?x16x16x6xf32> {
  %0 = mhlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<?x8x8x4xf32>, tensor<2x2x4x6xf32>) -> tensor<?x16x16x6xf32>
  return %0 : tensor<?x16x16x6xf32>
}
