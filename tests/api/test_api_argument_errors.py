"""The Python API tells the caller's bugs from bad input: an argument of the wrong type is a
`TypeError` naming the type it needs, bad text or a module that cannot be lowered is a
`ConvcanonError`, and neither is an `AttributeError` from deep inside."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convcanon
from convcanon.diagnostics import ConvcanonError

DECLARATION = (
    "func.func private @main(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
)
PROGRAM = "@0 = @literal{1} -> float_type, {1}, {1}\n@1 = @return(@0)\n"

# (call with the argument under test, the argument's name, what the message names)
CALLS: list[tuple[str, Callable[[Any], object], str, str]] = [
    (
        "lower_to_tosa",
        lambda v: convcanon.lower_to_tosa(v),
        "module",
        "xdsl.dialects.builtin.ModuleOp",
    ),
    (
        "lower_to_tosa",
        lambda v: convcanon.lower_to_tosa(convcanon.import_program(PROGRAM), stats=v),
        "stats",
        "convcanon.pipeline.PassStats or None",
    ),
    (
        "print_module",
        lambda v: convcanon.print_module(v),
        "module",
        "xdsl.dialects.builtin.ModuleOp",
    ),
    ("parse_module", lambda v: convcanon.parse_module(v), "text", "str"),
    ("parse_module", lambda v: convcanon.parse_module("module {}", filename=v), "filename", "str"),
    ("import_program", lambda v: convcanon.import_program(v), "text", "str"),
    ("import_program", lambda v: convcanon.import_program(PROGRAM, filename=v), "filename", "str"),
    ("import_program", lambda v: convcanon.import_program(PROGRAM, name=v), "name", "str"),
    (
        "canonicalize_conv",
        lambda v: convcanon.canonicalize_conv(v),
        "module_or_text",
        "str, bytes, jaxlib.mlir.ir.Module or jax.export.Exported",
    ),
    ("canonicalize_conv", lambda v: convcanon.canonicalize_conv("module {}", v), "dialect", "str"),
]
WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.binary(), st.lists(st.integers())
)


@pytest.mark.parametrize(("function", "call", "argument", "expected"), CALLS)
@given(value=WRONG)
@settings(max_examples=15, deadline=None)
def test_a_wrong_argument_type_is_a_type_error_naming_the_type(
    function: str, call: Callable[[Any], object], argument: str, expected: str, value: object
):
    needs_none = "or None" in expected
    if value is None and needs_none:
        return  # None is what `stats` takes
    if isinstance(value, bytes) and "bytes" in expected:
        return  # bytes are what canonicalize_conv reads as bytecode
    with pytest.raises(TypeError) as raised:
        call(value)
    message = f"{function}: {argument} must be {expected}, not {type(value).__qualname__}"
    assert str(raised.value) == message


def test_the_issue_calls_are_type_errors():
    for call in (
        lambda: convcanon.lower_to_tosa("module {}"),  # pyright: ignore[reportArgumentType]
        lambda: convcanon.lower_to_tosa(None),  # pyright: ignore[reportArgumentType]
        lambda: convcanon.print_module(None),  # pyright: ignore[reportArgumentType]
    ):
        with pytest.raises(TypeError, match="must be xdsl.dialects.builtin.ModuleOp"):
            call()


def test_from_jax_needs_a_callable():
    with pytest.raises(TypeError, match="from_jax: fn must be callable, not int"):
        convcanon.from_jax(3)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    "call",
    [
        lambda: convcanon.parse_module("module {"),
        lambda: convcanon.import_program("garbage"),
        lambda: convcanon.lower_to_tosa(convcanon.parse_module(DECLARATION)),
        lambda: convcanon.canonicalize_conv("module {"),
        lambda: convcanon.canonicalize_conv(
            "HloModule m\nENTRY e { ROOT p = f32[2] parameter(0) }\n"
        ),
    ],
    ids=["parse", "import", "lower", "canonicalize", "hlo-text"],
)
def test_bad_input_is_a_convcanon_error(call: Callable[[], object]):
    with pytest.raises(ConvcanonError) as raised:
        call()
    assert raised.value.render().count("error: ") == 1
