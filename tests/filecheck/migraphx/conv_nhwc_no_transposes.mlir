// An NHWC input and OHWI-stored weights feeding a conv whose NHWC result is returned: TOSA's
// layouts already, so the lowering emits no transpose at all (rocMLIR emits six here).
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      func.func @main(%[[X:.+]]: tensor<256xf32>, %[[W:.+]]: tensor<288xf32>) -> tensor<8xf32>
// CHECK-NOT:  tosa.transpose
// CHECK:      %[[XN:.+]] = "tosa.reshape"(%[[X]], %{{.+}}) : (tensor<256xf32>, !tosa.shape<4>) -> tensor<1x4x4x16xf32>
// CHECK:      %[[WN:.+]] = "tosa.reshape"(%[[W]], %{{.+}}) : (tensor<288xf32>, !tosa.shape<4>) -> tensor<2x3x3x16xf32>
// CHECK:      %[[C:.+]] = "tosa.conv2d"(%[[XN]], %[[WN]], {{.*}}) <{pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, acc_type = f32}> {{.*}} -> tensor<1x2x2x2xf32>
// CHECK-NEXT: %[[E:.+]] = "tosa.exp"(%[[C]])
// CHECK:      "tosa.reshape"(%[[E]], %{{.+}}) : (tensor<1x2x2x2xf32>, !tosa.shape<1>) -> tensor<8xf32>
// CHECK-NOT:  tosa.transpose

func.func @main(%arg0: !migraphx.shaped<1x16x4x4xf32, 256x1x64x16>, %arg1: !migraphx.shaped<2x16x3x3xf32, 144x1x48x16>) -> (!migraphx.shaped<1x2x2x2xf32, 8x1x4x2>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x16x4x4xf32, 256x1x64x16>, <2x16x3x3xf32, 144x1x48x16> -> <1x2x2x2xf32, 8x1x4x2>
    %1 = migraphx.exp %0 : <1x2x2x2xf32, 8x1x4x2> -> <1x2x2x2xf32, 8x1x4x2>
    return %1 : !migraphx.shaped<1x2x2x2xf32, 8x1x4x2>
}
