// min-transposes: 0: the table, the token ids, the position embeddings and the result are all row-major
func.func @main(%table: !migraphx.shaped<16x8xf32, 8x1>, %ids: !migraphx.shaped<2x5xsi64, 5x1>, %pos: !migraphx.shaped<5x8xf32, 8x1>) -> !migraphx.shaped<2x5x8xf32, 40x8x1> {
  %e = migraphx.gather %table, %ids {axis = 0 : i64} : <16x8xf32, 8x1>, <2x5xsi64, 5x1> -> <2x5x8xf32, 40x8x1>
  %pos_b = migraphx.multibroadcast %pos {out_dyn_dims = [], out_lens = [2, 5, 8]} : <5x8xf32, 8x1> -> <2x5x8xf32, 0x8x1>
  %sum = migraphx.add %e, %pos_b : <2x5x8xf32, 40x8x1>, <2x5x8xf32, 0x8x1> -> <2x5x8xf32, 40x8x1>
  return %sum : !migraphx.shaped<2x5x8xf32, 40x8x1>
}
