// Broadcasts stay implicit where the consumer broadcasts: the multibroadcast of a 1x1 literal and
// of a 3-vector become 1x1 and 1x3 operands of tosa.maximum/minimum, never a tosa.tile.
// RUN: convcanon-opt %s --migraphx-to-tosa | FileCheck %s

// CHECK:      %[[LO:.+]] = "tosa.const"() <{values = dense<-1.000000e+00> : tensor<1x1xf32>}>
// CHECK:      %[[HI:.+]] = "tosa.reshape"(%{{.+}}, %{{.+}}) : (tensor<3xf32>, !tosa.shape<2>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[MAX:.+]] = "tosa.maximum"(%{{.+}}, %[[LO]]) : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: "tosa.minimum"(%[[MAX]], %[[HI]]) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NOT:  tosa.tile

func.func @main(%arg0: !migraphx.shaped<2x3xi1, 3x1>, %arg1: !migraphx.shaped<2x3xf32, 1x2>, %arg2: !migraphx.shaped<3xf32, 1>) -> (!migraphx.shaped<2x3xf32, 1x2>) {
    %0 = migraphx.literal(dense<[[1.5, -2.5, 3.5], [-0.5, 2.0, -7.25]]> : tensor<2x3xf32>) : <2x3xf32, 3x1>
    %1 = migraphx.mul %arg1, %0 : <2x3xf32, 1x2>, <2x3xf32, 3x1> -> <2x3xf32, 3x1>
    %2 = migraphx.convert %1 : <2x3xf32, 3x1> to <2x3xi32, 3x1>
    %3 = migraphx.convert %2 : <2x3xi32, 3x1> to <2x3xf32, 3x1>
    %4 = migraphx.literal(dense<-1.0> : tensor<1xf32>) : <1x1xf32, 1x1>
    %5 = migraphx.multibroadcast %4 {out_lens = [2, 3]} : <1x1xf32, 1x1> -> <2x3xf32, 0x0>
    %6 = migraphx.multibroadcast %arg2 {out_lens = [2, 3]} : <3xf32, 1> -> <2x3xf32, 0x1>
    %7 = migraphx.clip %3, %5, %6 : <2x3xf32, 3x1>, <2x3xf32, 0x0>, <2x3xf32, 0x1> -> <2x3xf32, 3x1>
    %8 = migraphx.where %arg0, %7, %arg1 : <2x3xi1, 3x1>, <2x3xf32, 3x1>, <2x3xf32, 1x2> -> <2x3xf32, 1x2>
    return %8 : !migraphx.shaped<2x3xf32, 1x2>
}
