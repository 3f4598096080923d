// softmax = exp(x - max) * 1/sum(exp(x - max)) along the axis, computed in the input's memory
// layout (after slicing its gaps); the result is transposed to the output layout and padded.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[X:.+]] = "tosa.slice"({{.*}}) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[MAX:.+]] = "tosa.reduce_max"(%[[X]]) <{axis = 2 : i32}>
// CHECK-NEXT: %[[D:.+]] = "tosa.sub"(%[[X]], %[[MAX]])
// CHECK-NEXT: %[[E:.+]] = "tosa.exp"(%[[D]])
// CHECK-NEXT: %[[S:.+]] = "tosa.reduce_sum"(%[[E]]) <{axis = 2 : i32}>
// CHECK-NEXT: %[[R:.+]] = "tosa.reciprocal"(%[[S]])
// CHECK:      "tosa.mul"(%[[E]], %[[R]], %{{.+}})
// CHECK:      "tosa.pad"({{.*}}) -> tensor<2x5x5xf32>

func.func @main(%arg0: !migraphx.shaped<2x3x4xf32, 4x1x8>) -> (!migraphx.shaped<2x3x4xf32, 25x5x1>) {
    %0 = migraphx.softmax %arg0 {axis = 1 : i64} : <2x3x4xf32, 4x1x8> -> <2x3x4xf32, 25x5x1>
    return %0 : !migraphx.shaped<2x3x4xf32, 25x5x1>
}
