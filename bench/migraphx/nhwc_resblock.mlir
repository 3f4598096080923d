// min-transposes: 0: every value is NHWC, the convs' own layout
func.func @main(%arg0: !migraphx.shaped<1x8x8x8xf32, 512x1x64x8>, %arg1: !migraphx.shaped<8x8x3x3xf32, 72x1x24x8>, %arg2: !migraphx.shaped<8xf32, 1>, %arg3: !migraphx.shaped<8x8x3x3xf32, 72x1x24x8>, %arg4: !migraphx.shaped<8xf32, 1>) -> (!migraphx.shaped<1x8x8x8xf32, 512x1x64x8>) {
    %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x8x8x8xf32, 512x1x64x8>, <8x8x3x3xf32, 72x1x24x8> -> <1x8x8x8xf32, 512x1x64x8>
    %1 = migraphx.broadcast %arg2 {axis = 1 : i64, out_lens = [1, 8, 8, 8]} : <8xf32, 1> -> <1x8x8x8xf32, 0x1x0x0>
    %2 = migraphx.add %0, %1 : <1x8x8x8xf32, 512x1x64x8>, <1x8x8x8xf32, 0x1x0x0> -> <1x8x8x8xf32, 512x1x64x8>
    %3 = migraphx.relu %2 : <1x8x8x8xf32, 512x1x64x8> -> <1x8x8x8xf32, 512x1x64x8>
    %4 = migraphx.convolution %3, %arg3 {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x8x8x8xf32, 512x1x64x8>, <8x8x3x3xf32, 72x1x24x8> -> <1x8x8x8xf32, 512x1x64x8>
    %5 = migraphx.broadcast %arg4 {axis = 1 : i64, out_lens = [1, 8, 8, 8]} : <8xf32, 1> -> <1x8x8x8xf32, 0x1x0x0>
    %6 = migraphx.add %4, %5 : <1x8x8x8xf32, 512x1x64x8>, <1x8x8x8xf32, 0x1x0x0> -> <1x8x8x8xf32, 512x1x64x8>
    %7 = migraphx.add %6, %arg0 : <1x8x8x8xf32, 512x1x64x8>, <1x8x8x8xf32, 512x1x64x8> -> <1x8x8x8xf32, 512x1x64x8>
    %8 = migraphx.relu %7 : <1x8x8x8xf32, 512x1x64x8> -> <1x8x8x8xf32, 512x1x64x8>
    return %8 : !migraphx.shaped<1x8x8x8xf32, 512x1x64x8>
}
