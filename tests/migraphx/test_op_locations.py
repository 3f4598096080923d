"""Parsed half-B ops carry `file:line:col` locations: lowering and verifier errors point at the op,
and printing is unchanged (locations are never printed, round trips stay identical)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.xdsl_io import parse_file_text, print_file

OPT = Path(sys.executable).with_name("convcanon-opt")
SEED_FIXED = Path(__file__).parent / "fixtures" / "seed003_nhwc_conv.txt"

# the unlowerable op sits on line 4, indented by 4 (column 5)
BAD = """\
func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {
  %1 = migraphx.exp %x : <2xf32, 1> -> <2xf32, 1>

    %c = arith.constant 1.0 : f32
  return %1 : !migraphx.shaped<2xf32, 1>
}
"""

WRONG_RESULT = """\
func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<3xf32, 1> {
  %1 = migraphx.relu %x : <2xf32, 1> -> <2xf32, 1>
   %2 = migraphx.exp %1 : <2xf32, 1> -> <3xf32, 1>
  return %2 : !migraphx.shaped<3xf32, 1>
}
"""


def _opt(tmp_path: Path, text: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    source = tmp_path / "bad.mlir"
    source.write_text(text)
    out = tmp_path / "out.mlir"
    done = subprocess.run(
        [str(OPT), "bad.mlir", *args, "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    return done, out


def test_unlowerable_op_is_reported_at_its_line_and_column(tmp_path: Path) -> None:
    done, out = _opt(tmp_path, BAD, "-p", "migraphx-to-tosa")
    assert done.returncode == 1
    assert done.stderr == (
        "bad.mlir:4:5: error: 'arith.constant' has no lowering to TOSA\n"
        f"{BAD.splitlines()[3]}\n"
        "    ^\n"
    )
    assert not out.exists()


def test_verifier_error_is_reported_at_its_line_and_column(tmp_path: Path) -> None:
    done, out = _opt(tmp_path, WRONG_RESULT)
    assert done.returncode == 1
    assert done.stderr.startswith("bad.mlir:3:4: error: ")
    assert "declared result lens [3]" in done.stderr
    assert not out.exists()


def test_every_parsed_op_has_the_location_of_its_line() -> None:
    module = parse_file_text(BAD, "bad.mlir")
    located = {
        op.name: (op.location.line.data, op.location.column.data)
        for op in module.walk()
        if isinstance(op.location, FileLineColLoc)
    }
    assert located == {
        "func.func": (1, 1),
        "migraphx.exp": (2, 3),
        "arith.constant": (4, 5),
        "func.return": (5, 3),
    }


def test_locations_do_not_change_printing_of_imported_modules() -> None:
    printed = print_file(import_program(SEED_FIXED.read_text(), "seed.txt"))
    reparsed = parse_file_text(printed, "printed.mlir")
    assert any(isinstance(op.location, FileLineColLoc) for op in reparsed.walk())
    assert print_file(reparsed) == printed
    assert "loc(" not in printed


def test_imported_ops_point_into_the_program() -> None:
    program = (
        "v = @param:v -> float_type, {3}, {1}\n"
        "@1 = multibroadcast[out_lens={4, 3},out_dyn_dims={}](v) -> float_type, {4, 3}, {0, 1}\n"
        "  @2 = @return(@1)\n"
    )
    module = import_program(program, "prog.txt")
    with pytest.raises(ConvcanonError) as caught:
        migraphx_to_tosa(module, {})
    rendered = caught.value.render()
    assert rendered.startswith("prog.txt:3:8: error: 'func.return' writes a result of broadcast")
    located = [op.location for op in module.walk() if op.name == "migraphx.multibroadcast"]
    assert located == [FileLineColLoc(StringAttr("prog.txt"), IntAttr(2), IntAttr(6))]


_NOT_NEWLINES = ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\r"]  # splitlines' others
_CHAIN = [
    "  %1 = migraphx.relu %x : <2xf32, 1> -> <2xf32, 1>",
    "  %2 = migraphx.exp %1 : <2xf32, 1> -> <2xf32, 1>",
    "  %3 = migraphx.relu %2 : <2xf32, 1> -> <2xf32, 1>",
    "  %4 = migraphx.exp %3 : <2xf32, 1> -> <2xf32, 1>",
]
_COMMENTS = st.sampled_from(
    [
        "  // expected-error @+1 {{'migraphx.exp' op declared result lens}}",
        "  // the migraphx.relu below, then migraphx.exp (",
        '  // "quoted migraphx.relu" and func.return',
        "// %9 = migraphx.exp %x : <2xf32, 1> -> <2xf32, 1>",
        *(f"  // a line of MLIR ends at a newline only:{c}not here" for c in _NOT_NEWLINES),
    ]
)
_TRAILING = st.sampled_from(["", "  // not migraphx.exp <", ' // "a // b" migraphx.relu('])


def _assert_located_at(lines: list[str], expected: list[tuple[str, int]]) -> None:
    """`lines` (a function's header and ops), closed by `return %4`: each op at its line."""
    lines = [*lines, "  return %4 : !migraphx.shaped<2xf32, 1>"]
    expected = [*expected, ("func.return", len(lines))]
    module = parse_file_text("\n".join([*lines, "}", ""]), "c.mlir")
    located = [
        (op.name, op.location.line.data)
        for op in module.walk()
        if op.name != "builtin.module" and isinstance(op.location, FileLineColLoc)
    ]
    assert located == expected


@settings(max_examples=100, deadline=None)
@given(
    comments=st.lists(st.lists(_COMMENTS, max_size=2), min_size=5, max_size=5),
    trailing=st.lists(_TRAILING, min_size=4, max_size=4),
)
def test_an_op_named_in_a_comment_does_not_move_any_ops_location(
    comments: list[list[str]], trailing: list[str]
) -> None:
    """Comments name ops (an `expected-error` line quotes the op it expects): each op is still
    located at its own line, so diagnostics and `--verify-diagnostics` point at it."""
    lines = ["func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {"]
    expected: list[tuple[str, int]] = [("func.func", 1)]
    for before, op, tail in zip(comments, _CHAIN, trailing, strict=False):
        lines += before
        lines.append(op + tail)
        expected.append((op.split()[2], len(lines)))
    lines += comments[-1]
    _assert_located_at(lines, expected)


_SPLITS = st.sampled_from(["one line", "name ends its line", "type on its own line"])


@settings(max_examples=50, deadline=None)
@given(splits=st.lists(_SPLITS, min_size=4, max_size=4))
def test_an_op_written_over_several_lines_is_at_its_first_line(splits: list[str]) -> None:
    """MLIR's syntax lets an op's operands and types follow on later lines (rocMLIR's own tests
    write `%0 = migraphx.quant_dot` alone on a line, its operands below): the op is still at the
    line it starts on. An op whose name ended its line was not found, so it had no location and
    every later op of its name took the line of the next one."""
    lines = ["func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {"]
    expected: list[tuple[str, int]] = [("func.func", 1)]
    for op, split in zip(_CHAIN, splits, strict=True):
        expected.append((op.split()[2], len(lines) + 1))
        result, _, name, operand = op.split()[:4]
        types = op.split(" : ")[1]
        name_part = f"  {result} = {name}"
        if split == "one line":
            lines.append(op)
        elif split == "name ends its line":
            lines += [name_part, f"      {operand}", f"    : {types}"]
        else:
            lines += [f"{name_part} {operand}", f"    : {types}"]
    _assert_located_at(lines, expected)


def test_a_bare_return_is_located_and_later_returns_keep_their_lines() -> None:
    """`return` with no operands ends its line; it was not found, so the next function's
    `return %y` was placed at nothing and a verifier error there had no line."""
    text = (
        "func.func @f(%x: !migraphx.shaped<2xf32, 1>) {\n"
        "  return\n"
        "}\n"
        "func.func @g(%y: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
        "  return %y : !migraphx.shaped<2xf32, 1>\n"
        "}\n"
    )
    module = parse_file_text(text, "r.mlir")
    returns = [op.location for op in module.walk() if op.name == "func.return"]
    assert returns == [
        FileLineColLoc(StringAttr("r.mlir"), IntAttr(2), IntAttr(3)),
        FileLineColLoc(StringAttr("r.mlir"), IntAttr(5), IntAttr(3)),
    ]
