// min-transposes: 0: all values row-major; every broadcast is consumed by an elementwise op
func.func @main(%arg0: !migraphx.shaped<4x16xf32, 16x1>, %arg1: !migraphx.shaped<16xf32, 1>, %arg2: !migraphx.shaped<16xf32, 1>) -> (!migraphx.shaped<4x16xf32, 16x1>) {
    %0 = migraphx.reduce_mean %arg0 {axes = [1]} : <4x16xf32, 16x1> -> <4x1xf32, 1x1>
    %1 = migraphx.multibroadcast %0 {out_lens = [4, 16]} : <4x1xf32, 1x1> -> <4x16xf32, 1x0>
    %2 = migraphx.sub %arg0, %1 : <4x16xf32, 16x1>, <4x16xf32, 1x0> -> <4x16xf32, 16x1>
    %3 = migraphx.mul %2, %2 : <4x16xf32, 16x1>, <4x16xf32, 16x1> -> <4x16xf32, 16x1>
    %4 = migraphx.reduce_mean %3 {axes = [1]} : <4x16xf32, 16x1> -> <4x1xf32, 1x1>
    %5 = migraphx.literal(dense<1.0e-05> : tensor<1xf32>) : <1x1xf32, 1x1>
    %6 = migraphx.add %4, %5 : <4x1xf32, 1x1>, <1x1xf32, 1x1> -> <4x1xf32, 1x1>
    %7 = migraphx.rsqrt %6 : <4x1xf32, 1x1> -> <4x1xf32, 1x1>
    %8 = migraphx.multibroadcast %7 {out_lens = [4, 16]} : <4x1xf32, 1x1> -> <4x16xf32, 1x0>
    %9 = migraphx.mul %2, %8 : <4x16xf32, 16x1>, <4x16xf32, 1x0> -> <4x16xf32, 16x1>
    %10 = migraphx.multibroadcast %arg1 {out_lens = [4, 16]} : <16xf32, 1> -> <4x16xf32, 0x1>
    %11 = migraphx.multibroadcast %arg2 {out_lens = [4, 16]} : <16xf32, 1> -> <4x16xf32, 0x1>
    %12 = migraphx.mul %9, %10 : <4x16xf32, 16x1>, <4x16xf32, 0x1> -> <4x16xf32, 16x1>
    %13 = migraphx.add %12, %11 : <4x16xf32, 16x1>, <4x16xf32, 0x1> -> <4x16xf32, 16x1>
    return %13 : !migraphx.shaped<4x16xf32, 16x1>
}
