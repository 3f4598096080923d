// A ViT patchify conv (16x16 / 16, NCHW/OIHW as torch-mlir writes it) has 256 stride phases of
// one tap count each: they are ONE unit-stride conv over 16*16*3 input features, the input and
// the kernel folded by a reshape and a transpose (space-to-depth), accepted by the default gate.
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{engine=xla-cpu}' | FileCheck %s
// RUN: convcanon-opt %s -p 'stablehlo-canonicalize-conv{merge-phases=none engine=xla-cpu}' -o /dev/null --stats 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: func.func @main
// CHECK:       %[[X:.+]] = stablehlo.reshape %arg0 : (tensor<1x3x224x224xf32>) -> tensor<1x3x14x16x14x16xf32>
// CHECK-NEXT:  %[[W:.+]] = stablehlo.reshape %arg1 : (tensor<8x3x16x16xf32>) -> tensor<8x3x1x16x1x16xf32>
// CHECK-NEXT:  %[[XT:.+]] = stablehlo.transpose %[[X]], dims = [0, 3, 5, 1, 2, 4] : {{.*}} -> tensor<1x16x16x3x14x14xf32>
// CHECK-NEXT:  %[[XF:.+]] = stablehlo.reshape %[[XT]] : {{.*}} -> tensor<1x768x14x14xf32>
// CHECK-NEXT:  %[[WT:.+]] = stablehlo.transpose %[[W]], dims = [0, 3, 5, 1, 2, 4] : {{.*}} -> tensor<8x16x16x3x1x1xf32>
// CHECK-NEXT:  %[[WF:.+]] = stablehlo.reshape %[[WT]] : {{.*}} -> tensor<8x768x1x1xf32>
// CHECK-NEXT:  %[[C:.+]] = stablehlo.convolution(%[[XF]], %[[WF]]) {{.*}}window = {stride = [1, 1]{{.*}} -> tensor<1x8x14x14xf32>
// CHECK-NEXT:  return %[[C]]
// CHECK-NOT:   stablehlo.slice
// NONE:        skipped: needs 256 partial convs, over max-phases 64
func.func @main(%x: tensor<1x3x224x224xf32>, %w: tensor<8x3x16x16xf32>) -> tensor<1x8x14x14xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [16, 16]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x224x224xf32>, tensor<8x3x16x16xf32>) -> tensor<1x8x14x14xf32>
  return %0 : tensor<1x8x14x14xf32>
}
