// canonicalize-conv is the same algorithm on MHLO: pad and slice index lists are
// `dense<...> : tensor<Nxi64>` (they print in generic form) and every op stays in mhlo.
// RUN: convcanon-opt %s --canonicalize-conv='gate=general merge-phases=none engine=xla-cpu' | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK:       %[[ZERO:.+]] = mhlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  %[[PAD:.+]] = "mhlo.pad"(%arg0, %[[ZERO]]) <{edge_padding_high = dense<[0, 1, 1, 0]> : tensor<4xi64>, edge_padding_low = dense<[0, 1, 2, 0]> : tensor<4xi64>, interior_padding = dense<0> : tensor<4xi64>}>
// CHECK-NEXT:  %[[X0:.+]] = "mhlo.slice"(%[[PAD]]) <{limit_indices = dense<[1, 9, 11, 2]> : tensor<4xi64>, start_indices = dense<0> : tensor<4xi64>, strides = dense<[1, 2, 1, 1]> : tensor<4xi64>}>
// CHECK-NEXT:  %[[W0:.+]] = "mhlo.slice"(%arg1) <{limit_indices = dense<[3, 3, 2, 4]> : tensor<4xi64>, start_indices = dense<0> : tensor<4xi64>, strides = dense<[2, 1, 1, 1]> : tensor<4xi64>}>
// CHECK-NEXT:  %[[C0:.+]] = mhlo.convolution(%[[X0]], %[[W0]]) {{.*}}stride = [1, 1], pad = {{\[\[}}0, 0], [0, 0]]
// CHECK-NEXT:  %[[X1:.+]] = "mhlo.slice"(%[[PAD]]) {{.*}}start_indices = dense<[0, 1, 0, 0]>
// CHECK-NEXT:  %[[W1:.+]] = "mhlo.slice"(%arg1) {{.*}}start_indices = dense<[1, 0, 0, 0]>
// CHECK-NEXT:  %[[C1:.+]] = mhlo.convolution(%[[X1]], %[[W1]])
// CHECK-NEXT:  %[[SUM:.+]] = mhlo.add %[[C0]], %[[C1]] : tensor<1x4x9x4xf32>
// CHECK-NEXT:  return %[[SUM]]
// CHECK-NOT:   stablehlo.
func.func @main(%arg0: tensor<1x8x8x2xf32>, %arg1: tensor<3x3x2x4xf32>) -> tensor<1x4x9x4xf32> {
  %0 = mhlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 1], pad = [[1, 1], [2, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x9x4xf32>
  return %0 : tensor<1x4x9x4xf32>
}
