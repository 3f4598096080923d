"""Convert a module between StableHLO and MHLO in place, with the passes that ship in jaxlib.

MHLO inputs for the `canonicalize-conv` twin come from `stablehlo-legalize-to-hlo`; XLA runs an MHLO
module after `hlo-legalize-to-stablehlo`. Both passes are registered once per process.
"""

from __future__ import annotations

from functools import cache

from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import mhlo


@cache
def _register() -> None:
    mhlo.register_mhlo_passes()


def _run(module: ir.Module, pass_name: str) -> None:
    _register()
    with module.context:
        passmanager.PassManager.parse(f"builtin.module({pass_name})").run(module.operation)


def to_mhlo(module: ir.Module) -> None:
    _run(module, "stablehlo-legalize-to-hlo")


def to_stablehlo(module: ir.Module) -> None:
    _run(module, "hlo-legalize-to-stablehlo")
