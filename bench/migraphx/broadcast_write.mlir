// min-transposes: 0 (512 broadcast bytes: the 8x16 f32 result must be written in full; exp runs on 16 values)
func.func @main(%arg0: !migraphx.shaped<16xf32, 1>) -> (!migraphx.shaped<8x16xf32, 16x1>) {
    %0 = migraphx.multibroadcast %arg0 {out_lens = [8, 16]} : <16xf32, 1> -> <8x16xf32, 0x1>
    %1 = migraphx.exp %0 : <8x16xf32, 0x1> -> <8x16xf32, 16x1>
    return %1 : !migraphx.shaped<8x16xf32, 16x1>
}
