module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<7x7x3x8xf32>, %arg2: tensor<16xf32>, %arg3: tensor<3x3x8x16xf32>, %arg4: tensor<16xf32>, %arg5: tensor<3x3x16x16xf32>, %arg6: tensor<16xf32>, %arg7: tensor<3x3x16x16xf32>, %arg8: tensor<16xf32>, %arg9: tensor<1x1x8x16xf32>, %arg10: tensor<16xf32>, %arg11: tensor<3x3x4x16xf32>, %arg12: tensor<10xf32>, %arg13: tensor<16x10xf32>, %arg14: tensor<1x32x32x3xf32>) -> (tensor<1x10xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg14, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[3, 3], [3, 3]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x32x32x3xf32>, tensor<7x7x3x8xf32>) -> tensor<1x16x16x8xf32>
    %1 = stablehlo.reshape %arg0 : (tensor<8xf32>) -> tensor<1x1x1x8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x1x8xf32>) -> tensor<1x16x16x8xf32>
    %3 = stablehlo.add %0, %2 : tensor<1x16x16x8xf32>
    %4 = call @relu(%3) : (tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
    %5 = stablehlo.convolution(%4, %arg3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x16x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x8x8x16xf32>
    %6 = stablehlo.reshape %arg2 : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
    %8 = stablehlo.add %5, %7 : tensor<1x8x8x16xf32>
    %9 = call @relu_0(%8) : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
    %10 = stablehlo.convolution(%9, %arg5) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x8x8x16xf32>
    %11 = stablehlo.reshape %arg4 : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
    %13 = stablehlo.add %10, %12 : tensor<1x8x8x16xf32>
    %14 = stablehlo.convolution(%13, %arg7) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x8x8x16xf32>
    %15 = stablehlo.reshape %arg6 : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
    %17 = stablehlo.add %14, %16 : tensor<1x8x8x16xf32>
    %18 = stablehlo.convolution(%4, %arg9) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x16x16x8xf32>, tensor<1x1x8x16xf32>) -> tensor<1x8x8x16xf32>
    %19 = stablehlo.reshape %arg8 : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
    %21 = stablehlo.add %18, %20 : tensor<1x8x8x16xf32>
    %22 = stablehlo.add %17, %21 : tensor<1x8x8x16xf32>
    %23 = call @relu_0(%22) : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
    %24 = stablehlo.convolution(%23, %arg11) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 0], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x16xf32>, tensor<3x3x4x16xf32>) -> tensor<1x4x4x16xf32>
    %25 = stablehlo.reshape %arg10 : (tensor<16xf32>) -> tensor<1x1x1x16xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1, 2, 3] : (tensor<1x1x1x16xf32>) -> tensor<1x4x4x16xf32>
    %27 = stablehlo.add %24, %26 : tensor<1x4x4x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.reduce(%27 init: %cst) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x4x4x16xf32>, tensor<f32>) -> tensor<1x16xf32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x16xf32>
    %30 = stablehlo.divide %28, %29 : tensor<1x16xf32>
    %31 = stablehlo.dot_general %30, %arg13, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32>
    %32 = stablehlo.reshape %arg12 : (tensor<10xf32>) -> tensor<1x10xf32>
    %33 = stablehlo.add %31, %32 : tensor<1x10xf32>
    return %33 : tensor<1x10xf32>
  }
  func.func private @relu(%arg0: tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x16x16x8xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x16x16x8xf32>
    return %1 : tensor<1x16x16x8xf32>
  }
  func.func private @relu_0(%arg0: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x8x8x16xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x8x8x16xf32>
    return %1 : tensor<1x8x8x16xf32>
  }
}
