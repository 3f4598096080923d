"""MIGraphX programs as MIGraphX prints real models: each instruction may end in its debug
symbols (` # Conv_0, Add_1`: the ONNX nodes `--debug-symbols` names), and a literal too large to
print shows `{ ... }` for its values. The symbols are read past; an elided literal is an
argument of the function in its place (one warning names them), so the program imports, runs,
and lowers to TOSA that IREE computes as the reference does."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.xdsl_io import print_file as print_module

FIXTURE = Path(__file__).parent / "fixtures" / "debug_symbols_elided_literals.txt"
TEXT = FIXTURE.read_text()
WITHOUT_SYMBOLS = re.sub(r" # [^\n]*", "", TEXT)


def _imported(text: str) -> str:
    return print_module(import_program(text, "p.txt"))


def test_elided_literals_are_arguments_in_their_place(capsys: pytest.CaptureFixture[str]) -> None:
    printed = _imported(TEXT)
    signature = printed.splitlines()[1]
    assert re.findall(r"%arg\d+: !migraphx\.shaped<([^,>]+)", signature) == [
        "2x3x12x12xf32",
        "4x3x3x3xf32",
        "36x5xf32",
    ]
    assert printed.count("migraphx.literal") == 1  # the bias, printed with its values
    err = capsys.readouterr().err
    assert err.startswith("p.txt:4:6: warning: MIGraphX printed `@2` and 1 more literal without")
    assert "(argument 1 for `@2`)" in err and err.count("warning:") == 1


@settings(max_examples=40, deadline=None)
@given(
    symbols=st.lists(
        st.text(st.characters(blacklist_categories=["Cc", "Cs", "Zl", "Zp"]), max_size=30),
        min_size=12,
        max_size=12,
    )
)
def test_debug_symbols_change_nothing(symbols: list[str]) -> None:
    """Any text after ` # ` at the end of an instruction (names with commas, `@`, `#`, `=`,
    brackets, other scripts) is read past: the module is the one without symbols."""
    lines = WITHOUT_SYMBOLS.splitlines()
    marked = [lines[0]] + [f"{line} # {s}" for line, s in zip(lines[1:], symbols, strict=False)]
    assert _imported("\n".join(marked) + "\n") == _imported(WITHOUT_SYMBOLS)


@pytest.mark.parametrize(
    ("line", "column"),
    [
        ("@9 = reshape[dims={2, 36}](@8) -> float_type, {2, 36}, {36, 1}# no space", 63),
        ("@9 = reshape[dims={2, 36}](@8) -> float_type, {2, 36}, {36, 1} junk # Flatten", 64),
        ("@2 = @literal{ ..., } -> float_type, {4, 3, 3, 3}, {27, 9, 3, 1}", 16),
    ],
)
def test_what_is_neither_symbols_nor_elision_is_still_an_error(line: str, column: int) -> None:
    lines = WITHOUT_SYMBOLS.splitlines()
    index = next(i for i, old in enumerate(lines) if old.split(" = ")[0] == line.split(" = ")[0])
    lines[index] = line
    with pytest.raises(ConvcanonError) as info:
        import_program("\n".join(lines) + "\n", "p.txt")
    loc = info.value.loc
    assert loc is not None and (loc.line, loc.col) == (index + 1, column), info.value.render()


def test_the_program_runs_and_its_lowering_computes_the_same_on_iree(tmp_path: Path) -> None:
    program = tmp_path / "p.txt"
    program.write_text(TEXT)
    module, lowered = tmp_path / "p.mlir", tmp_path / "p.tosa.mlir"
    assert main(["import-migraphx", str(program), "-o", str(module)]) == 0
    inputs = tmp_path / "in.npz"
    rng = np.random.default_rng(0)
    sizes = [2 * 3 * 12 * 12, 4 * 3 * 3 * 3, 36 * 5]  # the image, then the two elided weights
    arrays = {f"arg{i}": rng.standard_normal(n).astype(np.float32) for i, n in enumerate(sizes)}
    np.savez(inputs, **arrays)  # pyright: ignore[reportArgumentType]
    assert main(["run", str(module), "--inputs", str(inputs)]) == 0
    assert opt_main([str(module), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    assert main(["verify", str(module), str(lowered), "--engine", "iree", "--trials", "2"]) == 0


def test_a_compiled_program_is_told_to_import_the_program_before_compiling() -> None:
    """MIGraphX prints a compiled program with its target's ops (`gpu::code_object`,
    `hip::hip_copy_literal`): not an unknown op each, but the program at the wrong stage."""
    compiled = "\n".join(
        [
            'module: "main"',
            "@0 = check_context::migraphx::gpu::context -> float_type, {}, {}",
            "@1 = hip::hip_copy_literal[id=main:@literal:5] -> float_type, {1, 10}, {10, 1}",
        ]
    )
    with pytest.raises(ConvcanonError) as info:
        import_program(compiled, "c.txt")
    assert info.value.render().startswith(
        "c.txt:2:6: error: `check_context::...` is an op of a compiled program: import the"
        " program as MIGraphX prints it before compiling (`migraphx-driver read MODEL --print`)"
    )
