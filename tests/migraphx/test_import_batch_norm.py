"""Older MIGraphX's `batch_norm_inference[epsilon=...,momentum=...,bn_mode=...]` imports in
rocMLIR's syntax (epsilon and momentum f32, bn_mode i64), runs as its formula computes it, and
bad fields or operands are each a `file:line:col: error:`."""

from __future__ import annotations

import numpy as np
import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file
from convcanon.xdsl_io import parse_file_text
from convcanon.xdsl_io import print_file as print_module

PARAMS = "x = @param:x -> float_type, {1, 3, 2, 2}, {12, 1, 6, 3}\n" + "".join(
    f"{n} = @param:{n} -> float_type, {{3}}, {{1}}\n" for n in "sbmv"
)
LINE = "@5 = batch_norm_inference[{fields}]({args}) -> {type}, {{1, 3, 2, 2}}, {{12, 1, 6, 3}}\n"


def _program(fields: str = "epsilon=1e-05,momentum=0.9,bn_mode=1", args: str = "x,s,b,m,v",
             type_name: str = "float_type", params: str = PARAMS) -> str:  # fmt: skip
    return params + LINE.format(fields=fields, args=args, type=type_name) + "@6 = @return(@5)\n"


def test_a_batch_norm_imports_and_prints_back_in_rocmlir_syntax() -> None:
    text = print_file(import_program(_program(), "p.txt"))
    assert (
        "migraphx.batch_norm_inference %arg0, %arg1, %arg2, %arg3, %arg4 {bn_mode = 1 : i64, "
        "epsilon = 9.99999975e-06 : f32, momentum = 8.99999976e-01 : f32}" in text
    )
    assert print_module(parse_file_text(text, "p.mlir")) == text


BAD = [
    (_program("epsilon=1e-05,momentum=0.9,bn_mode=2"),
     "p.txt:6:6: error: migraphx.batch_norm_inference: batch_norm_inference bn_mode must be "
     "per_activation (0), spatial (1), got 2"),
    (_program("epsilon=1e-05,momentum=0.9,bn_mode=0"),
     "p.txt:6:6: error: migraphx.batch_norm_inference: batch_norm_inference (per_activation) "
     "parameter #1 of [3] holds 3 elements, not the 12 of [1, 3, 2, 2]"),
    (_program(args="x,s,b,m"),
     "p.txt:6:6: error: migraphx.batch_norm_inference takes 5 operands (input, a, b, c, d), got 4"),
    (_program(args="x,s,b,m,x"),
     "p.txt:6:6: error: migraphx.batch_norm_inference: batch_norm_inference parameters differ in"
     " shape: #4 is [1, 3, 2, 2], #1 [3]"),
    (_program("epsilon=tiny,momentum=0.9,bn_mode=1"),
     "p.txt:6:27: error: field `epsilon` of `batch_norm_inference` must be a number, got `tiny`"),
    (_program(type_name="int32_type", params=PARAMS.replace("float_type", "int32_type")),
     "p.txt:6:6: error: migraphx.batch_norm_inference: batch_norm_inference needs float operands"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("program", "message"), BAD, ids=[m.split("error: ")[1][-40:] for _, m in BAD]
)
def test_bad_batch_norms_are_diagnosed_where_they_are(program: str, message: str) -> None:
    with pytest.raises(ConvcanonError) as caught:
        import_program(program, "p.txt")
    assert f"{caught.value.loc}: error: {caught.value.message}".startswith(message)


def test_per_activation_reads_one_parameter_per_element_of_a_batch_entry() -> None:
    """bn_mode=0: each parameter holds C*H*W values, the batch shares them."""
    from convcanon.migraphx import layout
    from convcanon.reference.migraphx_interp import run_module_text

    params = "x = @param:x -> float_type, {2, 2, 3}, {6, 3, 1}\n" + "".join(
        f"{n} = @param:{n} -> float_type, {{2, 3}}, {{3, 1}}\n" for n in "sbmv"
    )
    program = params + (
        "@5 = batch_norm_inference[epsilon=0,momentum=0.9,bn_mode=0](x,s,b,m,v) -> float_type, "
        "{2, 2, 3}, {6, 3, 1}\n@6 = @return(@5)\n"
    )
    text = print_file(import_program(program, "p.txt"))
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    s, b, m, v = (np.full((2, 3), k, dtype=np.float32) for k in (2.0, 1.0, 3.0, 4.0))
    s[1, 2] = 4.0
    feed = {f"arg{k}": layout.write_buffer(a, a.shape, layout.standard_strides(a.shape))
            for k, a in enumerate((x, s, b, m, v))}  # fmt: skip
    _, (flat,) = run_module_text(text, "p.mlir", None, feed)
    expected = s * (x - m) / 2.0 + b
    np.testing.assert_array_equal(flat.reshape(2, 2, 3), expected)
