// dot: tosa.matmul on rank-3 operands. The broadcast batch dims of the rhs fold into the lhs's
// rows (one 24x5 by 5x6 matmul, no materialized broadcast); the result reshapes back to 2x3x4x6.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[B:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<1x1x5x6xf32>, !tosa.shape<3>) -> tensor<1x5x6xf32>
// CHECK:      %[[A:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<2x3x4x5xf32>, !tosa.shape<3>) -> tensor<1x24x5xf32>
// CHECK:      %[[M:.+]] = "tosa.matmul"(%[[A]], %[[B]], {{.*}}) : {{.*}} -> tensor<1x24x6xf32>
// CHECK-NEXT: "tosa.const_shape"() <{values = dense<[2, 3, 4, 6]> : tensor<4xindex>}>
// CHECK-NEXT: "tosa.reshape"(%[[M]], %{{.+}}) : (tensor<1x24x6xf32>, !tosa.shape<4>) -> tensor<2x3x4x6xf32>
// CHECK-NOT:  tosa.tile

func.func @main(%arg0: !migraphx.shaped<2x3x4x5xf32, 20x40x1x4>, %arg1: !migraphx.shaped<1x1x6x5xf32, 30x30x5x1>) -> (!migraphx.shaped<2x3x4x6xf32, 72x1x18x3>) {
    %0 = migraphx.transpose %arg1 {permutation = [0, 1, 3, 2]} : <1x1x6x5xf32, 30x30x5x1> -> <1x1x5x6xf32, 30x30x6x1>
    %1 = migraphx.multibroadcast %0 {out_lens = [2, 3, 5, 6]} : <1x1x5x6xf32, 30x30x6x1> -> <2x3x5x6xf32, 0x0x1x5>
    %2 = migraphx.dot %arg0, %1 : <2x3x4x5xf32, 20x40x1x4>, <2x3x5x6xf32, 0x0x1x5> -> <2x3x4x6xf32, 72x1x18x3>
    return %2 : !migraphx.shaped<2x3x4x6xf32, 72x1x18x3>
}
