"""Engine messages are placed in the user's file, by one rule for every engine: IREE's
`<stdin>:3:8: warning: ...` (printed twice) and XLA's `f.mlir: error: XLA rejected the module:
UNKNOWN: -:2:8: ...` both read `f.mlir:L:C: ...`, once. Every line an engine prints is placed
or dropped."""

from __future__ import annotations

import re

import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from fuzz.test_bad_input_table import XLA_DYNAMIC_CAST  # pyright: ignore[reportMissingImports]
from hypothesis import given
from hypothesis import strategies as st

from convcanon.cli import main
from convcanon.diagnostics import ConvcanonError
from convcanon.verify.placement import one_report, place_error, place_line, say_engine_output

PLACED = re.compile(r"f\.mlir(:\d+:\d+)?: (error|warning|remark): ")


def test_an_iree_warning_is_said_once_at_the_file(capsys):
    output = (
        "<stdin>:3:8: warning: op was not bufferized in place\n"
        "  %1 = stablehlo.negate %0 : tensor<4xf32>\n"
        "       ^\n"
        "<stdin>:3:8: note: see current operation: %1 = ...\n"
        "<stdin>:3:8: warning: op was not bufferized in place\n"
    )
    say_engine_output(output, "f.mlir", is_the_file=True)
    assert capsys.readouterr().err == "f.mlir:3:8: warning: op was not bufferized in place\n"


def test_each_run_says_an_engine_warning_again(capsys):
    """The once-only memory was the process's: a second verify run in one process (the API, a
    notebook) printed none of the warnings the first had."""
    output = "<stdin>:3:8: warning: op was not bufferized in place\n"
    for _ in range(2):
        with one_report():
            say_engine_output(output, "f.mlir", is_the_file=True)
            say_engine_output(output, "f.mlir", is_the_file=True)
        say_engine_output(output, "f.mlir", is_the_file=True)
    said = "f.mlir:3:8: warning: op was not bufferized in place\n"
    assert capsys.readouterr().err == said * 4


def test_an_xla_refusal_is_at_the_position_it_names():
    error = ConvcanonError("XLA rejected the module: UNKNOWN: -:2:8: error: 'x' op bad: %0 = x")
    placed = place_error(error, "f.mlir", is_the_file=False)
    assert placed.render() == "f.mlir:2:8: error: XLA rejected the module: 'x' op bad"


def test_xla_names_the_line_of_the_file(tmp_path, capsys):
    """It said `f.mlir: error: XLA rejected the module: UNKNOWN: -:5:8: error: ...`."""
    pytest.importorskip("jax")
    module = tmp_path / "f.mlir"
    module.write_text(XLA_DYNAMIC_CAST)  # XLA refuses it in its MLIR-to-HLO translation
    assert main(["verify", str(module), str(module), "--engine", "xla", "--trials", "1"]) == 1
    assert diagnostic_lines(capsys.readouterr().err)[:-1] == [
        f"{module}:5:8: error: XLA rejected the module: 'tensor.cast' op requires static or"
        " bounded operand for HLO translation"
    ]


def test_a_position_in_text_the_user_never_saw_is_dropped():
    """IREE's `<stdin>` of a reprinted module is not the file's line: the file alone."""
    line = place_line("<stdin>:40:2: error: failed to legalize", "f.mlir", is_the_file=False)
    assert line == "f.mlir: error: failed to legalize"


_SEVERITY = st.sampled_from(["error", "warning", "remark", "note"])
_FILE = st.sampled_from(["<stdin>", "-"])
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)


@given(
    st.one_of(
        st.builds(
            lambda f, line, col, sev, msg, prefix: f"{prefix}{f}:{line}:{col}: {sev}: {msg}",
            _FILE,
            st.integers(1, 10**6),
            st.integers(1, 500),
            _SEVERITY,
            _TEXT,
            st.sampled_from(["", "  ", "UNKNOWN: "]),
        ),
        st.builds(lambda sev, msg: f"{sev}: {msg}", _SEVERITY, _TEXT),
        _TEXT,
    ),
    st.booleans(),
)
def test_every_engine_line_is_placed_or_dropped(line: str, is_the_file: bool):
    placed = place_line(line, "f.mlir", is_the_file)
    if placed is None:
        return
    assert PLACED.match(placed), placed
    assert "<stdin>:" not in placed.split(": ", 1)[0] and not placed.startswith("-:")
    position = re.search(r"(<stdin>|-):(\d+):(\d+): ", line)
    if position is not None and (position[1] == "-" or is_the_file):
        assert placed.startswith(f"f.mlir:{position[2]}:{position[3]}: "), (line, placed)
