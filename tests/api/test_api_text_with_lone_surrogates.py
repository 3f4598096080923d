"""Text handed to the Python API may hold lone surrogates (no file can): each entry point gives
a `ConvcanonError` at the surrogate's line and column, as the README's table promises, never
jaxlib's `UnicodeEncodeError` (what `canonicalize_conv` and `parse_module` leaked)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convcanon
from convcanon.diagnostics import ConvcanonError

PROGRAM = (
    "x = @param:x -> float_type, {2}, {1}\n@1 = @exp(x) -> float_type, {2}, {1}\n@2 = @return(@1)\n"
)
STABLEHLO = (
    Path(__file__).resolve().parents[2] / "examples" / "small_cnn.stablehlo.mlir"
).read_text()
MIGRAPHX_EXP = (
    "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
    "  %0 = migraphx.exp %x : <2xf32, 1> -> <2xf32, 1>\n"
    "  func.return %0 : !migraphx.shaped<2xf32, 1>\n}\n"
)
ENTRIES: dict[str, tuple[Callable[[str], object], str]] = {
    "canonicalize_conv": (
        lambda text: convcanon.canonicalize_conv(text, gate="general"),
        STABLEHLO,
    ),
    "canonicalize_conv mhlo": (lambda text: convcanon.canonicalize_conv(text, "mhlo"), STABLEHLO),
    "migraphx.parse_module": (
        lambda text: convcanon.print_module(convcanon.parse_module(text)),
        MIGRAPHX_EXP,
    ),
    "migraphx.import_program": (
        lambda text: convcanon.print_module(convcanon.import_program(text)),
        PROGRAM,
    ),
}
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e != "migraphx.import_program"])
def test_a_lone_surrogate_in_a_comment_is_located(entry: str) -> None:
    """(A MIGraphX program has no comments.)"""
    call, text = ENTRIES[entry]
    line = text.index("\n") + 1
    with pytest.raises(ConvcanonError) as raised:
        call(text[:line] + "// \udcff\n" + text[line:])
    assert raised.value.render().endswith(":2:4: error: not UTF-8 text (a lone surrogate U+DCFF)")


@settings(max_examples=40, deadline=None)
@given(
    entry=st.sampled_from(list(ENTRIES)),
    where=st.floats(0, 1),
    surrogate=SURROGATES,
)
def test_a_lone_surrogate_anywhere_is_a_convcanon_error_or_accepted(
    entry: str, where: float, surrogate: str
) -> None:
    """Anywhere in the text (a name, a string, a type): refused as bad input, or read (a
    program's name is free text), never another exception."""
    call, text = ENTRIES[entry]
    at = int(where * len(text))
    try:
        call(text[:at] + surrogate + text[at:])
    except ConvcanonError as err:
        assert err.render().count("error: ") == 1
