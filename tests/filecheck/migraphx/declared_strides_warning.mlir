// A value whose declared strides contradict what its op computes takes the computed strides,
// with a located warning that --verify-diagnostics checks like any other: the transpose of a
// row-major 2x3 is a 3x2 view with strides 1x3, not the 2x1 this kernel declares. The exp
// then runs on the row-major input and the transpose moves its result.
// RUN: convcanon-opt %s -p migraphx-to-tosa --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @contradicted
// CHECK:       "tosa.exp"({{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:       "tosa.transpose"({{.*}}) <{perms = array<i32: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
func.func @contradicted(%x: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<3x2xf32, 2x1> {
  // expected-warning @+1 {{%0 is declared with strides 2x1, but migraphx.transpose computes 1x3: the computed strides are used}}
  %0 = migraphx.transpose %x {permutation = [1, 0]} : <2x3xf32, 3x1> -> <3x2xf32, 2x1>
  %1 = migraphx.exp %0 : <3x2xf32, 2x1> -> <3x2xf32, 2x1>
  return %1 : !migraphx.shaped<3x2xf32, 2x1>
}

// -----

// Declared as computed: no warning (an unexpected one fails --verify-diagnostics), same lowering.
// CHECK-LABEL: func.func @agreed
// CHECK:       "tosa.exp"({{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:       "tosa.transpose"({{.*}}) <{perms = array<i32: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
func.func @agreed(%x: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<3x2xf32, 2x1> {
  %0 = migraphx.transpose %x {permutation = [1, 0]} : <2x3xf32, 3x1> -> <3x2xf32, 1x3>
  %1 = migraphx.exp %0 : <3x2xf32, 1x3> -> <3x2xf32, 2x1>
  return %1 : !migraphx.shaped<3x2xf32, 2x1>
}
