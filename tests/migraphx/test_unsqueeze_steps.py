"""MIGraphX's `unsqueeze` has two fields, `axes` and `steps`
(src/include/migraphx/op/unsqueeze.hpp): a step other than 1 splits the input dim that follows
its axis, so the op is a row-major reshape. Printed programs import with the shapes MIGraphX
computes (the cases of MIGraphX's test/op_shape_test.cpp, with the strides its rule gives), the
shapes it refuses are refused at their line, and the lowered op runs on IREE to numpy's reshape
of the input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from convcanon import import_program, lower_to_tosa, print_module
from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.ops import UnsqueezeOp
from convcanon.reference.migraphx_interp import Interpreter
from convcanon.verify.iree_tosa import run_tosa_text

Layout = tuple[tuple[int, ...], tuple[int, ...]]

# MIGraphX case name -> (input lens and strides, fields, result lens and strides)
CASES: dict[str, tuple[Layout, str, Layout]] = {
    "test_unsqueeze": (((4, 5, 3), (15, 3, 1)), "axes={2},steps={}", ((4, 5, 1, 3), (15, 3, 3, 1))),
    "test_unsqueeze, steps not printed": (
        ((4, 5, 3), (15, 3, 1)),
        "axes={2}",
        ((4, 5, 1, 3), (15, 3, 3, 1)),
    ),
    "test_unsqueeze_negative_axis3": (
        ((4, 5, 3), (15, 3, 1)),
        "axes={-3},steps={}",
        ((4, 1, 5, 3), (15, 15, 3, 1)),
    ),
    "test_unsqueeze_multiple_axes_4": (
        ((3, 4, 5), (20, 5, 1)),
        "axes={5,4,2},steps={}",
        ((3, 4, 1, 5, 1, 1), (20, 5, 5, 1, 1, 1)),
    ),
    "test_unsqueeze_step": (
        ((4, 5, 12), (60, 12, 1)),
        "axes={2},steps={2}",
        ((4, 5, 2, 6), (60, 12, 6, 1)),
    ),
    "test_unsqueeze_transpose_step": (
        ((4, 4, 6), (24, 1, 4)),
        "axes={2},steps={2}",
        ((4, 4, 2, 3), (24, 1, 12, 4)),
    ),
    "test_unsqueeze_multiple_axes_step": (
        ((3, 4, 10), (40, 10, 1)),
        "axes={2,4,5},steps={2}",
        ((3, 4, 2, 5, 1, 1), (40, 10, 5, 1, 1, 1)),
    ),
}
SPLITTING = [name for name, (_, fields, _) in CASES.items() if "steps={2}" in fields]

# MIGraphX's throws_shape cases: (input lens, fields)
REFUSED: dict[str, tuple[tuple[int, ...], str]] = {
    "test_unsqueeze_step_non_divisable": ((4, 5, 3), "axes={2},steps={2}"),
    "test_unsqueeze_step_zero": ((4, 5, 12), "axes={2},steps={0}"),
    "test_unsqueeze_step_at_end": ((4, 5, 12), "axes={3},steps={2}"),
    "test_unsqueeze_mismatch_step_axis": ((4, 5, 12), "axes={2},steps={2,3}"),
}


def braces(values: tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def program(source: Layout, fields: str, result: Layout) -> str:
    """The three lines MIGraphX prints for a parameter, its unsqueeze and the return."""
    return (
        f"x = @param:x -> float_type, {braces(source[0])}, {braces(source[1])}\n"
        f"@1 = unsqueeze[{fields}](x) -> float_type, {braces(result[0])}, {braces(result[1])}\n"
        "@2 = @return(@1)\n"
    )


def standard(lens: tuple[int, ...]) -> Layout:
    return lens, tuple(math.prod(lens[d + 1 :]) for d in range(len(lens)))


def flat_size(layout: Layout) -> int:
    lens, strides = layout
    return 1 + sum((n - 1) * s for n, s in zip(lens, strides, strict=True))


def strided(flat: np.ndarray, layout: Layout) -> np.ndarray:
    """The logical view of a flat buffer (numpy's strides, independent of convcanon's layouts)."""
    lens, strides = layout
    return np.lib.stride_tricks.as_strided(flat, lens, [s * flat.itemsize for s in strides])


def the_unsqueeze(text: str) -> UnsqueezeOp:
    (function,) = import_program(text).ops
    return next(op for op in function.walk() if isinstance(op, UnsqueezeOp))


@pytest.mark.parametrize("name", CASES)
def test_a_printed_unsqueeze_imports_with_the_shape_migraphx_computes(name: str) -> None:
    source, fields, result = CASES[name]
    op = the_unsqueeze(program(source, fields, result))
    assert op.infer()[0] == result[0]
    steps = fields.partition("steps=")[2]
    if steps in ("", "{}"):  # MIGraphX's default: the op writes no attribute
        assert "steps" not in op.attributes
        assert not op.splits_dims()
    else:
        assert op.step_values() == [int(v) for v in steps.strip("{}").split(",")]
        assert op.splits_dims()


@pytest.mark.parametrize("name", REFUSED)
def test_an_unsqueeze_migraphx_refuses_is_refused_at_its_line(name: str) -> None:
    lens, fields = REFUSED[name]
    text = program(standard(lens), fields, standard((*lens, 1)))
    with pytest.raises(ConvcanonError) as refused:
        import_program(text, filename="p.txt")
    rendered = refused.value.render()
    assert rendered.startswith("p.txt:2:6: error: migraphx.unsqueeze: unsqueeze ")
    assert "step" in rendered


@pytest.mark.parametrize("name", SPLITTING)
def test_an_unsqueeze_that_splits_a_dim_runs_as_numpys_reshape(name: str) -> None:
    source, fields, result = CASES[name]
    text = program(source, fields, result)
    x = np.random.default_rng(0).uniform(-1, 1, flat_size(source)).astype(np.float32)
    expected = np.zeros(flat_size(result), np.float32)
    strided(expected, result)[...] = strided(x, source).reshape(result[0])
    assert math.prod(result[0]) == math.prod(source[0])

    module = import_program(text)
    (ours,) = Interpreter(module, "<program>", {}).run("main", [x])
    np.testing.assert_array_equal(ours, expected)
    tosa = print_module(lower_to_tosa(module))
    (iree,) = run_tosa_text(tosa, [x])
    np.testing.assert_array_equal(iree, expected)
