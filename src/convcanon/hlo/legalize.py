"""Convert a module between StableHLO and MHLO in place, with the passes that ship in jaxlib.

MHLO inputs for the `canonicalize-conv` twin come from `stablehlo-legalize-to-hlo`; XLA runs an MHLO
module after `hlo-legalize-to-stablehlo`. The interpreter expands chlo ops with
`chlo-legalize-to-stablehlo`.
"""

from __future__ import annotations

from jaxlib.mlir import ir, passmanager

from convcanon.hlo.context import register_hlo_passes


def _run(module: ir.Module, pass_name: str) -> None:
    register_hlo_passes()
    with module.context:
        passmanager.PassManager.parse(f"builtin.module({pass_name})").run(module.operation)


def to_mhlo(module: ir.Module) -> None:
    _run(module, "stablehlo-legalize-to-hlo")


def to_stablehlo(module: ir.Module) -> None:
    _run(module, "hlo-legalize-to-stablehlo")


def chlo_to_stablehlo(module: ir.Module) -> None:
    """Expand chlo ops (square, erf, top_k, broadcasting binaries, ...) into StableHLO in place,
    with upstream's own `chlo-legalize-to-stablehlo`: their meaning is then exactly jaxlib's."""
    register_hlo_passes()
    with module.context:
        pipeline = "builtin.module(func.func(chlo-legalize-to-stablehlo))"
        passmanager.PassManager.parse(pipeline).run(module.operation)
