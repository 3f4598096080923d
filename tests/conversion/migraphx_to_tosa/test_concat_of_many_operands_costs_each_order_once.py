"""A concat's lowering compares the dim orders its operands come in, each order costed over every
operand: once per distinct order (of the largest few), not once per operand, or a printed
program concatenating 10^4 values costs 10^8 steps before it emits anything."""

from __future__ import annotations

import pytest
from _counting import record_calls  # pyright: ignore[reportMissingImports]

from convcanon.conversion.migraphx_to_tosa import emitter
from convcanon.driver import transform_text
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file

OPERANDS = 300


def _concat(strides: list[str]) -> str:
    """`concat` of OPERANDS [2, 3] values along axis 0, the k-th argument of strides[k % n]."""
    params = "".join(
        f"x{k} = @param:x{k} -> float_type, {{2, 3}}, {{{strides[k % len(strides)]}}}\n"
        for k in range(OPERANDS)
    )
    names = ",".join(f"x{k}" for k in range(OPERANDS))
    return (
        f"{params}@1 = concat[axis=0]({names}) -> float_type, {{{2 * OPERANDS}, 3}}, {{3, 1}}\n"
        "@2 = @return(@1)\n"
    )


@pytest.mark.parametrize("strides", [["3, 1"], ["3, 1", "1, 2"]], ids=["one order", "two"])
def test_a_concat_costs_each_operand_once_per_distinct_order(
    strides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = print_file(import_program(_concat(strides), "p.txt"))
    costed = record_calls(monkeypatch, emitter, "frame_cost")
    lowered = transform_text(text, "p.mlir", "migraphx-to-tosa")
    assert "tosa.concat" in lowered
    assert len(costed) <= (len(strides) + 1) * OPERANDS + 10  # (unbounded: OPERANDS**2)
