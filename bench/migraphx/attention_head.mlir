// min-transposes: 1: tosa.matmul needs K^T as [B, D, S] and K is stored [B, S, D]
func.func @main(%arg0: !migraphx.shaped<2x6x4xf32, 24x4x1>, %arg1: !migraphx.shaped<2x6x4xf32, 24x4x1>, %arg2: !migraphx.shaped<2x6x4xf32, 24x4x1>) -> (!migraphx.shaped<2x6x4xf32, 24x4x1>) {
    %0 = migraphx.transpose %arg1 {permutation = [0, 2, 1]} : <2x6x4xf32, 24x4x1> -> <2x4x6xf32, 24x6x1>
    %1 = migraphx.dot %arg0, %0 : <2x6x4xf32, 24x4x1>, <2x4x6xf32, 24x6x1> -> <2x6x6xf32, 36x6x1>
    %2 = migraphx.literal(dense<0.5> : tensor<1xf32>) : <1x1x1xf32, 1x1x1>
    %3 = migraphx.multibroadcast %2 {out_lens = [2, 6, 6]} : <1x1x1xf32, 1x1x1> -> <2x6x6xf32, 0x0x0>
    %4 = migraphx.mul %1, %3 : <2x6x6xf32, 36x6x1>, <2x6x6xf32, 0x0x0> -> <2x6x6xf32, 36x6x1>
    %5 = migraphx.softmax %4 {axis = 2 : i64} : <2x6x6xf32, 36x6x1> -> <2x6x6xf32, 36x6x1>
    %6 = migraphx.dot %5, %arg2 : <2x6x6xf32, 36x6x1>, <2x6x4xf32, 24x4x1> -> <2x6x4xf32, 24x4x1>
    return %6 : !migraphx.shaped<2x6x4xf32, 24x4x1>
}
