"""Example models for trying convcanon from Python.

- `convcanon.examples.small_cnn`: the flax CNN that `examples/small_cnn.stablehlo.mlir` was
  exported from (`model`, `params()`, `example_input()`, `apply`, `example_arguments()`,
  `export_stablehlo()`); it needs
  JAX and flax: `pip install 'convcanon[examples]'`.
"""
