"""Columns count UTF-8 bytes, as MLIR's (jaxlib's) parser counts them, on every path that reports
one: after non-ASCII text on a line, the migraphx/TOSA parser (xDSL counts characters), the
readers' own checks (`offset_loc`), `--verify-diagnostics`' comments and MIGraphX program text
pointed left of the place."""

from __future__ import annotations

from pathlib import Path

from cli_support import Runner  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import offset_loc

# text a string attribute may hold: no quote, backslash, newline or control character
STRING = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters='"\\'), max_size=8
)


def _byte_column(line: str, token: str) -> int:
    return len(line[: line.index(token)].encode()) + 1


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(string=STRING)
def test_both_halves_point_where_mlir_does(opt: Runner, tmp_path: Path, string: str) -> None:
    """The same bad type after the same string: jaxlib's column (MLIR, the reference) and the
    migraphx parser's are the byte column of the bad element type."""
    hlo_line = f'  %0 = stablehlo.abs %a {{n = "{string}"}} : tensor<2xq32>'
    hlo = tmp_path / "h.mlir"
    hlo.write_text(
        f"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {{\n{hlo_line}\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    migraphx_line = f'  %0 = migraphx.exp %x {{n = "{string}"}} : <2xq32, 1> -> <2xf32, 1>'
    migraphx = tmp_path / "m.mlir"
    migraphx.write_text(
        "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
        f"{migraphx_line}\n  func.return %0 : !migraphx.shaped<2xf32, 1>\n}}\n"
    )
    from_mlir = opt(hlo).err
    assert from_mlir.startswith(f"{hlo}:2:{_byte_column(hlo_line, 'q32')}: error: ")
    from_xdsl = opt(migraphx, "-p", "migraphx-to-tosa").err
    assert from_xdsl.startswith(f"{migraphx}:2:{_byte_column(migraphx_line, 'q32')}: error: ")


@given(
    text=st.text(alphabet="ab\né€𝄞", max_size=20),
    data=st.data(),
)
def test_offset_loc_counts_bytes(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    loc = offset_loc(text, offset, "t.mlir")
    assert (loc.line, loc.col) == (
        text.count("\n", 0, offset) + 1,
        len(text[line_start:offset].encode()) + 1,
    )


def test_an_expectation_never_produced_is_at_its_byte_column(opt: Runner, tmp_path: Path) -> None:
    comment = '  %0 = stablehlo.abs %a {n = "é€"} : tensor<2xf32> // ½ expected-error {{never}}'
    module = tmp_path / "m.mlir"
    module.write_text(
        f"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {{\n{comment}\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    result = opt(module, "--verify-diagnostics")
    column = _byte_column(comment, "expected-")
    # the line under it, without a caret: its columns are not a terminal's (as mlir-opt prints it)
    assert result.err == (
        f'{module}:2:{column}: error: expected error "never" was not produced\n{comment}\n'
    )


def test_a_program_error_is_at_its_byte_column(cc: Runner, tmp_path: Path) -> None:
    line = "p = @param:é€ -> flot_type, {2}, {1}"
    program = tmp_path / "p.txt"
    program.write_text(f"{line}\nr = @return(p)\n")
    result = cc("import-migraphx", program)
    assert result.err.startswith(f"{program}:1:{_byte_column(line, 'flot_type')}: error: ")
