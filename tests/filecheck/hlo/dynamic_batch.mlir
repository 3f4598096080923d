// A conv with a dynamic batch (jax.export with a symbolic batch, torch.export with a Dim) is
// rewritten as a static one: slices of the dynamic lhs are real_dynamic_slice whose limit takes
// the batch from get_dimension_size (jax.export's own idiom), results keep their `?`.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-DAG:   %[[START:.+]] = stablehlo.constant dense<0> : tensor<4xi64>
// CHECK-DAG:   %[[N:.+]] = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3x9x9xf32>) -> tensor<i32>
// CHECK:       %[[N64:.+]] = stablehlo.convert %[[N]] : (tensor<i32>) -> tensor<i64>
// CHECK-NEXT:  %[[N1:.+]] = stablehlo.reshape %[[N64]] : (tensor<i64>) -> tensor<1xi64>
// CHECK-NEXT:  %[[REST:.+]] = stablehlo.constant dense<[3, 9, 9]> : tensor<3xi64>
// CHECK-NEXT:  %[[LIMIT:.+]] = stablehlo.concatenate %[[N1]], %[[REST]], dim = 0
// CHECK-NEXT:  %[[STEP:.+]] = stablehlo.constant dense<[1, 1, 2, 2]> : tensor<4xi64>
// CHECK-NEXT:  %[[X:.+]] = stablehlo.real_dynamic_slice %arg0, %[[START]], %[[LIMIT]], %[[STEP]] : {{.*}} -> tensor<?x3x5x5xf32>
// CHECK-NEXT:  %[[W:.+]] = stablehlo.slice %arg1 [0:4, 0:3, 0:3:2, 0:3:2]
// CHECK-NEXT:  stablehlo.convolution(%[[X]], %[[W]]) {{.*}}stride = [1, 1]{{.*}} -> tensor<?x4x4x4xf32>
// CHECK-COUNT-3: stablehlo.real_dynamic_slice
// CHECK:       %[[SUM:.+]] = stablehlo.add {{.*}} : tensor<?x4x4x4xf32>
// CHECK-NEXT:  return %[[SUM]]
func.func @main(%x: tensor<?x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x4x4x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<?x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x4x4xf32>
  return %0 : tensor<?x4x4x4xf32>
}

// A 2x2/2 ConvTranspose on a dynamic batch: one conv, put in place by a dynamic_reshape.
// CHECK-LABEL: func.func @transposed
// CHECK:       stablehlo.convolution({{.*}} -> tensor<?x8x8x24xf32>
// CHECK:       stablehlo.dynamic_reshape {{.*}} -> tensor<?x8x8x2x2x6xf32>
// CHECK:       stablehlo.transpose {{.*}} -> tensor<?x8x2x8x2x6xf32>
// CHECK:       %[[OUT:.+]] = stablehlo.dynamic_reshape {{.*}} -> tensor<?x16x16x6xf32>
// CHECK-NEXT:  return %[[OUT]]
func.func @transposed(%x: tensor<?x8x8x4xf32>, %w: tensor<2x2x4x6xf32>) -> tensor<?x16x16x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<?x8x8x4xf32>, tensor<2x2x4x6xf32>) -> tensor<?x16x16x6xf32>
  return %0 : tensor<?x16x16x6xf32>
}
