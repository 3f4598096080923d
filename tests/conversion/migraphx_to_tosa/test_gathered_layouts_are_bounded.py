"""migraphx-to-tosa builds one constant index per element of a layout it gathers (one that does
not tile memory) and per update of a scatter: those constants are refused past the elements a
dense constant may hold, before any is computed, at the argument's function or the op. A small
buffer could describe billions of elements (strides 1x1, or 0x0): the lowering allocated them
all (out of memory, or minutes and tens of GB without a limit), and an i32-overflowing buffer
was an error without a location."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from .test_bad_input import run_opt

LIMIT = 3 << 30  # address space: the unbounded lowering fails at once instead of swapping


def _function(arguments: str, body: str, result: str) -> str:
    """`@main(arguments) -> result` whose one op `body` defines %0."""
    return (
        f"func.func @main({arguments}) -> !migraphx.shaped<{result}> {{\n"
        f"  %0 = {body} -> <{result}>\n"
        f"  return %0 : !migraphx.shaped<{result}>\n}}\n"
    )


BIG, BIG_BROADCAST = "20000x20000xf32, 20000x1", "20000x20000xf32, 0x0"
OVERLAPPING_ARGUMENT = _function(
    "%x: !migraphx.shaped<20000x20000xf32, 1x1>",
    "migraphx.relu %x : <20000x20000xf32, 1x1>",
    BIG,
)
SPARSE_RESULT = _function(
    "%x: !migraphx.shaped<2x2xf32, 2x1>",
    "migraphx.relu %x : <2x2xf32, 2x1>",
    "2x2xf32, 1000000000x3",
)
BROADCAST_UPDATES = _function(
    f"%d: !migraphx.shaped<{BIG}>, %i: !migraphx.shaped<20000x20000xsi64, 0x0>, "
    f"%u: !migraphx.shaped<{BIG_BROADCAST}>",
    "migraphx.scatter_none %d, %i, %u {axis = 0 : i64} : "
    f"<{BIG}>, <20000x20000xsi64, 0x0>, <{BIG_BROADCAST}>",
    BIG,
)
PAST_I32 = _function(
    "%x: !migraphx.shaped<2x2xf32, 3000000000x3>",
    "migraphx.relu %x : <2x2xf32, 3000000000x3>",
    "2x2xf32, 2x1",
)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.parametrize(
    "text, where, message",
    [
        (
            OVERLAPPING_ARGUMENT,
            "1:1",
            "'func.func' gathers !migraphx.shaped<20000x20000xf32, 1x1> through 400000000 "
            "constant indices, over the limit of 4194304 elements of a dense constant",
        ),
        (
            SPARSE_RESULT,
            "3:3",
            "'func.return' gathers !migraphx.shaped<2x2xf32, 1000000000x3> through 1000000004 "
            "constant indices, over the limit of 4194304 elements of a dense constant",
        ),
        (
            BROADCAST_UPDATES,
            "2:3",
            "'migraphx.scatter_none' scatters 400000000 updates: their offsets would be a dense "
            "constant over the limit of 4194304 elements",
        ),
        (
            PAST_I32,
            "1:1",
            "'func.func' gathers !migraphx.shaped<2x2xf32, 3000000000x3> from a 3000000004-element "
            "buffer: tosa.gather indexes with i32",
        ),
    ],
    ids=["overlapping argument", "sparse result", "broadcast scatter updates", "past i32"],
)
def test_a_huge_gather_or_scatter_constant_is_refused_at_its_place(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    done, out = run_opt(tmp_path, text, _limited)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[0] == f"{tmp_path / 'in.mlir'}:{where}: error: {message}"
    assert not out.exists()
