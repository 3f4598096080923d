// min-transposes: 0: NHWC input, OHWI-stored weights and NHWC result are what tosa.conv2d reads and writes
func.func @main(%arg0: !migraphx.shaped<1x16x4x4xf32, 256x1x64x16>, %arg1: !migraphx.shaped<2x16x3x3xf32, 144x1x48x16>) -> (!migraphx.shaped<1x2x2x2xf32, 8x1x4x2>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x16x4x4xf32, 256x1x64x16>, <2x16x3x3xf32, 144x1x48x16> -> <1x2x2x2xf32, 8x1x4x2>
    %1 = migraphx.exp %0 : <1x2x2x2xf32, 8x1x4x2> -> <1x2x2x2xf32, 8x1x4x2>
    return %1 : !migraphx.shaped<1x2x2x2xf32, 8x1x4x2>
}
