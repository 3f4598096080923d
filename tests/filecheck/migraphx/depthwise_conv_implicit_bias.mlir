// Depthwise (group == input channels): tosa.depthwise_conv2d with the weights as [KH, KW, C, M];
// the bias broadcast stays implicit (a 1x1x1x6 operand of tosa.add, no tosa.tile); relu is clamp.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[W:.+]] = "tosa.reshape"(%{{.+}}) {{.*}} -> tensor<6x3x3x1xf32>
// CHECK:      %[[WT:.+]] = "tosa.transpose"(%[[W]]) <{perms = array<i32: 1, 2, 3, 0>}> : (tensor<6x3x3x1xf32>) -> tensor<3x3x1x6xf32>
// CHECK:      "tosa.reshape"(%[[WT]], %{{.+}}) {{.*}} -> tensor<3x3x3x2xf32>
// CHECK:      %[[C:.+]] = "tosa.depthwise_conv2d"({{.*}}) <{pad = array<i64: 1, 1, 1, 1>{{.*}}}> {{.*}} -> tensor<2x5x5x6xf32>
// CHECK:      %[[B:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<6xf32>, !tosa.shape<4>) -> tensor<1x1x1x6xf32>
// CHECK-NEXT: %[[S:.+]] = "tosa.add"(%[[C]], %[[B]]) : (tensor<2x5x5x6xf32>, tensor<1x1x1x6xf32>) -> tensor<2x5x5x6xf32>
// CHECK-NEXT: "tosa.clamp"(%[[S]]) <{min_val = 0.000000e+00 : f32
// CHECK-NOT:  tosa.tile

func.func @main(%arg0: !migraphx.shaped<2x3x5x5xf32, 75x1x15x3>, %arg1: !migraphx.shaped<6x1x3x3xf32, 9x1x3x1>, %arg2: !migraphx.shaped<6xf32, 1>) -> (!migraphx.shaped<2x6x5x5xf32, 150x1x30x6>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 3 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <2x3x5x5xf32, 75x1x15x3>, <6x1x3x3xf32, 9x1x3x1> -> <2x6x5x5xf32, 150x1x30x6>
    %1 = migraphx.broadcast %arg2 {axis = 1 : i64, out_lens = [2, 6, 5, 5]} : <6xf32, 1> -> <2x6x5x5xf32, 0x1x0x0>
    %2 = migraphx.add %0, %1 : <2x6x5x5xf32, 150x1x30x6>, <2x6x5x5xf32, 0x1x0x0> -> <2x6x5x5xf32, 150x1x30x6>
    %3 = migraphx.relu %2 : <2x6x5x5xf32, 150x1x30x6> -> <2x6x5x5xf32, 150x1x30x6>
    return %3 : !migraphx.shaped<2x6x5x5xf32, 150x1x30x6>
}
