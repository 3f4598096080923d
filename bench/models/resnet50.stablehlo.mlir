module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64xf32>, %arg4: tensor<64xf32>, %arg5: tensor<64xf32>, %arg6: tensor<256xf32>, %arg7: tensor<256xf32>, %arg8: tensor<256xf32>, %arg9: tensor<256xf32>, %arg10: tensor<64xf32>, %arg11: tensor<64xf32>, %arg12: tensor<64xf32>, %arg13: tensor<64xf32>, %arg14: tensor<256xf32>, %arg15: tensor<256xf32>, %arg16: tensor<256xf32>, %arg17: tensor<256xf32>, %arg18: tensor<256xf32>, %arg19: tensor<256xf32>, %arg20: tensor<1024xf32>, %arg21: tensor<1024xf32>, %arg22: tensor<256xf32>, %arg23: tensor<256xf32>, %arg24: tensor<256xf32>, %arg25: tensor<256xf32>, %arg26: tensor<1024xf32>, %arg27: tensor<1024xf32>, %arg28: tensor<256xf32>, %arg29: tensor<256xf32>, %arg30: tensor<256xf32>, %arg31: tensor<256xf32>, %arg32: tensor<1024xf32>, %arg33: tensor<1024xf32>, %arg34: tensor<512xf32>, %arg35: tensor<512xf32>, %arg36: tensor<512xf32>, %arg37: tensor<512xf32>, %arg38: tensor<2048xf32>, %arg39: tensor<2048xf32>, %arg40: tensor<2048xf32>, %arg41: tensor<2048xf32>, %arg42: tensor<512xf32>, %arg43: tensor<512xf32>, %arg44: tensor<512xf32>, %arg45: tensor<512xf32>, %arg46: tensor<2048xf32>, %arg47: tensor<2048xf32>, %arg48: tensor<512xf32>, %arg49: tensor<512xf32>, %arg50: tensor<512xf32>, %arg51: tensor<512xf32>, %arg52: tensor<2048xf32>, %arg53: tensor<2048xf32>, %arg54: tensor<64xf32>, %arg55: tensor<64xf32>, %arg56: tensor<64xf32>, %arg57: tensor<64xf32>, %arg58: tensor<256xf32>, %arg59: tensor<256xf32>, %arg60: tensor<128xf32>, %arg61: tensor<128xf32>, %arg62: tensor<128xf32>, %arg63: tensor<128xf32>, %arg64: tensor<512xf32>, %arg65: tensor<512xf32>, %arg66: tensor<512xf32>, %arg67: tensor<512xf32>, %arg68: tensor<128xf32>, %arg69: tensor<128xf32>, %arg70: tensor<128xf32>, %arg71: tensor<128xf32>, %arg72: tensor<512xf32>, %arg73: tensor<512xf32>, %arg74: tensor<128xf32>, %arg75: tensor<128xf32>, %arg76: tensor<128xf32>, %arg77: tensor<128xf32>, %arg78: tensor<512xf32>, %arg79: tensor<512xf32>, %arg80: tensor<128xf32>, %arg81: tensor<128xf32>, %arg82: tensor<128xf32>, %arg83: tensor<128xf32>, %arg84: tensor<512xf32>, %arg85: tensor<512xf32>, %arg86: tensor<256xf32>, %arg87: tensor<256xf32>, %arg88: tensor<256xf32>, %arg89: tensor<256xf32>, %arg90: tensor<1024xf32>, %arg91: tensor<1024xf32>, %arg92: tensor<1024xf32>, %arg93: tensor<1024xf32>, %arg94: tensor<256xf32>, %arg95: tensor<256xf32>, %arg96: tensor<256xf32>, %arg97: tensor<256xf32>, %arg98: tensor<1024xf32>, %arg99: tensor<1024xf32>, %arg100: tensor<256xf32>, %arg101: tensor<256xf32>, %arg102: tensor<256xf32>, %arg103: tensor<256xf32>, %arg104: tensor<1024xf32>, %arg105: tensor<1024xf32>, %arg106: tensor<64xf32>, %arg107: tensor<64xf32>, %arg108: tensor<64xf32>, %arg109: tensor<64xf32>, %arg110: tensor<64xf32>, %arg111: tensor<64xf32>, %arg112: tensor<256xf32>, %arg113: tensor<256xf32>, %arg114: tensor<256xf32>, %arg115: tensor<256xf32>, %arg116: tensor<1x1x64x64xf32>, %arg117: tensor<3x3x64x64xf32>, %arg118: tensor<1x1x64x256xf32>, %arg119: tensor<1x1x64x256xf32>, %arg120: tensor<64xf32>, %arg121: tensor<64xf32>, %arg122: tensor<64xf32>, %arg123: tensor<64xf32>, %arg124: tensor<256xf32>, %arg125: tensor<256xf32>, %arg126: tensor<1x1x256x64xf32>, %arg127: tensor<3x3x64x64xf32>, %arg128: tensor<1x1x64x256xf32>, %arg129: tensor<256xf32>, %arg130: tensor<256xf32>, %arg131: tensor<256xf32>, %arg132: tensor<256xf32>, %arg133: tensor<1024xf32>, %arg134: tensor<1024xf32>, %arg135: tensor<1x1x1024x256xf32>, %arg136: tensor<3x3x256x256xf32>, %arg137: tensor<1x1x256x1024xf32>, %arg138: tensor<256xf32>, %arg139: tensor<256xf32>, %arg140: tensor<256xf32>, %arg141: tensor<256xf32>, %arg142: tensor<1024xf32>, %arg143: tensor<1024xf32>, %arg144: tensor<1x1x1024x256xf32>, %arg145: tensor<3x3x256x256xf32>, %arg146: tensor<1x1x256x1024xf32>, %arg147: tensor<256xf32>, %arg148: tensor<256xf32>, %arg149: tensor<256xf32>, %arg150: tensor<256xf32>, %arg151: tensor<1024xf32>, %arg152: tensor<1024xf32>, %arg153: tensor<1x1x1024x256xf32>, %arg154: tensor<3x3x256x256xf32>, %arg155: tensor<1x1x256x1024xf32>, %arg156: tensor<512xf32>, %arg157: tensor<512xf32>, %arg158: tensor<512xf32>, %arg159: tensor<512xf32>, %arg160: tensor<2048xf32>, %arg161: tensor<2048xf32>, %arg162: tensor<2048xf32>, %arg163: tensor<2048xf32>, %arg164: tensor<1x1x1024x512xf32>, %arg165: tensor<3x3x512x512xf32>, %arg166: tensor<1x1x512x2048xf32>, %arg167: tensor<1x1x1024x2048xf32>, %arg168: tensor<512xf32>, %arg169: tensor<512xf32>, %arg170: tensor<512xf32>, %arg171: tensor<512xf32>, %arg172: tensor<2048xf32>, %arg173: tensor<2048xf32>, %arg174: tensor<1x1x2048x512xf32>, %arg175: tensor<3x3x512x512xf32>, %arg176: tensor<1x1x512x2048xf32>, %arg177: tensor<512xf32>, %arg178: tensor<512xf32>, %arg179: tensor<512xf32>, %arg180: tensor<512xf32>, %arg181: tensor<2048xf32>, %arg182: tensor<2048xf32>, %arg183: tensor<1x1x2048x512xf32>, %arg184: tensor<3x3x512x512xf32>, %arg185: tensor<1x1x512x2048xf32>, %arg186: tensor<64xf32>, %arg187: tensor<64xf32>, %arg188: tensor<64xf32>, %arg189: tensor<64xf32>, %arg190: tensor<256xf32>, %arg191: tensor<256xf32>, %arg192: tensor<1x1x256x64xf32>, %arg193: tensor<3x3x64x64xf32>, %arg194: tensor<1x1x64x256xf32>, %arg195: tensor<128xf32>, %arg196: tensor<128xf32>, %arg197: tensor<128xf32>, %arg198: tensor<128xf32>, %arg199: tensor<512xf32>, %arg200: tensor<512xf32>, %arg201: tensor<512xf32>, %arg202: tensor<512xf32>, %arg203: tensor<1x1x256x128xf32>, %arg204: tensor<3x3x128x128xf32>, %arg205: tensor<1x1x128x512xf32>, %arg206: tensor<1x1x256x512xf32>, %arg207: tensor<128xf32>, %arg208: tensor<128xf32>, %arg209: tensor<128xf32>, %arg210: tensor<128xf32>, %arg211: tensor<512xf32>, %arg212: tensor<512xf32>, %arg213: tensor<1x1x512x128xf32>, %arg214: tensor<3x3x128x128xf32>, %arg215: tensor<1x1x128x512xf32>, %arg216: tensor<128xf32>, %arg217: tensor<128xf32>, %arg218: tensor<128xf32>, %arg219: tensor<128xf32>, %arg220: tensor<512xf32>, %arg221: tensor<512xf32>, %arg222: tensor<1x1x512x128xf32>, %arg223: tensor<3x3x128x128xf32>, %arg224: tensor<1x1x128x512xf32>, %arg225: tensor<128xf32>, %arg226: tensor<128xf32>, %arg227: tensor<128xf32>, %arg228: tensor<128xf32>, %arg229: tensor<512xf32>, %arg230: tensor<512xf32>, %arg231: tensor<1x1x512x128xf32>, %arg232: tensor<3x3x128x128xf32>, %arg233: tensor<1x1x128x512xf32>, %arg234: tensor<256xf32>, %arg235: tensor<256xf32>, %arg236: tensor<256xf32>, %arg237: tensor<256xf32>, %arg238: tensor<1024xf32>, %arg239: tensor<1024xf32>, %arg240: tensor<1024xf32>, %arg241: tensor<1024xf32>, %arg242: tensor<1x1x512x256xf32>, %arg243: tensor<3x3x256x256xf32>, %arg244: tensor<1x1x256x1024xf32>, %arg245: tensor<1x1x512x1024xf32>, %arg246: tensor<256xf32>, %arg247: tensor<256xf32>, %arg248: tensor<256xf32>, %arg249: tensor<256xf32>, %arg250: tensor<1024xf32>, %arg251: tensor<1024xf32>, %arg252: tensor<1x1x1024x256xf32>, %arg253: tensor<3x3x256x256xf32>, %arg254: tensor<1x1x256x1024xf32>, %arg255: tensor<256xf32>, %arg256: tensor<256xf32>, %arg257: tensor<256xf32>, %arg258: tensor<256xf32>, %arg259: tensor<1024xf32>, %arg260: tensor<1024xf32>, %arg261: tensor<1x1x1024x256xf32>, %arg262: tensor<3x3x256x256xf32>, %arg263: tensor<1x1x256x1024xf32>, %arg264: tensor<7x7x3x64xf32>, %arg265: tensor<1000xf32>, %arg266: tensor<2048x1000xf32>, %arg267: tensor<1x224x224x3xf32>) -> (tensor<1x1000xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg267, %arg264) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[3, 3], [3, 3]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x224x224x3xf32>, tensor<7x7x3x64xf32>) -> tensor<1x112x112x64xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %2 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x112x112x64xf32>
    %4 = stablehlo.subtract %0, %3 : tensor<1x112x112x64xf32>
    %cst = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %6 = stablehlo.add %2, %5 : tensor<1x1x1x64xf32>
    %7 = stablehlo.rsqrt %6 : tensor<1x1x1x64xf32>
    %8 = stablehlo.reshape %arg107 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %9 = stablehlo.multiply %7, %8 : tensor<1x1x1x64xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x112x112x64xf32>
    %11 = stablehlo.multiply %4, %10 : tensor<1x112x112x64xf32>
    %12 = stablehlo.reshape %arg106 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x112x112x64xf32>
    %14 = stablehlo.add %11, %13 : tensor<1x112x112x64xf32>
    %15 = call @relu(%14) : (tensor<1x112x112x64xf32>) -> tensor<1x112x112x64xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<f32>
    %17 = "stablehlo.reduce_window"(%15, %16) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg268: tensor<f32>, %arg269: tensor<f32>):
      %868 = stablehlo.maximum %arg268, %arg269 : tensor<f32>
      stablehlo.return %868 : tensor<f32>
    }) : (tensor<1x112x112x64xf32>, tensor<f32>) -> tensor<1x56x56x64xf32>
    %18 = stablehlo.convolution(%17, %arg116) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<1x1x64x64xf32>) -> tensor<1x56x56x64xf32>
    %19 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %20 = stablehlo.broadcast_in_dim %arg3, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %21 = stablehlo.broadcast_in_dim %19, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %22 = stablehlo.subtract %18, %21 : tensor<1x56x56x64xf32>
    %cst_1 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %24 = stablehlo.add %20, %23 : tensor<1x1x1x64xf32>
    %25 = stablehlo.rsqrt %24 : tensor<1x1x1x64xf32>
    %26 = stablehlo.reshape %arg109 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %27 = stablehlo.multiply %25, %26 : tensor<1x1x1x64xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %29 = stablehlo.multiply %22, %28 : tensor<1x56x56x64xf32>
    %30 = stablehlo.reshape %arg108 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %32 = stablehlo.add %29, %31 : tensor<1x56x56x64xf32>
    %33 = call @relu_0(%32) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %34 = stablehlo.convolution(%33, %arg117) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<1x56x56x64xf32>
    %35 = stablehlo.broadcast_in_dim %arg4, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %36 = stablehlo.broadcast_in_dim %arg5, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %37 = stablehlo.broadcast_in_dim %35, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %38 = stablehlo.subtract %34, %37 : tensor<1x56x56x64xf32>
    %cst_2 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %40 = stablehlo.add %36, %39 : tensor<1x1x1x64xf32>
    %41 = stablehlo.rsqrt %40 : tensor<1x1x1x64xf32>
    %42 = stablehlo.reshape %arg111 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %43 = stablehlo.multiply %41, %42 : tensor<1x1x1x64xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %45 = stablehlo.multiply %38, %44 : tensor<1x56x56x64xf32>
    %46 = stablehlo.reshape %arg110 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %47 = stablehlo.broadcast_in_dim %46, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %48 = stablehlo.add %45, %47 : tensor<1x56x56x64xf32>
    %49 = call @relu_0(%48) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %50 = stablehlo.convolution(%49, %arg118) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<1x1x64x256xf32>) -> tensor<1x56x56x256xf32>
    %51 = stablehlo.broadcast_in_dim %arg6, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %52 = stablehlo.broadcast_in_dim %arg7, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %53 = stablehlo.broadcast_in_dim %51, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %54 = stablehlo.subtract %50, %53 : tensor<1x56x56x256xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %55 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %56 = stablehlo.add %52, %55 : tensor<1x1x1x256xf32>
    %57 = stablehlo.rsqrt %56 : tensor<1x1x1x256xf32>
    %58 = stablehlo.reshape %arg113 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %59 = stablehlo.multiply %57, %58 : tensor<1x1x1x256xf32>
    %60 = stablehlo.broadcast_in_dim %59, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %61 = stablehlo.multiply %54, %60 : tensor<1x56x56x256xf32>
    %62 = stablehlo.reshape %arg112 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %63 = stablehlo.broadcast_in_dim %62, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %64 = stablehlo.add %61, %63 : tensor<1x56x56x256xf32>
    %65 = stablehlo.convolution(%17, %arg119) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<1x1x64x256xf32>) -> tensor<1x56x56x256xf32>
    %66 = stablehlo.broadcast_in_dim %arg8, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %67 = stablehlo.broadcast_in_dim %arg9, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %68 = stablehlo.broadcast_in_dim %66, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %69 = stablehlo.subtract %65, %68 : tensor<1x56x56x256xf32>
    %cst_4 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %71 = stablehlo.add %67, %70 : tensor<1x1x1x256xf32>
    %72 = stablehlo.rsqrt %71 : tensor<1x1x1x256xf32>
    %73 = stablehlo.reshape %arg115 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %74 = stablehlo.multiply %72, %73 : tensor<1x1x1x256xf32>
    %75 = stablehlo.broadcast_in_dim %74, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %76 = stablehlo.multiply %69, %75 : tensor<1x56x56x256xf32>
    %77 = stablehlo.reshape %arg114 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %79 = stablehlo.add %76, %78 : tensor<1x56x56x256xf32>
    %80 = stablehlo.add %79, %64 : tensor<1x56x56x256xf32>
    %81 = call @relu_1(%80) : (tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32>
    %82 = stablehlo.convolution(%81, %arg126) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x256xf32>, tensor<1x1x256x64xf32>) -> tensor<1x56x56x64xf32>
    %83 = stablehlo.broadcast_in_dim %arg10, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %84 = stablehlo.broadcast_in_dim %arg11, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %85 = stablehlo.broadcast_in_dim %83, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %86 = stablehlo.subtract %82, %85 : tensor<1x56x56x64xf32>
    %cst_5 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %87 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %88 = stablehlo.add %84, %87 : tensor<1x1x1x64xf32>
    %89 = stablehlo.rsqrt %88 : tensor<1x1x1x64xf32>
    %90 = stablehlo.reshape %arg121 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %91 = stablehlo.multiply %89, %90 : tensor<1x1x1x64xf32>
    %92 = stablehlo.broadcast_in_dim %91, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %93 = stablehlo.multiply %86, %92 : tensor<1x56x56x64xf32>
    %94 = stablehlo.reshape %arg120 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %95 = stablehlo.broadcast_in_dim %94, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %96 = stablehlo.add %93, %95 : tensor<1x56x56x64xf32>
    %97 = call @relu_0(%96) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %98 = stablehlo.convolution(%97, %arg127) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<1x56x56x64xf32>
    %99 = stablehlo.broadcast_in_dim %arg12, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %100 = stablehlo.broadcast_in_dim %arg13, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %101 = stablehlo.broadcast_in_dim %99, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %102 = stablehlo.subtract %98, %101 : tensor<1x56x56x64xf32>
    %cst_6 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %103 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %104 = stablehlo.add %100, %103 : tensor<1x1x1x64xf32>
    %105 = stablehlo.rsqrt %104 : tensor<1x1x1x64xf32>
    %106 = stablehlo.reshape %arg123 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %107 = stablehlo.multiply %105, %106 : tensor<1x1x1x64xf32>
    %108 = stablehlo.broadcast_in_dim %107, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %109 = stablehlo.multiply %102, %108 : tensor<1x56x56x64xf32>
    %110 = stablehlo.reshape %arg122 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %111 = stablehlo.broadcast_in_dim %110, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %112 = stablehlo.add %109, %111 : tensor<1x56x56x64xf32>
    %113 = call @relu_0(%112) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %114 = stablehlo.convolution(%113, %arg128) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<1x1x64x256xf32>) -> tensor<1x56x56x256xf32>
    %115 = stablehlo.broadcast_in_dim %arg14, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %116 = stablehlo.broadcast_in_dim %arg15, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %117 = stablehlo.broadcast_in_dim %115, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %118 = stablehlo.subtract %114, %117 : tensor<1x56x56x256xf32>
    %cst_7 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %119 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %120 = stablehlo.add %116, %119 : tensor<1x1x1x256xf32>
    %121 = stablehlo.rsqrt %120 : tensor<1x1x1x256xf32>
    %122 = stablehlo.reshape %arg125 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %123 = stablehlo.multiply %121, %122 : tensor<1x1x1x256xf32>
    %124 = stablehlo.broadcast_in_dim %123, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %125 = stablehlo.multiply %118, %124 : tensor<1x56x56x256xf32>
    %126 = stablehlo.reshape %arg124 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %127 = stablehlo.broadcast_in_dim %126, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %128 = stablehlo.add %125, %127 : tensor<1x56x56x256xf32>
    %129 = stablehlo.add %81, %128 : tensor<1x56x56x256xf32>
    %130 = call @relu_1(%129) : (tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32>
    %131 = stablehlo.convolution(%130, %arg192) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x256xf32>, tensor<1x1x256x64xf32>) -> tensor<1x56x56x64xf32>
    %132 = stablehlo.broadcast_in_dim %arg54, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %133 = stablehlo.broadcast_in_dim %arg55, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %134 = stablehlo.broadcast_in_dim %132, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %135 = stablehlo.subtract %131, %134 : tensor<1x56x56x64xf32>
    %cst_8 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %136 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %137 = stablehlo.add %133, %136 : tensor<1x1x1x64xf32>
    %138 = stablehlo.rsqrt %137 : tensor<1x1x1x64xf32>
    %139 = stablehlo.reshape %arg187 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %140 = stablehlo.multiply %138, %139 : tensor<1x1x1x64xf32>
    %141 = stablehlo.broadcast_in_dim %140, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %142 = stablehlo.multiply %135, %141 : tensor<1x56x56x64xf32>
    %143 = stablehlo.reshape %arg186 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %144 = stablehlo.broadcast_in_dim %143, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %145 = stablehlo.add %142, %144 : tensor<1x56x56x64xf32>
    %146 = call @relu_0(%145) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %147 = stablehlo.convolution(%146, %arg193) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<1x56x56x64xf32>
    %148 = stablehlo.broadcast_in_dim %arg56, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %149 = stablehlo.broadcast_in_dim %arg57, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %150 = stablehlo.broadcast_in_dim %148, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %151 = stablehlo.subtract %147, %150 : tensor<1x56x56x64xf32>
    %cst_9 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %152 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<1x1x1x64xf32>
    %153 = stablehlo.add %149, %152 : tensor<1x1x1x64xf32>
    %154 = stablehlo.rsqrt %153 : tensor<1x1x1x64xf32>
    %155 = stablehlo.reshape %arg189 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %156 = stablehlo.multiply %154, %155 : tensor<1x1x1x64xf32>
    %157 = stablehlo.broadcast_in_dim %156, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %158 = stablehlo.multiply %151, %157 : tensor<1x56x56x64xf32>
    %159 = stablehlo.reshape %arg188 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %160 = stablehlo.broadcast_in_dim %159, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<1x56x56x64xf32>
    %161 = stablehlo.add %158, %160 : tensor<1x56x56x64xf32>
    %162 = call @relu_0(%161) : (tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
    %163 = stablehlo.convolution(%162, %arg194) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x64xf32>, tensor<1x1x64x256xf32>) -> tensor<1x56x56x256xf32>
    %164 = stablehlo.broadcast_in_dim %arg58, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %165 = stablehlo.broadcast_in_dim %arg59, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %166 = stablehlo.broadcast_in_dim %164, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %167 = stablehlo.subtract %163, %166 : tensor<1x56x56x256xf32>
    %cst_10 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %168 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %169 = stablehlo.add %165, %168 : tensor<1x1x1x256xf32>
    %170 = stablehlo.rsqrt %169 : tensor<1x1x1x256xf32>
    %171 = stablehlo.reshape %arg191 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %172 = stablehlo.multiply %170, %171 : tensor<1x1x1x256xf32>
    %173 = stablehlo.broadcast_in_dim %172, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %174 = stablehlo.multiply %167, %173 : tensor<1x56x56x256xf32>
    %175 = stablehlo.reshape %arg190 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %176 = stablehlo.broadcast_in_dim %175, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x56x56x256xf32>
    %177 = stablehlo.add %174, %176 : tensor<1x56x56x256xf32>
    %178 = stablehlo.add %130, %177 : tensor<1x56x56x256xf32>
    %179 = call @relu_1(%178) : (tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32>
    %180 = stablehlo.convolution(%179, %arg203) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x256xf32>, tensor<1x1x256x128xf32>) -> tensor<1x56x56x128xf32>
    %181 = stablehlo.broadcast_in_dim %arg60, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %182 = stablehlo.broadcast_in_dim %arg61, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %183 = stablehlo.broadcast_in_dim %181, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x56x56x128xf32>
    %184 = stablehlo.subtract %180, %183 : tensor<1x56x56x128xf32>
    %cst_11 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %185 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %186 = stablehlo.add %182, %185 : tensor<1x1x1x128xf32>
    %187 = stablehlo.rsqrt %186 : tensor<1x1x1x128xf32>
    %188 = stablehlo.reshape %arg196 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %189 = stablehlo.multiply %187, %188 : tensor<1x1x1x128xf32>
    %190 = stablehlo.broadcast_in_dim %189, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x56x56x128xf32>
    %191 = stablehlo.multiply %184, %190 : tensor<1x56x56x128xf32>
    %192 = stablehlo.reshape %arg195 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %193 = stablehlo.broadcast_in_dim %192, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x56x56x128xf32>
    %194 = stablehlo.add %191, %193 : tensor<1x56x56x128xf32>
    %195 = call @relu_2(%194) : (tensor<1x56x56x128xf32>) -> tensor<1x56x56x128xf32>
    %196 = stablehlo.convolution(%195, %arg204) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x128xf32>, tensor<3x3x128x128xf32>) -> tensor<1x28x28x128xf32>
    %197 = stablehlo.broadcast_in_dim %arg62, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %198 = stablehlo.broadcast_in_dim %arg63, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %199 = stablehlo.broadcast_in_dim %197, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %200 = stablehlo.subtract %196, %199 : tensor<1x28x28x128xf32>
    %cst_12 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %201 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %202 = stablehlo.add %198, %201 : tensor<1x1x1x128xf32>
    %203 = stablehlo.rsqrt %202 : tensor<1x1x1x128xf32>
    %204 = stablehlo.reshape %arg198 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %205 = stablehlo.multiply %203, %204 : tensor<1x1x1x128xf32>
    %206 = stablehlo.broadcast_in_dim %205, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %207 = stablehlo.multiply %200, %206 : tensor<1x28x28x128xf32>
    %208 = stablehlo.reshape %arg197 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %209 = stablehlo.broadcast_in_dim %208, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %210 = stablehlo.add %207, %209 : tensor<1x28x28x128xf32>
    %211 = call @relu_3(%210) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %212 = stablehlo.convolution(%211, %arg205) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<1x1x128x512xf32>) -> tensor<1x28x28x512xf32>
    %213 = stablehlo.broadcast_in_dim %arg64, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %214 = stablehlo.broadcast_in_dim %arg65, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %215 = stablehlo.broadcast_in_dim %213, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %216 = stablehlo.subtract %212, %215 : tensor<1x28x28x512xf32>
    %cst_13 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %217 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %218 = stablehlo.add %214, %217 : tensor<1x1x1x512xf32>
    %219 = stablehlo.rsqrt %218 : tensor<1x1x1x512xf32>
    %220 = stablehlo.reshape %arg200 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %221 = stablehlo.multiply %219, %220 : tensor<1x1x1x512xf32>
    %222 = stablehlo.broadcast_in_dim %221, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %223 = stablehlo.multiply %216, %222 : tensor<1x28x28x512xf32>
    %224 = stablehlo.reshape %arg199 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %225 = stablehlo.broadcast_in_dim %224, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %226 = stablehlo.add %223, %225 : tensor<1x28x28x512xf32>
    %227 = stablehlo.convolution(%179, %arg206) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x56x56x256xf32>, tensor<1x1x256x512xf32>) -> tensor<1x28x28x512xf32>
    %228 = stablehlo.broadcast_in_dim %arg66, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %229 = stablehlo.broadcast_in_dim %arg67, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %230 = stablehlo.broadcast_in_dim %228, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %231 = stablehlo.subtract %227, %230 : tensor<1x28x28x512xf32>
    %cst_14 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %232 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %233 = stablehlo.add %229, %232 : tensor<1x1x1x512xf32>
    %234 = stablehlo.rsqrt %233 : tensor<1x1x1x512xf32>
    %235 = stablehlo.reshape %arg202 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %236 = stablehlo.multiply %234, %235 : tensor<1x1x1x512xf32>
    %237 = stablehlo.broadcast_in_dim %236, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %238 = stablehlo.multiply %231, %237 : tensor<1x28x28x512xf32>
    %239 = stablehlo.reshape %arg201 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %240 = stablehlo.broadcast_in_dim %239, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %241 = stablehlo.add %238, %240 : tensor<1x28x28x512xf32>
    %242 = stablehlo.add %241, %226 : tensor<1x28x28x512xf32>
    %243 = call @relu_4(%242) : (tensor<1x28x28x512xf32>) -> tensor<1x28x28x512xf32>
    %244 = stablehlo.convolution(%243, %arg213) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x512xf32>, tensor<1x1x512x128xf32>) -> tensor<1x28x28x128xf32>
    %245 = stablehlo.broadcast_in_dim %arg68, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %246 = stablehlo.broadcast_in_dim %arg69, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %247 = stablehlo.broadcast_in_dim %245, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %248 = stablehlo.subtract %244, %247 : tensor<1x28x28x128xf32>
    %cst_15 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %249 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %250 = stablehlo.add %246, %249 : tensor<1x1x1x128xf32>
    %251 = stablehlo.rsqrt %250 : tensor<1x1x1x128xf32>
    %252 = stablehlo.reshape %arg208 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %253 = stablehlo.multiply %251, %252 : tensor<1x1x1x128xf32>
    %254 = stablehlo.broadcast_in_dim %253, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %255 = stablehlo.multiply %248, %254 : tensor<1x28x28x128xf32>
    %256 = stablehlo.reshape %arg207 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %257 = stablehlo.broadcast_in_dim %256, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %258 = stablehlo.add %255, %257 : tensor<1x28x28x128xf32>
    %259 = call @relu_3(%258) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %260 = stablehlo.convolution(%259, %arg214) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<3x3x128x128xf32>) -> tensor<1x28x28x128xf32>
    %261 = stablehlo.broadcast_in_dim %arg70, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %262 = stablehlo.broadcast_in_dim %arg71, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %263 = stablehlo.broadcast_in_dim %261, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %264 = stablehlo.subtract %260, %263 : tensor<1x28x28x128xf32>
    %cst_16 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %265 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %266 = stablehlo.add %262, %265 : tensor<1x1x1x128xf32>
    %267 = stablehlo.rsqrt %266 : tensor<1x1x1x128xf32>
    %268 = stablehlo.reshape %arg210 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %269 = stablehlo.multiply %267, %268 : tensor<1x1x1x128xf32>
    %270 = stablehlo.broadcast_in_dim %269, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %271 = stablehlo.multiply %264, %270 : tensor<1x28x28x128xf32>
    %272 = stablehlo.reshape %arg209 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %273 = stablehlo.broadcast_in_dim %272, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %274 = stablehlo.add %271, %273 : tensor<1x28x28x128xf32>
    %275 = call @relu_3(%274) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %276 = stablehlo.convolution(%275, %arg215) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<1x1x128x512xf32>) -> tensor<1x28x28x512xf32>
    %277 = stablehlo.broadcast_in_dim %arg72, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %278 = stablehlo.broadcast_in_dim %arg73, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %279 = stablehlo.broadcast_in_dim %277, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %280 = stablehlo.subtract %276, %279 : tensor<1x28x28x512xf32>
    %cst_17 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %281 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %282 = stablehlo.add %278, %281 : tensor<1x1x1x512xf32>
    %283 = stablehlo.rsqrt %282 : tensor<1x1x1x512xf32>
    %284 = stablehlo.reshape %arg212 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %285 = stablehlo.multiply %283, %284 : tensor<1x1x1x512xf32>
    %286 = stablehlo.broadcast_in_dim %285, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %287 = stablehlo.multiply %280, %286 : tensor<1x28x28x512xf32>
    %288 = stablehlo.reshape %arg211 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %289 = stablehlo.broadcast_in_dim %288, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %290 = stablehlo.add %287, %289 : tensor<1x28x28x512xf32>
    %291 = stablehlo.add %243, %290 : tensor<1x28x28x512xf32>
    %292 = call @relu_4(%291) : (tensor<1x28x28x512xf32>) -> tensor<1x28x28x512xf32>
    %293 = stablehlo.convolution(%292, %arg222) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x512xf32>, tensor<1x1x512x128xf32>) -> tensor<1x28x28x128xf32>
    %294 = stablehlo.broadcast_in_dim %arg74, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %295 = stablehlo.broadcast_in_dim %arg75, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %296 = stablehlo.broadcast_in_dim %294, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %297 = stablehlo.subtract %293, %296 : tensor<1x28x28x128xf32>
    %cst_18 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %298 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %299 = stablehlo.add %295, %298 : tensor<1x1x1x128xf32>
    %300 = stablehlo.rsqrt %299 : tensor<1x1x1x128xf32>
    %301 = stablehlo.reshape %arg217 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %302 = stablehlo.multiply %300, %301 : tensor<1x1x1x128xf32>
    %303 = stablehlo.broadcast_in_dim %302, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %304 = stablehlo.multiply %297, %303 : tensor<1x28x28x128xf32>
    %305 = stablehlo.reshape %arg216 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %306 = stablehlo.broadcast_in_dim %305, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %307 = stablehlo.add %304, %306 : tensor<1x28x28x128xf32>
    %308 = call @relu_3(%307) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %309 = stablehlo.convolution(%308, %arg223) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<3x3x128x128xf32>) -> tensor<1x28x28x128xf32>
    %310 = stablehlo.broadcast_in_dim %arg76, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %311 = stablehlo.broadcast_in_dim %arg77, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %312 = stablehlo.broadcast_in_dim %310, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %313 = stablehlo.subtract %309, %312 : tensor<1x28x28x128xf32>
    %cst_19 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %314 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %315 = stablehlo.add %311, %314 : tensor<1x1x1x128xf32>
    %316 = stablehlo.rsqrt %315 : tensor<1x1x1x128xf32>
    %317 = stablehlo.reshape %arg219 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %318 = stablehlo.multiply %316, %317 : tensor<1x1x1x128xf32>
    %319 = stablehlo.broadcast_in_dim %318, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %320 = stablehlo.multiply %313, %319 : tensor<1x28x28x128xf32>
    %321 = stablehlo.reshape %arg218 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %322 = stablehlo.broadcast_in_dim %321, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %323 = stablehlo.add %320, %322 : tensor<1x28x28x128xf32>
    %324 = call @relu_3(%323) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %325 = stablehlo.convolution(%324, %arg224) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<1x1x128x512xf32>) -> tensor<1x28x28x512xf32>
    %326 = stablehlo.broadcast_in_dim %arg78, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %327 = stablehlo.broadcast_in_dim %arg79, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %328 = stablehlo.broadcast_in_dim %326, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %329 = stablehlo.subtract %325, %328 : tensor<1x28x28x512xf32>
    %cst_20 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %330 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %331 = stablehlo.add %327, %330 : tensor<1x1x1x512xf32>
    %332 = stablehlo.rsqrt %331 : tensor<1x1x1x512xf32>
    %333 = stablehlo.reshape %arg221 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %334 = stablehlo.multiply %332, %333 : tensor<1x1x1x512xf32>
    %335 = stablehlo.broadcast_in_dim %334, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %336 = stablehlo.multiply %329, %335 : tensor<1x28x28x512xf32>
    %337 = stablehlo.reshape %arg220 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %338 = stablehlo.broadcast_in_dim %337, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %339 = stablehlo.add %336, %338 : tensor<1x28x28x512xf32>
    %340 = stablehlo.add %292, %339 : tensor<1x28x28x512xf32>
    %341 = call @relu_4(%340) : (tensor<1x28x28x512xf32>) -> tensor<1x28x28x512xf32>
    %342 = stablehlo.convolution(%341, %arg231) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x512xf32>, tensor<1x1x512x128xf32>) -> tensor<1x28x28x128xf32>
    %343 = stablehlo.broadcast_in_dim %arg80, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %344 = stablehlo.broadcast_in_dim %arg81, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %345 = stablehlo.broadcast_in_dim %343, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %346 = stablehlo.subtract %342, %345 : tensor<1x28x28x128xf32>
    %cst_21 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %347 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %348 = stablehlo.add %344, %347 : tensor<1x1x1x128xf32>
    %349 = stablehlo.rsqrt %348 : tensor<1x1x1x128xf32>
    %350 = stablehlo.reshape %arg226 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %351 = stablehlo.multiply %349, %350 : tensor<1x1x1x128xf32>
    %352 = stablehlo.broadcast_in_dim %351, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %353 = stablehlo.multiply %346, %352 : tensor<1x28x28x128xf32>
    %354 = stablehlo.reshape %arg225 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %355 = stablehlo.broadcast_in_dim %354, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %356 = stablehlo.add %353, %355 : tensor<1x28x28x128xf32>
    %357 = call @relu_3(%356) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %358 = stablehlo.convolution(%357, %arg232) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<3x3x128x128xf32>) -> tensor<1x28x28x128xf32>
    %359 = stablehlo.broadcast_in_dim %arg82, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %360 = stablehlo.broadcast_in_dim %arg83, dims = [3] : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %361 = stablehlo.broadcast_in_dim %359, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %362 = stablehlo.subtract %358, %361 : tensor<1x28x28x128xf32>
    %cst_22 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %363 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<1x1x1x128xf32>
    %364 = stablehlo.add %360, %363 : tensor<1x1x1x128xf32>
    %365 = stablehlo.rsqrt %364 : tensor<1x1x1x128xf32>
    %366 = stablehlo.reshape %arg228 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %367 = stablehlo.multiply %365, %366 : tensor<1x1x1x128xf32>
    %368 = stablehlo.broadcast_in_dim %367, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %369 = stablehlo.multiply %362, %368 : tensor<1x28x28x128xf32>
    %370 = stablehlo.reshape %arg227 : (tensor<128xf32>) -> tensor<1x1x1x128xf32>
    %371 = stablehlo.broadcast_in_dim %370, dims = [0, 1, 2, 3] : (tensor<1x1x1x128xf32>) -> tensor<1x28x28x128xf32>
    %372 = stablehlo.add %369, %371 : tensor<1x28x28x128xf32>
    %373 = call @relu_3(%372) : (tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
    %374 = stablehlo.convolution(%373, %arg233) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x128xf32>, tensor<1x1x128x512xf32>) -> tensor<1x28x28x512xf32>
    %375 = stablehlo.broadcast_in_dim %arg84, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %376 = stablehlo.broadcast_in_dim %arg85, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %377 = stablehlo.broadcast_in_dim %375, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %378 = stablehlo.subtract %374, %377 : tensor<1x28x28x512xf32>
    %cst_23 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %379 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %380 = stablehlo.add %376, %379 : tensor<1x1x1x512xf32>
    %381 = stablehlo.rsqrt %380 : tensor<1x1x1x512xf32>
    %382 = stablehlo.reshape %arg230 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %383 = stablehlo.multiply %381, %382 : tensor<1x1x1x512xf32>
    %384 = stablehlo.broadcast_in_dim %383, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %385 = stablehlo.multiply %378, %384 : tensor<1x28x28x512xf32>
    %386 = stablehlo.reshape %arg229 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %387 = stablehlo.broadcast_in_dim %386, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x28x28x512xf32>
    %388 = stablehlo.add %385, %387 : tensor<1x28x28x512xf32>
    %389 = stablehlo.add %341, %388 : tensor<1x28x28x512xf32>
    %390 = call @relu_4(%389) : (tensor<1x28x28x512xf32>) -> tensor<1x28x28x512xf32>
    %391 = stablehlo.convolution(%390, %arg242) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x512xf32>, tensor<1x1x512x256xf32>) -> tensor<1x28x28x256xf32>
    %392 = stablehlo.broadcast_in_dim %arg86, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %393 = stablehlo.broadcast_in_dim %arg87, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %394 = stablehlo.broadcast_in_dim %392, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x28x28x256xf32>
    %395 = stablehlo.subtract %391, %394 : tensor<1x28x28x256xf32>
    %cst_24 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %396 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %397 = stablehlo.add %393, %396 : tensor<1x1x1x256xf32>
    %398 = stablehlo.rsqrt %397 : tensor<1x1x1x256xf32>
    %399 = stablehlo.reshape %arg235 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %400 = stablehlo.multiply %398, %399 : tensor<1x1x1x256xf32>
    %401 = stablehlo.broadcast_in_dim %400, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x28x28x256xf32>
    %402 = stablehlo.multiply %395, %401 : tensor<1x28x28x256xf32>
    %403 = stablehlo.reshape %arg234 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %404 = stablehlo.broadcast_in_dim %403, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x28x28x256xf32>
    %405 = stablehlo.add %402, %404 : tensor<1x28x28x256xf32>
    %406 = call @relu_5(%405) : (tensor<1x28x28x256xf32>) -> tensor<1x28x28x256xf32>
    %407 = stablehlo.convolution(%406, %arg243) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %408 = stablehlo.broadcast_in_dim %arg88, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %409 = stablehlo.broadcast_in_dim %arg89, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %410 = stablehlo.broadcast_in_dim %408, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %411 = stablehlo.subtract %407, %410 : tensor<1x14x14x256xf32>
    %cst_25 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %412 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %413 = stablehlo.add %409, %412 : tensor<1x1x1x256xf32>
    %414 = stablehlo.rsqrt %413 : tensor<1x1x1x256xf32>
    %415 = stablehlo.reshape %arg237 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %416 = stablehlo.multiply %414, %415 : tensor<1x1x1x256xf32>
    %417 = stablehlo.broadcast_in_dim %416, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %418 = stablehlo.multiply %411, %417 : tensor<1x14x14x256xf32>
    %419 = stablehlo.reshape %arg236 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %420 = stablehlo.broadcast_in_dim %419, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %421 = stablehlo.add %418, %420 : tensor<1x14x14x256xf32>
    %422 = call @relu_6(%421) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %423 = stablehlo.convolution(%422, %arg244) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %424 = stablehlo.broadcast_in_dim %arg90, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %425 = stablehlo.broadcast_in_dim %arg91, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %426 = stablehlo.broadcast_in_dim %424, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %427 = stablehlo.subtract %423, %426 : tensor<1x14x14x1024xf32>
    %cst_26 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %428 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %429 = stablehlo.add %425, %428 : tensor<1x1x1x1024xf32>
    %430 = stablehlo.rsqrt %429 : tensor<1x1x1x1024xf32>
    %431 = stablehlo.reshape %arg239 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %432 = stablehlo.multiply %430, %431 : tensor<1x1x1x1024xf32>
    %433 = stablehlo.broadcast_in_dim %432, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %434 = stablehlo.multiply %427, %433 : tensor<1x14x14x1024xf32>
    %435 = stablehlo.reshape %arg238 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %436 = stablehlo.broadcast_in_dim %435, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %437 = stablehlo.add %434, %436 : tensor<1x14x14x1024xf32>
    %438 = stablehlo.convolution(%390, %arg245) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x28x28x512xf32>, tensor<1x1x512x1024xf32>) -> tensor<1x14x14x1024xf32>
    %439 = stablehlo.broadcast_in_dim %arg92, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %440 = stablehlo.broadcast_in_dim %arg93, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %441 = stablehlo.broadcast_in_dim %439, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %442 = stablehlo.subtract %438, %441 : tensor<1x14x14x1024xf32>
    %cst_27 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %443 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %444 = stablehlo.add %440, %443 : tensor<1x1x1x1024xf32>
    %445 = stablehlo.rsqrt %444 : tensor<1x1x1x1024xf32>
    %446 = stablehlo.reshape %arg241 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %447 = stablehlo.multiply %445, %446 : tensor<1x1x1x1024xf32>
    %448 = stablehlo.broadcast_in_dim %447, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %449 = stablehlo.multiply %442, %448 : tensor<1x14x14x1024xf32>
    %450 = stablehlo.reshape %arg240 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %451 = stablehlo.broadcast_in_dim %450, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %452 = stablehlo.add %449, %451 : tensor<1x14x14x1024xf32>
    %453 = stablehlo.add %452, %437 : tensor<1x14x14x1024xf32>
    %454 = call @relu_7(%453) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %455 = stablehlo.convolution(%454, %arg252) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x14x14x256xf32>
    %456 = stablehlo.broadcast_in_dim %arg94, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %457 = stablehlo.broadcast_in_dim %arg95, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %458 = stablehlo.broadcast_in_dim %456, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %459 = stablehlo.subtract %455, %458 : tensor<1x14x14x256xf32>
    %cst_28 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %460 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %461 = stablehlo.add %457, %460 : tensor<1x1x1x256xf32>
    %462 = stablehlo.rsqrt %461 : tensor<1x1x1x256xf32>
    %463 = stablehlo.reshape %arg247 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %464 = stablehlo.multiply %462, %463 : tensor<1x1x1x256xf32>
    %465 = stablehlo.broadcast_in_dim %464, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %466 = stablehlo.multiply %459, %465 : tensor<1x14x14x256xf32>
    %467 = stablehlo.reshape %arg246 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %468 = stablehlo.broadcast_in_dim %467, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %469 = stablehlo.add %466, %468 : tensor<1x14x14x256xf32>
    %470 = call @relu_6(%469) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %471 = stablehlo.convolution(%470, %arg253) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %472 = stablehlo.broadcast_in_dim %arg96, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %473 = stablehlo.broadcast_in_dim %arg97, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %474 = stablehlo.broadcast_in_dim %472, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %475 = stablehlo.subtract %471, %474 : tensor<1x14x14x256xf32>
    %cst_29 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %476 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %477 = stablehlo.add %473, %476 : tensor<1x1x1x256xf32>
    %478 = stablehlo.rsqrt %477 : tensor<1x1x1x256xf32>
    %479 = stablehlo.reshape %arg249 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %480 = stablehlo.multiply %478, %479 : tensor<1x1x1x256xf32>
    %481 = stablehlo.broadcast_in_dim %480, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %482 = stablehlo.multiply %475, %481 : tensor<1x14x14x256xf32>
    %483 = stablehlo.reshape %arg248 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %484 = stablehlo.broadcast_in_dim %483, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %485 = stablehlo.add %482, %484 : tensor<1x14x14x256xf32>
    %486 = call @relu_6(%485) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %487 = stablehlo.convolution(%486, %arg254) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %488 = stablehlo.broadcast_in_dim %arg98, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %489 = stablehlo.broadcast_in_dim %arg99, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %490 = stablehlo.broadcast_in_dim %488, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %491 = stablehlo.subtract %487, %490 : tensor<1x14x14x1024xf32>
    %cst_30 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %492 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %493 = stablehlo.add %489, %492 : tensor<1x1x1x1024xf32>
    %494 = stablehlo.rsqrt %493 : tensor<1x1x1x1024xf32>
    %495 = stablehlo.reshape %arg251 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %496 = stablehlo.multiply %494, %495 : tensor<1x1x1x1024xf32>
    %497 = stablehlo.broadcast_in_dim %496, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %498 = stablehlo.multiply %491, %497 : tensor<1x14x14x1024xf32>
    %499 = stablehlo.reshape %arg250 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %500 = stablehlo.broadcast_in_dim %499, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %501 = stablehlo.add %498, %500 : tensor<1x14x14x1024xf32>
    %502 = stablehlo.add %454, %501 : tensor<1x14x14x1024xf32>
    %503 = call @relu_7(%502) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %504 = stablehlo.convolution(%503, %arg261) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x14x14x256xf32>
    %505 = stablehlo.broadcast_in_dim %arg100, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %506 = stablehlo.broadcast_in_dim %arg101, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %507 = stablehlo.broadcast_in_dim %505, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %508 = stablehlo.subtract %504, %507 : tensor<1x14x14x256xf32>
    %cst_31 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %509 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %510 = stablehlo.add %506, %509 : tensor<1x1x1x256xf32>
    %511 = stablehlo.rsqrt %510 : tensor<1x1x1x256xf32>
    %512 = stablehlo.reshape %arg256 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %513 = stablehlo.multiply %511, %512 : tensor<1x1x1x256xf32>
    %514 = stablehlo.broadcast_in_dim %513, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %515 = stablehlo.multiply %508, %514 : tensor<1x14x14x256xf32>
    %516 = stablehlo.reshape %arg255 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %517 = stablehlo.broadcast_in_dim %516, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %518 = stablehlo.add %515, %517 : tensor<1x14x14x256xf32>
    %519 = call @relu_6(%518) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %520 = stablehlo.convolution(%519, %arg262) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %521 = stablehlo.broadcast_in_dim %arg102, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %522 = stablehlo.broadcast_in_dim %arg103, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %523 = stablehlo.broadcast_in_dim %521, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %524 = stablehlo.subtract %520, %523 : tensor<1x14x14x256xf32>
    %cst_32 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %525 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %526 = stablehlo.add %522, %525 : tensor<1x1x1x256xf32>
    %527 = stablehlo.rsqrt %526 : tensor<1x1x1x256xf32>
    %528 = stablehlo.reshape %arg258 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %529 = stablehlo.multiply %527, %528 : tensor<1x1x1x256xf32>
    %530 = stablehlo.broadcast_in_dim %529, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %531 = stablehlo.multiply %524, %530 : tensor<1x14x14x256xf32>
    %532 = stablehlo.reshape %arg257 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %533 = stablehlo.broadcast_in_dim %532, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %534 = stablehlo.add %531, %533 : tensor<1x14x14x256xf32>
    %535 = call @relu_6(%534) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %536 = stablehlo.convolution(%535, %arg263) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %537 = stablehlo.broadcast_in_dim %arg104, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %538 = stablehlo.broadcast_in_dim %arg105, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %539 = stablehlo.broadcast_in_dim %537, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %540 = stablehlo.subtract %536, %539 : tensor<1x14x14x1024xf32>
    %cst_33 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %541 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %542 = stablehlo.add %538, %541 : tensor<1x1x1x1024xf32>
    %543 = stablehlo.rsqrt %542 : tensor<1x1x1x1024xf32>
    %544 = stablehlo.reshape %arg260 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %545 = stablehlo.multiply %543, %544 : tensor<1x1x1x1024xf32>
    %546 = stablehlo.broadcast_in_dim %545, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %547 = stablehlo.multiply %540, %546 : tensor<1x14x14x1024xf32>
    %548 = stablehlo.reshape %arg259 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %549 = stablehlo.broadcast_in_dim %548, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %550 = stablehlo.add %547, %549 : tensor<1x14x14x1024xf32>
    %551 = stablehlo.add %503, %550 : tensor<1x14x14x1024xf32>
    %552 = call @relu_7(%551) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %553 = stablehlo.convolution(%552, %arg135) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x14x14x256xf32>
    %554 = stablehlo.broadcast_in_dim %arg16, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %555 = stablehlo.broadcast_in_dim %arg17, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %556 = stablehlo.broadcast_in_dim %554, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %557 = stablehlo.subtract %553, %556 : tensor<1x14x14x256xf32>
    %cst_34 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %558 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %559 = stablehlo.add %555, %558 : tensor<1x1x1x256xf32>
    %560 = stablehlo.rsqrt %559 : tensor<1x1x1x256xf32>
    %561 = stablehlo.reshape %arg130 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %562 = stablehlo.multiply %560, %561 : tensor<1x1x1x256xf32>
    %563 = stablehlo.broadcast_in_dim %562, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %564 = stablehlo.multiply %557, %563 : tensor<1x14x14x256xf32>
    %565 = stablehlo.reshape %arg129 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %566 = stablehlo.broadcast_in_dim %565, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %567 = stablehlo.add %564, %566 : tensor<1x14x14x256xf32>
    %568 = call @relu_6(%567) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %569 = stablehlo.convolution(%568, %arg136) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %570 = stablehlo.broadcast_in_dim %arg18, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %571 = stablehlo.broadcast_in_dim %arg19, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %572 = stablehlo.broadcast_in_dim %570, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %573 = stablehlo.subtract %569, %572 : tensor<1x14x14x256xf32>
    %cst_35 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %574 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %575 = stablehlo.add %571, %574 : tensor<1x1x1x256xf32>
    %576 = stablehlo.rsqrt %575 : tensor<1x1x1x256xf32>
    %577 = stablehlo.reshape %arg132 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %578 = stablehlo.multiply %576, %577 : tensor<1x1x1x256xf32>
    %579 = stablehlo.broadcast_in_dim %578, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %580 = stablehlo.multiply %573, %579 : tensor<1x14x14x256xf32>
    %581 = stablehlo.reshape %arg131 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %582 = stablehlo.broadcast_in_dim %581, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %583 = stablehlo.add %580, %582 : tensor<1x14x14x256xf32>
    %584 = call @relu_6(%583) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %585 = stablehlo.convolution(%584, %arg137) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %586 = stablehlo.broadcast_in_dim %arg20, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %587 = stablehlo.broadcast_in_dim %arg21, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %588 = stablehlo.broadcast_in_dim %586, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %589 = stablehlo.subtract %585, %588 : tensor<1x14x14x1024xf32>
    %cst_36 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %590 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %591 = stablehlo.add %587, %590 : tensor<1x1x1x1024xf32>
    %592 = stablehlo.rsqrt %591 : tensor<1x1x1x1024xf32>
    %593 = stablehlo.reshape %arg134 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %594 = stablehlo.multiply %592, %593 : tensor<1x1x1x1024xf32>
    %595 = stablehlo.broadcast_in_dim %594, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %596 = stablehlo.multiply %589, %595 : tensor<1x14x14x1024xf32>
    %597 = stablehlo.reshape %arg133 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %598 = stablehlo.broadcast_in_dim %597, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %599 = stablehlo.add %596, %598 : tensor<1x14x14x1024xf32>
    %600 = stablehlo.add %552, %599 : tensor<1x14x14x1024xf32>
    %601 = call @relu_7(%600) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %602 = stablehlo.convolution(%601, %arg144) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x14x14x256xf32>
    %603 = stablehlo.broadcast_in_dim %arg22, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %604 = stablehlo.broadcast_in_dim %arg23, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %605 = stablehlo.broadcast_in_dim %603, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %606 = stablehlo.subtract %602, %605 : tensor<1x14x14x256xf32>
    %cst_37 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %607 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %608 = stablehlo.add %604, %607 : tensor<1x1x1x256xf32>
    %609 = stablehlo.rsqrt %608 : tensor<1x1x1x256xf32>
    %610 = stablehlo.reshape %arg139 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %611 = stablehlo.multiply %609, %610 : tensor<1x1x1x256xf32>
    %612 = stablehlo.broadcast_in_dim %611, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %613 = stablehlo.multiply %606, %612 : tensor<1x14x14x256xf32>
    %614 = stablehlo.reshape %arg138 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %615 = stablehlo.broadcast_in_dim %614, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %616 = stablehlo.add %613, %615 : tensor<1x14x14x256xf32>
    %617 = call @relu_6(%616) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %618 = stablehlo.convolution(%617, %arg145) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %619 = stablehlo.broadcast_in_dim %arg24, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %620 = stablehlo.broadcast_in_dim %arg25, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %621 = stablehlo.broadcast_in_dim %619, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %622 = stablehlo.subtract %618, %621 : tensor<1x14x14x256xf32>
    %cst_38 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %623 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %624 = stablehlo.add %620, %623 : tensor<1x1x1x256xf32>
    %625 = stablehlo.rsqrt %624 : tensor<1x1x1x256xf32>
    %626 = stablehlo.reshape %arg141 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %627 = stablehlo.multiply %625, %626 : tensor<1x1x1x256xf32>
    %628 = stablehlo.broadcast_in_dim %627, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %629 = stablehlo.multiply %622, %628 : tensor<1x14x14x256xf32>
    %630 = stablehlo.reshape %arg140 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %631 = stablehlo.broadcast_in_dim %630, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %632 = stablehlo.add %629, %631 : tensor<1x14x14x256xf32>
    %633 = call @relu_6(%632) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %634 = stablehlo.convolution(%633, %arg146) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %635 = stablehlo.broadcast_in_dim %arg26, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %636 = stablehlo.broadcast_in_dim %arg27, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %637 = stablehlo.broadcast_in_dim %635, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %638 = stablehlo.subtract %634, %637 : tensor<1x14x14x1024xf32>
    %cst_39 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %639 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %640 = stablehlo.add %636, %639 : tensor<1x1x1x1024xf32>
    %641 = stablehlo.rsqrt %640 : tensor<1x1x1x1024xf32>
    %642 = stablehlo.reshape %arg143 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %643 = stablehlo.multiply %641, %642 : tensor<1x1x1x1024xf32>
    %644 = stablehlo.broadcast_in_dim %643, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %645 = stablehlo.multiply %638, %644 : tensor<1x14x14x1024xf32>
    %646 = stablehlo.reshape %arg142 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %647 = stablehlo.broadcast_in_dim %646, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %648 = stablehlo.add %645, %647 : tensor<1x14x14x1024xf32>
    %649 = stablehlo.add %601, %648 : tensor<1x14x14x1024xf32>
    %650 = call @relu_7(%649) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %651 = stablehlo.convolution(%650, %arg153) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x256xf32>) -> tensor<1x14x14x256xf32>
    %652 = stablehlo.broadcast_in_dim %arg28, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %653 = stablehlo.broadcast_in_dim %arg29, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %654 = stablehlo.broadcast_in_dim %652, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %655 = stablehlo.subtract %651, %654 : tensor<1x14x14x256xf32>
    %cst_40 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %656 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %657 = stablehlo.add %653, %656 : tensor<1x1x1x256xf32>
    %658 = stablehlo.rsqrt %657 : tensor<1x1x1x256xf32>
    %659 = stablehlo.reshape %arg148 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %660 = stablehlo.multiply %658, %659 : tensor<1x1x1x256xf32>
    %661 = stablehlo.broadcast_in_dim %660, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %662 = stablehlo.multiply %655, %661 : tensor<1x14x14x256xf32>
    %663 = stablehlo.reshape %arg147 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %664 = stablehlo.broadcast_in_dim %663, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %665 = stablehlo.add %662, %664 : tensor<1x14x14x256xf32>
    %666 = call @relu_6(%665) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %667 = stablehlo.convolution(%666, %arg154) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<3x3x256x256xf32>) -> tensor<1x14x14x256xf32>
    %668 = stablehlo.broadcast_in_dim %arg30, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %669 = stablehlo.broadcast_in_dim %arg31, dims = [3] : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %670 = stablehlo.broadcast_in_dim %668, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %671 = stablehlo.subtract %667, %670 : tensor<1x14x14x256xf32>
    %cst_41 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %672 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<1x1x1x256xf32>
    %673 = stablehlo.add %669, %672 : tensor<1x1x1x256xf32>
    %674 = stablehlo.rsqrt %673 : tensor<1x1x1x256xf32>
    %675 = stablehlo.reshape %arg150 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %676 = stablehlo.multiply %674, %675 : tensor<1x1x1x256xf32>
    %677 = stablehlo.broadcast_in_dim %676, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %678 = stablehlo.multiply %671, %677 : tensor<1x14x14x256xf32>
    %679 = stablehlo.reshape %arg149 : (tensor<256xf32>) -> tensor<1x1x1x256xf32>
    %680 = stablehlo.broadcast_in_dim %679, dims = [0, 1, 2, 3] : (tensor<1x1x1x256xf32>) -> tensor<1x14x14x256xf32>
    %681 = stablehlo.add %678, %680 : tensor<1x14x14x256xf32>
    %682 = call @relu_6(%681) : (tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
    %683 = stablehlo.convolution(%682, %arg155) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x256xf32>, tensor<1x1x256x1024xf32>) -> tensor<1x14x14x1024xf32>
    %684 = stablehlo.broadcast_in_dim %arg32, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %685 = stablehlo.broadcast_in_dim %arg33, dims = [3] : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %686 = stablehlo.broadcast_in_dim %684, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %687 = stablehlo.subtract %683, %686 : tensor<1x14x14x1024xf32>
    %cst_42 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %688 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<1x1x1x1024xf32>
    %689 = stablehlo.add %685, %688 : tensor<1x1x1x1024xf32>
    %690 = stablehlo.rsqrt %689 : tensor<1x1x1x1024xf32>
    %691 = stablehlo.reshape %arg152 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %692 = stablehlo.multiply %690, %691 : tensor<1x1x1x1024xf32>
    %693 = stablehlo.broadcast_in_dim %692, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %694 = stablehlo.multiply %687, %693 : tensor<1x14x14x1024xf32>
    %695 = stablehlo.reshape %arg151 : (tensor<1024xf32>) -> tensor<1x1x1x1024xf32>
    %696 = stablehlo.broadcast_in_dim %695, dims = [0, 1, 2, 3] : (tensor<1x1x1x1024xf32>) -> tensor<1x14x14x1024xf32>
    %697 = stablehlo.add %694, %696 : tensor<1x14x14x1024xf32>
    %698 = stablehlo.add %650, %697 : tensor<1x14x14x1024xf32>
    %699 = call @relu_7(%698) : (tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32>
    %700 = stablehlo.convolution(%699, %arg164) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x512xf32>) -> tensor<1x14x14x512xf32>
    %701 = stablehlo.broadcast_in_dim %arg34, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %702 = stablehlo.broadcast_in_dim %arg35, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %703 = stablehlo.broadcast_in_dim %701, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x14x14x512xf32>
    %704 = stablehlo.subtract %700, %703 : tensor<1x14x14x512xf32>
    %cst_43 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %705 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %706 = stablehlo.add %702, %705 : tensor<1x1x1x512xf32>
    %707 = stablehlo.rsqrt %706 : tensor<1x1x1x512xf32>
    %708 = stablehlo.reshape %arg157 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %709 = stablehlo.multiply %707, %708 : tensor<1x1x1x512xf32>
    %710 = stablehlo.broadcast_in_dim %709, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x14x14x512xf32>
    %711 = stablehlo.multiply %704, %710 : tensor<1x14x14x512xf32>
    %712 = stablehlo.reshape %arg156 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %713 = stablehlo.broadcast_in_dim %712, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x14x14x512xf32>
    %714 = stablehlo.add %711, %713 : tensor<1x14x14x512xf32>
    %715 = call @relu_8(%714) : (tensor<1x14x14x512xf32>) -> tensor<1x14x14x512xf32>
    %716 = stablehlo.convolution(%715, %arg165) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x512xf32>, tensor<3x3x512x512xf32>) -> tensor<1x7x7x512xf32>
    %717 = stablehlo.broadcast_in_dim %arg36, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %718 = stablehlo.broadcast_in_dim %arg37, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %719 = stablehlo.broadcast_in_dim %717, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %720 = stablehlo.subtract %716, %719 : tensor<1x7x7x512xf32>
    %cst_44 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %721 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %722 = stablehlo.add %718, %721 : tensor<1x1x1x512xf32>
    %723 = stablehlo.rsqrt %722 : tensor<1x1x1x512xf32>
    %724 = stablehlo.reshape %arg159 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %725 = stablehlo.multiply %723, %724 : tensor<1x1x1x512xf32>
    %726 = stablehlo.broadcast_in_dim %725, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %727 = stablehlo.multiply %720, %726 : tensor<1x7x7x512xf32>
    %728 = stablehlo.reshape %arg158 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %729 = stablehlo.broadcast_in_dim %728, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %730 = stablehlo.add %727, %729 : tensor<1x7x7x512xf32>
    %731 = call @relu_9(%730) : (tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %732 = stablehlo.convolution(%731, %arg166) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x512xf32>, tensor<1x1x512x2048xf32>) -> tensor<1x7x7x2048xf32>
    %733 = stablehlo.broadcast_in_dim %arg38, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %734 = stablehlo.broadcast_in_dim %arg39, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %735 = stablehlo.broadcast_in_dim %733, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %736 = stablehlo.subtract %732, %735 : tensor<1x7x7x2048xf32>
    %cst_45 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %737 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<1x1x1x2048xf32>
    %738 = stablehlo.add %734, %737 : tensor<1x1x1x2048xf32>
    %739 = stablehlo.rsqrt %738 : tensor<1x1x1x2048xf32>
    %740 = stablehlo.reshape %arg161 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %741 = stablehlo.multiply %739, %740 : tensor<1x1x1x2048xf32>
    %742 = stablehlo.broadcast_in_dim %741, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %743 = stablehlo.multiply %736, %742 : tensor<1x7x7x2048xf32>
    %744 = stablehlo.reshape %arg160 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %745 = stablehlo.broadcast_in_dim %744, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %746 = stablehlo.add %743, %745 : tensor<1x7x7x2048xf32>
    %747 = stablehlo.convolution(%699, %arg167) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x14x14x1024xf32>, tensor<1x1x1024x2048xf32>) -> tensor<1x7x7x2048xf32>
    %748 = stablehlo.broadcast_in_dim %arg40, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %749 = stablehlo.broadcast_in_dim %arg41, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %750 = stablehlo.broadcast_in_dim %748, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %751 = stablehlo.subtract %747, %750 : tensor<1x7x7x2048xf32>
    %cst_46 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %752 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<1x1x1x2048xf32>
    %753 = stablehlo.add %749, %752 : tensor<1x1x1x2048xf32>
    %754 = stablehlo.rsqrt %753 : tensor<1x1x1x2048xf32>
    %755 = stablehlo.reshape %arg163 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %756 = stablehlo.multiply %754, %755 : tensor<1x1x1x2048xf32>
    %757 = stablehlo.broadcast_in_dim %756, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %758 = stablehlo.multiply %751, %757 : tensor<1x7x7x2048xf32>
    %759 = stablehlo.reshape %arg162 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %760 = stablehlo.broadcast_in_dim %759, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %761 = stablehlo.add %758, %760 : tensor<1x7x7x2048xf32>
    %762 = stablehlo.add %761, %746 : tensor<1x7x7x2048xf32>
    %763 = call @relu_10(%762) : (tensor<1x7x7x2048xf32>) -> tensor<1x7x7x2048xf32>
    %764 = stablehlo.convolution(%763, %arg174) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x2048xf32>, tensor<1x1x2048x512xf32>) -> tensor<1x7x7x512xf32>
    %765 = stablehlo.broadcast_in_dim %arg42, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %766 = stablehlo.broadcast_in_dim %arg43, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %767 = stablehlo.broadcast_in_dim %765, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %768 = stablehlo.subtract %764, %767 : tensor<1x7x7x512xf32>
    %cst_47 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %769 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %770 = stablehlo.add %766, %769 : tensor<1x1x1x512xf32>
    %771 = stablehlo.rsqrt %770 : tensor<1x1x1x512xf32>
    %772 = stablehlo.reshape %arg169 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %773 = stablehlo.multiply %771, %772 : tensor<1x1x1x512xf32>
    %774 = stablehlo.broadcast_in_dim %773, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %775 = stablehlo.multiply %768, %774 : tensor<1x7x7x512xf32>
    %776 = stablehlo.reshape %arg168 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %777 = stablehlo.broadcast_in_dim %776, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %778 = stablehlo.add %775, %777 : tensor<1x7x7x512xf32>
    %779 = call @relu_9(%778) : (tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %780 = stablehlo.convolution(%779, %arg175) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x512xf32>, tensor<3x3x512x512xf32>) -> tensor<1x7x7x512xf32>
    %781 = stablehlo.broadcast_in_dim %arg44, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %782 = stablehlo.broadcast_in_dim %arg45, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %783 = stablehlo.broadcast_in_dim %781, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %784 = stablehlo.subtract %780, %783 : tensor<1x7x7x512xf32>
    %cst_48 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %785 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %786 = stablehlo.add %782, %785 : tensor<1x1x1x512xf32>
    %787 = stablehlo.rsqrt %786 : tensor<1x1x1x512xf32>
    %788 = stablehlo.reshape %arg171 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %789 = stablehlo.multiply %787, %788 : tensor<1x1x1x512xf32>
    %790 = stablehlo.broadcast_in_dim %789, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %791 = stablehlo.multiply %784, %790 : tensor<1x7x7x512xf32>
    %792 = stablehlo.reshape %arg170 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %793 = stablehlo.broadcast_in_dim %792, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %794 = stablehlo.add %791, %793 : tensor<1x7x7x512xf32>
    %795 = call @relu_9(%794) : (tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %796 = stablehlo.convolution(%795, %arg176) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x512xf32>, tensor<1x1x512x2048xf32>) -> tensor<1x7x7x2048xf32>
    %797 = stablehlo.broadcast_in_dim %arg46, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %798 = stablehlo.broadcast_in_dim %arg47, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %799 = stablehlo.broadcast_in_dim %797, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %800 = stablehlo.subtract %796, %799 : tensor<1x7x7x2048xf32>
    %cst_49 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %801 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<1x1x1x2048xf32>
    %802 = stablehlo.add %798, %801 : tensor<1x1x1x2048xf32>
    %803 = stablehlo.rsqrt %802 : tensor<1x1x1x2048xf32>
    %804 = stablehlo.reshape %arg173 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %805 = stablehlo.multiply %803, %804 : tensor<1x1x1x2048xf32>
    %806 = stablehlo.broadcast_in_dim %805, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %807 = stablehlo.multiply %800, %806 : tensor<1x7x7x2048xf32>
    %808 = stablehlo.reshape %arg172 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %809 = stablehlo.broadcast_in_dim %808, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %810 = stablehlo.add %807, %809 : tensor<1x7x7x2048xf32>
    %811 = stablehlo.add %763, %810 : tensor<1x7x7x2048xf32>
    %812 = call @relu_10(%811) : (tensor<1x7x7x2048xf32>) -> tensor<1x7x7x2048xf32>
    %813 = stablehlo.convolution(%812, %arg183) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x2048xf32>, tensor<1x1x2048x512xf32>) -> tensor<1x7x7x512xf32>
    %814 = stablehlo.broadcast_in_dim %arg48, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %815 = stablehlo.broadcast_in_dim %arg49, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %816 = stablehlo.broadcast_in_dim %814, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %817 = stablehlo.subtract %813, %816 : tensor<1x7x7x512xf32>
    %cst_50 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %818 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %819 = stablehlo.add %815, %818 : tensor<1x1x1x512xf32>
    %820 = stablehlo.rsqrt %819 : tensor<1x1x1x512xf32>
    %821 = stablehlo.reshape %arg178 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %822 = stablehlo.multiply %820, %821 : tensor<1x1x1x512xf32>
    %823 = stablehlo.broadcast_in_dim %822, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %824 = stablehlo.multiply %817, %823 : tensor<1x7x7x512xf32>
    %825 = stablehlo.reshape %arg177 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %826 = stablehlo.broadcast_in_dim %825, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %827 = stablehlo.add %824, %826 : tensor<1x7x7x512xf32>
    %828 = call @relu_9(%827) : (tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %829 = stablehlo.convolution(%828, %arg184) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x512xf32>, tensor<3x3x512x512xf32>) -> tensor<1x7x7x512xf32>
    %830 = stablehlo.broadcast_in_dim %arg50, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %831 = stablehlo.broadcast_in_dim %arg51, dims = [3] : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %832 = stablehlo.broadcast_in_dim %830, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %833 = stablehlo.subtract %829, %832 : tensor<1x7x7x512xf32>
    %cst_51 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %834 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<1x1x1x512xf32>
    %835 = stablehlo.add %831, %834 : tensor<1x1x1x512xf32>
    %836 = stablehlo.rsqrt %835 : tensor<1x1x1x512xf32>
    %837 = stablehlo.reshape %arg180 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %838 = stablehlo.multiply %836, %837 : tensor<1x1x1x512xf32>
    %839 = stablehlo.broadcast_in_dim %838, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %840 = stablehlo.multiply %833, %839 : tensor<1x7x7x512xf32>
    %841 = stablehlo.reshape %arg179 : (tensor<512xf32>) -> tensor<1x1x1x512xf32>
    %842 = stablehlo.broadcast_in_dim %841, dims = [0, 1, 2, 3] : (tensor<1x1x1x512xf32>) -> tensor<1x7x7x512xf32>
    %843 = stablehlo.add %840, %842 : tensor<1x7x7x512xf32>
    %844 = call @relu_9(%843) : (tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
    %845 = stablehlo.convolution(%844, %arg185) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x7x7x512xf32>, tensor<1x1x512x2048xf32>) -> tensor<1x7x7x2048xf32>
    %846 = stablehlo.broadcast_in_dim %arg52, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %847 = stablehlo.broadcast_in_dim %arg53, dims = [3] : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %848 = stablehlo.broadcast_in_dim %846, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %849 = stablehlo.subtract %845, %848 : tensor<1x7x7x2048xf32>
    %cst_52 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %850 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<1x1x1x2048xf32>
    %851 = stablehlo.add %847, %850 : tensor<1x1x1x2048xf32>
    %852 = stablehlo.rsqrt %851 : tensor<1x1x1x2048xf32>
    %853 = stablehlo.reshape %arg182 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %854 = stablehlo.multiply %852, %853 : tensor<1x1x1x2048xf32>
    %855 = stablehlo.broadcast_in_dim %854, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %856 = stablehlo.multiply %849, %855 : tensor<1x7x7x2048xf32>
    %857 = stablehlo.reshape %arg181 : (tensor<2048xf32>) -> tensor<1x1x1x2048xf32>
    %858 = stablehlo.broadcast_in_dim %857, dims = [0, 1, 2, 3] : (tensor<1x1x1x2048xf32>) -> tensor<1x7x7x2048xf32>
    %859 = stablehlo.add %856, %858 : tensor<1x7x7x2048xf32>
    %860 = stablehlo.add %812, %859 : tensor<1x7x7x2048xf32>
    %861 = call @relu_10(%860) : (tensor<1x7x7x2048xf32>) -> tensor<1x7x7x2048xf32>
    %cst_53 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %862 = stablehlo.reduce(%861 init: %cst_53) applies stablehlo.add across dimensions = [1, 2] : (tensor<1x7x7x2048xf32>, tensor<f32>) -> tensor<1x2048xf32>
    %cst_54 = stablehlo.constant dense<4.900000e+01> : tensor<f32>
    %863 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<1x2048xf32>
    %864 = stablehlo.divide %862, %863 : tensor<1x2048xf32>
    %865 = stablehlo.dot_general %864, %arg266, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x2048xf32>, tensor<2048x1000xf32>) -> tensor<1x1000xf32>
    %866 = stablehlo.reshape %arg265 : (tensor<1000xf32>) -> tensor<1x1000xf32>
    %867 = stablehlo.add %865, %866 : tensor<1x1000xf32>
    return %867 : tensor<1x1000xf32>
  }
  func.func private @relu(%arg0: tensor<1x112x112x64xf32>) -> tensor<1x112x112x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x112x112x64xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x112x112x64xf32>
    return %1 : tensor<1x112x112x64xf32>
  }
  func.func private @relu_0(%arg0: tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x56x56x64xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x56x56x64xf32>
    return %1 : tensor<1x56x56x64xf32>
  }
  func.func private @relu_1(%arg0: tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x56x56x256xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x56x56x256xf32>
    return %1 : tensor<1x56x56x256xf32>
  }
  func.func private @relu_2(%arg0: tensor<1x56x56x128xf32>) -> tensor<1x56x56x128xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x56x56x128xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x56x56x128xf32>
    return %1 : tensor<1x56x56x128xf32>
  }
  func.func private @relu_3(%arg0: tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x28x28x128xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x28x28x128xf32>
    return %1 : tensor<1x28x28x128xf32>
  }
  func.func private @relu_4(%arg0: tensor<1x28x28x512xf32>) -> tensor<1x28x28x512xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x28x28x512xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x28x28x512xf32>
    return %1 : tensor<1x28x28x512xf32>
  }
  func.func private @relu_5(%arg0: tensor<1x28x28x256xf32>) -> tensor<1x28x28x256xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x28x28x256xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x28x28x256xf32>
    return %1 : tensor<1x28x28x256xf32>
  }
  func.func private @relu_6(%arg0: tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x14x14x256xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x14x14x256xf32>
    return %1 : tensor<1x14x14x256xf32>
  }
  func.func private @relu_7(%arg0: tensor<1x14x14x1024xf32>) -> tensor<1x14x14x1024xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x14x14x1024xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x14x14x1024xf32>
    return %1 : tensor<1x14x14x1024xf32>
  }
  func.func private @relu_8(%arg0: tensor<1x14x14x512xf32>) -> tensor<1x14x14x512xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x14x14x512xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x14x14x512xf32>
    return %1 : tensor<1x14x14x512xf32>
  }
  func.func private @relu_9(%arg0: tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x7x7x512xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x7x7x512xf32>
    return %1 : tensor<1x7x7x512xf32>
  }
  func.func private @relu_10(%arg0: tensor<1x7x7x2048xf32>) -> tensor<1x7x7x2048xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x7x7x2048xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<1x7x7x2048xf32>
    return %1 : tensor<1x7x7x2048xf32>
  }
}
