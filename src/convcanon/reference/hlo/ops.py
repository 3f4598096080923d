"""The one table of op handlers, built from each op family's, and its lookup by op name."""

from __future__ import annotations

from convcanon.reference.hlo import checks, contraction, control_flow, elementwise, reduction, shape
from convcanon.reference.hlo.machine import Handler

OPS: dict[str, Handler] = {}
for _family in (elementwise, shape, contraction, reduction, control_flow, checks):
    assert not OPS.keys() & _family.HANDLERS.keys(), "an op has one handler"
    OPS.update(_family.HANDLERS)

_HLO = {"stablehlo", "mhlo"}


def handler_of(name: str) -> Handler | None:
    """The handler of op `name`: `stablehlo.x` and `mhlo.x` share `x`'s."""
    handler = OPS.get(name.split(".", 1)[-1]) if name.split(".")[0] in _HLO else None
    return handler or OPS.get(name)
