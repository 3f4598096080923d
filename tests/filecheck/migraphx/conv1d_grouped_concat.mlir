// A 1-D conv goes through a unit H dim; groups other than 1 and depthwise become one conv per
// group on channel slices, joined by tosa.concat on the channel axis.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[X:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<2x9x6xf32>, !tosa.shape<4>) -> tensor<2x1x9x6xf32>
// CHECK:      %[[X0:.+]] = "tosa.slice"(%[[X]], {{.*}}) : (tensor<2x1x9x6xf32>, {{.*}}) -> tensor<2x1x9x3xf32>
// CHECK:      %[[C0:.+]] = "tosa.conv2d"(%[[X0]], {{.*}}) <{pad = array<i64: 0, 0, 1, 1>, stride = array<i64: 1, 2>, dilation = array<i64: 1, 2>{{.*}}}> {{.*}} -> tensor<2x1x4x2xf32>
// CHECK:      %[[X1:.+]] = "tosa.slice"(%[[X]], {{.*}}) -> tensor<2x1x9x3xf32>
// CHECK:      %[[C1:.+]] = "tosa.conv2d"(%[[X1]], {{.*}}) -> tensor<2x1x4x2xf32>
// CHECK-NEXT: "tosa.concat"(%[[C0]], %[[C1]]) <{axis = 3 : i32}> : {{.*}} -> tensor<2x1x4x4xf32>

func.func @main(%arg0: !migraphx.shaped<2x6x9xf32, 54x9x1>, %arg1: !migraphx.shaped<4x3x3xf32, 9x3x1>) -> (!migraphx.shaped<2x4x4xf32, 16x4x1>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [2], group = 2 : i64, padding = [1, 2], padding_mode = 0 : i64, stride = [2]} : <2x6x9xf32, 54x9x1>, <4x3x3xf32, 9x3x1> -> <2x4x4xf32, 16x4x1>
    return %0 : !migraphx.shaped<2x4x4xf32, 16x4x1>
}
