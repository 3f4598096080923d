// A conv with a dynamic batch (jax.export with a symbolic batch, torch.export with a Dim) is
// rewritten as a static one: slices of the dynamic (folded) lhs are real_dynamic_slice whose limit takes
// the batch from get_dimension_size (jax.export's own idiom), results keep their `?`. The NCHW lhs
// is folded channels-last and each phase group transposed back, through the dynamic batch too.
// (merge-phases=exact: under auto this 3-feature conv, an image stem, is one zero-extended conv.)
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{merge-phases=exact engine=xla-cpu}' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK:       %[[NHWC:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 3, 1] : (tensor<?x3x9x9xf32>) -> tensor<?x9x9x3xf32>
// CHECK-NEXT:  %[[PADDED:.+]] = stablehlo.pad %[[NHWC]], {{.*}} -> tensor<?x10x10x3xf32>
// CHECK-NEXT:  %[[N:.+]] = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3x9x9xf32>) -> tensor<i32>
// CHECK:       %[[FOLD:.+]] = stablehlo.dynamic_reshape %[[PADDED]], {{.*}} -> tensor<?x5x2x5x2x3xf32>
// CHECK:       %[[X:.+]] = stablehlo.real_dynamic_slice %[[FOLD]], {{.*}} -> tensor<?x5x1x5x1x3xf32>
// CHECK:       %[[X4:.+]] = stablehlo.dynamic_reshape %[[X]], {{.*}} -> tensor<?x5x5x3xf32>
// CHECK-NEXT:  %[[XC:.+]] = stablehlo.transpose %[[X4]], dims = [0, 3, 1, 2] : (tensor<?x5x5x3xf32>) -> tensor<?x3x5x5xf32>
// CHECK:       stablehlo.convolution(%[[XC]], {{.*}}stride = [1, 1]{{.*}} -> tensor<?x4x4x4xf32>
// CHECK-COUNT-3: stablehlo.real_dynamic_slice %[[FOLD]]
// CHECK:       %[[SUM:.+]] = stablehlo.add {{.*}} : tensor<?x4x4x4xf32>
// CHECK-NEXT:  return %[[SUM]]
// CHECK-NOT:   stablehlo.get_dimension_size
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
