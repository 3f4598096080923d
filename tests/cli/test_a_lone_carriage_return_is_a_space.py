"""MLIR's lexer reads a lone carriage return as a space and its source manager counts lines at
`\\n` alone; convcanon read every `\\r` as a line end, as Python's text mode does. A file with
one (an old Mac editor's line end, a pasted fragment) then had its errors a line or more past
where mlir-opt puts them, and a string attribute holding one was refused as unterminated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import MIGRAPHX_EXP, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MODULE_LINES = [
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {",
    "  %0 = stablehlo.abs %x : tensor<4xf32>",
    "  %1 = stablehlo.exponential %0 : tensor<4xf32>",
    "  %2 = stablehlo.bogus %1 : tensor<4xf32>",
    "  return %2 : tensor<4xf32>",
    "}",
]
_LOCATION = re.compile(r"^\S+?:(\d+):(\d+): error: ", re.M)


def _first_error_at(stderr: str) -> tuple[int, int]:
    found = _LOCATION.search(stderr)
    assert found, stderr
    return int(found[1]), int(found[2])


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ends=st.lists(st.sampled_from(["\n", "\r\n", "\r", "\r\r\n"]), min_size=6, max_size=6),
    inside=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_errors_are_where_mlir_opt_puts_them(
    opt: Runner, tmp_path_factory: pytest.TempPathFactory, ends: list[str], inside: list[bool]
) -> None:
    """Line ends of every kind, and carriage returns inside lines: the first error's line and
    column are iree-opt's."""
    lines = [
        line.replace(" ", " \r", 1) if cr else line
        for line, cr in zip(MODULE_LINES, inside, strict=True)
    ]
    source = tmp_path_factory.mktemp("cr") / "m.mlir"
    source.write_bytes("".join(a + b for a, b in zip(lines, ends, strict=True)).encode())
    ours = opt(source)
    theirs = iree_opt(source, check=False)
    assert ours.code == theirs.returncode == 1
    assert _first_error_at(ours.err) == _first_error_at(theirs.stderr), (ours.err, theirs.stderr)


def test_a_string_keeps_its_carriage_return(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "s.mlir"
    source.write_bytes(b'func.func @f() attributes {s = "a\rb"} {\n  return\n}\n')
    ours = opt(source)
    assert ours.code == 0, ours.err
    assert '{s = "a\\0Db"}' in ours.out
    assert ours.out == iree_opt(source).stdout


def test_a_migraphx_module_counts_lines_as_mlir_does(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "m.mlir"
    broken = MIGRAPHX_EXP.replace("{\n", "{\r", 1).replace("migraphx.exp", "migraphx.bogus")
    source.write_bytes(broken.encode())
    ours = opt(source, "-p", "migraphx-to-tosa")
    assert ours.code == 1 and _first_error_at(ours.err)[0] == 1, ours.err
