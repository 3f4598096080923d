// Reductions over any set of axes: one tosa.reduce_* per axis (on the memory layout of a
// broadcast input, whose stride-0 dim is length 1 in memory); mean is sum times 1/count. A result
// that must hold a broadcast dim in memory is materialized with tosa.tile.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[X:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<20xf32>, !tosa.shape<3>) -> tensor<1x5x4xf32>
// CHECK-NEXT: %[[SUM:.+]] = "tosa.reduce_sum"(%[[X]]) <{axis = 1 : i32}> : (tensor<1x5x4xf32>) -> tensor<1x1x4xf32>
// CHECK-NEXT: %[[THREE:.+]] = "tosa.const"() <{values = dense<3.000000e+00> : tensor<1x1x1xf32>}>
// CHECK:      "tosa.mul"(%[[SUM]], %[[THREE]], %{{.+}})
// CHECK:      %[[PART:.+]] = "tosa.reduce_sum"(%[[X]]) <{axis = 2 : i32}>
// CHECK-NEXT: "tosa.const"() <{values = dense<2.500000e-01> : tensor<1x1x1xf32>}>
// CHECK:      "tosa.reduce_max"(%[[X]]) <{axis = 2 : i32}> : (tensor<1x5x4xf32>) -> tensor<1x5x1xf32>
// CHECK:      "tosa.tile"({{.*}}) : (tensor<1x1x5xf32>, !tosa.shape<3>) -> tensor<3x1x5xf32>

func.func @main(%arg0: !migraphx.shaped<3x4x5xf32, 0x1x4>) -> (!migraphx.shaped<1x4x1xf32, 4x1x1>, !migraphx.shaped<3x1x5xf32, 5x5x1>, !migraphx.shaped<1x1x5xf32, 5x5x1>) {
    %0 = migraphx.reduce_sum %arg0 {axes = [0, 2]} : <3x4x5xf32, 0x1x4> -> <1x4x1xf32, 4x1x1>
    %1 = migraphx.reduce_mean %arg0 {axes = [1]} : <3x4x5xf32, 0x1x4> -> <3x1x5xf32, 5x5x1>
    %2 = migraphx.reduce_max %arg0 {axes = [0, 1]} : <3x4x5xf32, 0x1x4> -> <1x1x5xf32, 5x5x1>
    return %0, %1, %2 : !migraphx.shaped<1x4x1xf32, 4x1x1>, !migraphx.shaped<3x1x5xf32, 5x5x1>, !migraphx.shaped<1x1x5xf32, 5x5x1>
}
