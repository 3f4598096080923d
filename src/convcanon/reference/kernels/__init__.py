"""numpy kernels with StableHLO semantics, shared by the HLO and the migraphx/TOSA interpreters.

Every kernel works on whole arrays (strided views, im2col + batched matmul): no per-element Python
loops, so a ResNet-sized forward pass runs in seconds. Kernels never mutate their inputs. One
module per concern: `budget` (the memory limit every kernel plans against), `movement`
(transpose, broadcast, slice, pad), `precision` (accumulation types, element bits),
`contraction` (dot_general, convolution by im2col), `reduction` (reduce, reduce_window),
`indexing` (gather, scatter, select_and_scatter), `sort`, `special` (erf, the one kernel with a
Python call per element, paid for as such) and `blas` (OpenBLAS's threads).
"""
