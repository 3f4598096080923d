// min-transposes: 1: the two arguments are stored in different orders; one must move (the result takes the other's)
func.func @main(%arg0: !migraphx.shaped<2x3x4xf32, 12x4x1>, %arg1: !migraphx.shaped<2x3x4xf32, 3x1x6>) -> (!migraphx.shaped<2x3x4xf32, 3x1x6>) {
    %0 = migraphx.add %arg0, %arg1 : <2x3x4xf32, 12x4x1>, <2x3x4xf32, 3x1x6> -> <2x3x4xf32, 3x1x6>
    return %0 : !migraphx.shaped<2x3x4xf32, 3x1x6>
}
