// min-transposes: 3: NCHW input, OIHW weights and NCHW result each need one move for TOSA's NHWC/OHWI conv
func.func @main(%arg0: !migraphx.shaped<1x16x4x4xf32, 256x16x4x1>, %arg1: !migraphx.shaped<2x16x3x3xf32, 144x9x3x1>) -> (!migraphx.shaped<1x2x2x2xf32, 8x4x2x1>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x16x4x4xf32, 256x16x4x1>, <2x16x3x3xf32, 144x9x3x1> -> <1x2x2x2xf32, 8x4x2x1>
    %1 = migraphx.exp %0 : <1x2x2x2xf32, 8x4x2x1> -> <1x2x2x2xf32, 8x4x2x1>
    return %1 : !migraphx.shaped<1x2x2x2xf32, 8x4x2x1>
}
