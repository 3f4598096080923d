"""Dense literals in migraphx/TOSA files are read as MLIR reads them, hex bit patterns included."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.reference.migraphx_interp import run_module_text

MODULE = """func.func @main() -> tensor<2x{t}> {{
  %0 = "tosa.const"() <{{values = {value} : tensor<2x{t}>}}> : () -> tensor<2x{t}>
  func.return %0 : tensor<2x{t}>
}}
"""


def _run(value: str, element: str) -> np.ndarray:
    _, (result,) = run_module_text(MODULE.format(value=value, t=element), "c.mlir", None, {})
    return result


def test_per_element_hex_floats_are_read_as_bit_patterns():
    # MLIR reads 0xFC00 as the f16 bit pattern (-inf); xDSL 0.75 alone would give 64500.0.
    assert _run("dense<[0xFC00, 1.0]>", "f16").tolist() == [-np.inf, 1.0]
    assert _run("dense<0x7E00>", "f16").dtype == np.float16
    assert np.isnan(_run("dense<0x7E00>", "f16")).all()
    assert _run("dense<[0xFF800000, 0x7F800000]>", "f32").tolist() == [-np.inf, np.inf]


def test_printed_inf_and_nan_literals_read_back():
    from convcanon.xdsl_io import parse_file_text, print_file

    text = MODULE.format(value='dense<"0x00FC007E">', t="f16")
    printed = print_file(parse_file_text(text, "a.mlir"))
    assert "0xfc00" in printed.lower()
    assert print_file(parse_file_text(printed, "b.mlir")) == printed
    _, (again,) = run_module_text(printed, "b.mlir", None, {})
    assert again[0] == -np.inf and np.isnan(again[1])


def test_hex_string_form_is_read_as_little_endian_bits():
    assert _run('dense<"0x0000803F00000040">', "f32").tolist() == [1.0, 2.0]


def test_hex_integers_are_integers():
    assert _run("dense<[0x10, 7]>", "i32").tolist() == [16, 7]


def test_hex_rewrite_is_linear_in_the_literal_size():
    import time

    from convcanon.migraphx.io import rewrite_hex_float_elements

    n = 100_000
    body = ", ".join(["0x10"] * n)
    for element in ("i32", "f32"):
        text = f"dense<[{body}]> : tensor<{n}x{element}>"
        start = time.process_time()
        rewritten = rewrite_hex_float_elements(text)
        assert time.process_time() - start < 3.0  # quadratic backtracking took 27 s at 20k
        assert (rewritten == text) == (element == "i32")


_HEX_FLOAT_TYPES = ["f4E2M1FN", "f8E4M3FN", "f8E5M2", "f16", "bf16", "f32"]


def _mlir_refusal(value: str, element: str) -> str | None:
    """MLIR's own diagnostic for `dense<[value]> : tensor<1xelement>`, None when it reads it."""
    from jaxlib.mlir import ir

    with ir.Context():
        try:
            ir.Attribute.parse(f"dense<[{value}]> : tensor<1x{element}>")
        except ir.MLIRError as err:
            found = re.search(r":1:\d+: (.*)", str(err))
            assert found is not None, str(err)
            return found[1]
    return None


@given(
    element=st.sampled_from(_HEX_FLOAT_TYPES), value=st.integers(0, 1 << 33), minus=st.booleans()
)
@example(element="f16", value=0x7C01, minus=False)  # a signalling NaN keeps its bits
@example(element="bf16", value=0x7F81, minus=False)
@settings(max_examples=150, deadline=None)
def test_hex_float_elements_are_refused_or_read_as_mlir_does(element: str, value: int, minus: bool):
    literal = f"{'-' if minus else ''}{value:#x}"
    text = MODULE.format(value=f"dense<[1.0, {literal}]>", t=element)
    refusal = _mlir_refusal(literal, element)
    try:
        _, (ours,) = run_module_text(text, "c.mlir", None, {})
    except ConvcanonError as err:
        assert err.message == refusal, err.render()
        assert err.loc is not None and err.loc.line == 2  # at the literal, as MLIR points
        assert text.splitlines()[1][err.loc.col - 1 :].startswith(f"{value:#x}")
        return
    assert refusal is None
    assert int(ours[1:].view(f"u{ours.dtype.itemsize}")[0]) == value
