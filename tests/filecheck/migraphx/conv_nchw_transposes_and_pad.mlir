// An NCHW conv: transpose [0,2,3,1] in (input and weights to NHWC/OHWI), [0,3,1,2] out. Padding
// {hb, wb, he, we} becomes TOSA's [top, bottom, left, right] = [hb, he, wb, we], and the trailing
// pad shrinks by the stride remainder: (6 - 1 + 1 + 1 - 2) % 2 == 1, so bottom 1 -> 0.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[X:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<252xf32>, !tosa.shape<4>) -> tensor<2x3x6x7xf32>
// CHECK:      %[[W:.+]] = "tosa.reshape"(%{{.+}}) : (tensor<108xf32>, !tosa.shape<4>) -> tensor<4x3x3x3xf32>
// CHECK:      %[[XT:.+]] = "tosa.transpose"(%[[X]]) <{perms = array<i32: 0, 2, 3, 1>}> : (tensor<2x3x6x7xf32>) -> tensor<2x6x7x3xf32>
// CHECK-NEXT: %[[WT:.+]] = "tosa.transpose"(%[[W]]) <{perms = array<i32: 0, 2, 3, 1>}>
// CHECK:      %[[C:.+]] = "tosa.conv2d"(%[[XT]], %[[WT]], {{.*}}) <{pad = array<i64: 1, 0, 1, 1>, stride = array<i64: 2, 2>{{.*}}}> {{.*}} -> tensor<2x3x4x4xf32>
// CHECK-NEXT: "tosa.transpose"(%[[C]]) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<2x3x4x4xf32>) -> tensor<2x4x3x4xf32>

func.func @main(%arg0: !migraphx.shaped<2x3x6x7xf32, 126x42x7x1>, %arg1: !migraphx.shaped<4x3x3x3xf32, 27x9x3x1>) -> (!migraphx.shaped<2x4x3x4xf32, 48x12x4x1>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [2, 2]} : <2x3x6x7xf32, 126x42x7x1>, <4x3x3x3xf32, 27x9x3x1> -> <2x4x3x4xf32, 48x12x4x1>
    return %0 : !migraphx.shaped<2x4x3x4xf32, 48x12x4x1>
}
