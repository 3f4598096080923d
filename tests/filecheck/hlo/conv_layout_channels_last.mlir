// conv-layout=channels-last: an NCHW/OIHW conv (as torch-mlir exports it) computes NHWC/HWIO
// between transposes, so its explicit pad sits right before the conv; a conv already
// channels-last gets no transpose.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{gate=general conv-layout=channels-last}' | FileCheck %s

// CHECK-LABEL: func.func @nchw
// CHECK:       %[[X:.+]] = stablehlo.transpose %arg0, dims = [0, 2, 3, 1] : (tensor<1x4x9x9xf32>) -> tensor<1x9x9x4xf32>
// CHECK-NEXT:  %[[W:.+]] = stablehlo.transpose %arg1, dims = [2, 3, 1, 0] : (tensor<6x4x3x3xf32>) -> tensor<3x3x4x6xf32>
// CHECK-NEXT:  %[[P:.+]] = stablehlo.pad %[[X]], %{{.+}}, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0]
// CHECK-NEXT:  %[[Y:.+]] = stablehlo.convolution(%[[P]], %[[W]]) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = {{\[\[}}0, 0], [0, 0]]}{{.*}} -> tensor<1x9x9x6xf32>
// CHECK-NEXT:  %[[OUT:.+]] = stablehlo.transpose %[[Y]], dims = [0, 3, 1, 2] : (tensor<1x9x9x6xf32>) -> tensor<1x6x9x9xf32>
// CHECK-NEXT:  return %[[OUT]]
func.func @nchw(%x: tensor<1x4x9x9xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x9x9xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x9x9xf32>
  return %0 : tensor<1x6x9x9xf32>
}

// CHECK-LABEL: func.func @nhwc
// CHECK-NOT:   stablehlo.transpose
// CHECK:       stablehlo.convolution
// CHECK-NOT:   stablehlo.transpose
// CHECK:       return
func.func @nhwc(%x: tensor<1x9x9x4xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<1x9x9x6xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x9x9x6xf32>
  return %0 : tensor<1x9x9x6xf32>
}
