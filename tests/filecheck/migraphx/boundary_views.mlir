// Boundary views: arguments and results are flat memory. Reading a long-stride view reshapes to
// the memory layout, slices off the gaps and transposes to logical order; writing a result with
// gaps pads them with zeros before the flat reshape.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      func.func @main(%[[ARG:.+]]: tensor<30xf32>) -> tensor<22xf32>
// CHECK:      %[[MEM:.+]] = "tosa.reshape"(%[[ARG]], %{{.+}}) : (tensor<30xf32>, !tosa.shape<2>) -> tensor<6x5xf32>
// CHECK:      %[[GAP:.+]] = "tosa.slice"(%[[MEM]], {{.*}}) : (tensor<6x5xf32>, {{.*}}) -> tensor<6x4xf32>
// CHECK:      "tosa.slice"(%[[GAP]], {{.*}}) -> tensor<4x4xf32>
// CHECK:      "tosa.transpose"({{.*}}) <{perms = array<i32: 1, 0>}>
// CHECK:      %[[OUT:.+]] = "tosa.pad"({{.*}}) : (tensor<2x8xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<2x11xf32>
// CHECK:      "tosa.reshape"(%[[OUT]], %{{.+}}) : (tensor<2x11xf32>, !tosa.shape<1>) -> tensor<22xf32>

func.func @main(%arg0: !migraphx.shaped<4x6xf32, 1x5>) -> (!migraphx.shaped<2x8xf32, 11x1>) {
    %0 = migraphx.slice %arg0 {axes = [1], ends = [-1], starts = [1]} : <4x6xf32, 1x5> -> <4x4xf32, 4x1>
    %1 = migraphx.reshape %0 {dims = [2, 8]} : <4x4xf32, 4x1> -> <2x8xf32, 8x1>
    %2 = migraphx.sqrt %1 : <2x8xf32, 8x1> -> <2x8xf32, 11x1>
    return %2 : !migraphx.shaped<2x8xf32, 11x1>
}
