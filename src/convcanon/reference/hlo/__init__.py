"""A numpy interpreter over jaxlib's MLIR IR for StableHLO and MHLO modules.

Ops are dispatched by name from one table (`ops.OPS`) that holds both dialects' spellings
(`stablehlo.add` and `mhlo.add` share a handler: their attribute names agree), built from one
table per op family (`elementwise`, `shape`, `contraction`, `reduction`, `control_flow`,
`checks`). Values are numpy arrays in a storage dtype per element type (`values`: sub-byte
integers live in int8/uint8 and are wrapped after every op); tuples are Python tuples. chlo ops are
first expanded by jaxlib's own `chlo-legalize-to-stablehlo`, so their semantics are upstream's.
Every result's buffer, and every kernel's planned peak, is checked against the memory limit before
anything is allocated; going over is an error at the op (`loop`).

Regions of `while`, `case`, `if` and `sort` may use values of the enclosing blocks (StableHLO does
not isolate them), so blocks run in a chain of scopes. Each block is read from the IR once, and a
value is dropped after its last use, so a function holds only its live values.

Callers import it through `convcanon.reference.hlo_interp`.
"""
