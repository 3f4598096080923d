"""`--input-hlo` converts an HLO module with XLA's converter once.

Each op must name its instruction (its place in the file) and carry its metadata. XLA's converter
names an op after its metadata's op_name when it has one, else after its instruction, so the
module was converted twice: once with its metadata stripped, once as it is. Now each op_name is
tagged with its instruction's name and converted once. Proven against XLA: for random modules
with random metadata, each op's location with the tag taken off is XLA's conversion of the
module as it is, and the tag is the name XLA gives the op without metadata."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")

METADATA = [
    "",
    'metadata={op_name="jit(f)/mul"}',
    'metadata={op_name="jit(f)/tanh" source_file="/home/u/model.py" source_line=12}',
    'metadata={op_name="é ü/ñ" source_file="m.py" source_line=3}',
    'metadata={source_file="/only/a/file.py" source_line=7}',
    'metadata={op_type="Mul" op_name="x"}',
]
OPS = ["negate", "tanh", "abs", "add", "multiply"]


@st.composite
def hlo_modules(draw: st.DrawFn) -> tuple[str, str]:
    """HLO text with random metadata on random instructions, and the same text without it."""
    lines = ["HloModule m", "", "ENTRY main {"]
    bare = list(lines)
    count = draw(st.integers(1, 6))
    values = ["p0"]
    for index in range(count + 1):
        name = f"v{index}" if index else "p0"
        meta = draw(st.sampled_from(METADATA))
        if index == 0:
            body = "f32[4] parameter(0)"
        else:
            op = draw(st.sampled_from(OPS))
            operands = [draw(st.sampled_from(values)) for _ in range(2 if op in OPS[3:] else 1)]
            body = f"f32[4] {op}({', '.join(operands)})"
        root = "ROOT " if index == count else ""
        lines.append(f"  {root}{name} = {body}" + (f", {meta}" if meta else ""))
        bare.append(f"  {root}{name} = {body}")
        values.append(name)
    return "\n".join([*lines, "}", ""]), "\n".join([*bare, "}", ""])


def _proto(text: str) -> bytes:
    from jax._src.lib import hlo  # pyright: ignore

    return hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()


def _op_locations(proto: bytes) -> list[object]:
    """XLA's conversion of `proto`: each op's location, in order (with the module kept alive)."""
    from jax.extend.mlir import hlo_to_stablehlo
    from jaxlib.mlir import ir

    from convcanon.hlo.context import make_context
    from convcanon.hlo.hlo_import import _ops_in_order  # pyright: ignore[reportPrivateUsage]

    module = ir.Module.parse(hlo_to_stablehlo(proto), make_context())
    return [module, *(op.location for op in _ops_in_order(module))]


@settings(max_examples=40, deadline=None)
@given(hlo_modules())
def test_one_tagged_conversion_says_what_two_conversions_said(texts):
    from convcanon.hlo.hlo_import import (
        _instruction_name,  # pyright: ignore[reportPrivateUsage]
        _split_tag,  # pyright: ignore[reportPrivateUsage]
        with_instruction_names,
    )

    with_metadata, without = texts
    proto = _proto(with_metadata)
    tagged = with_instruction_names(proto)
    module, *converted = _op_locations(tagged or proto)
    _, *as_is = _op_locations(proto)
    _, *bare = _op_locations(_proto(without))
    assert len(converted) == len(as_is) == len(bare)
    for ours, xla, named in zip(converted, as_is, bare, strict=True):
        untagged, instruction = _split_tag(ours)  # pyright: ignore[reportArgumentType]
        assert str(untagged) == str(xla)
        assert (instruction or _instruction_name(untagged)) == _instruction_name(named)  # pyright: ignore[reportArgumentType]
    assert module is not None


HLO = """HloModule m

ENTRY main {
  p0 = f32[1,5,5,2] parameter(0)
  p1 = f32[3,3,2,4] parameter(1)
  ROOT c = f32[1,5,5,4] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, metadata={op_name="jit(f)/conv" source_file="/home/u/model.py" source_line=12}
}
"""  # noqa: E501


def test_hlo_with_metadata_is_converted_once(monkeypatch):
    import jax.extend.mlir
    from _counting import record_calls  # pyright: ignore[reportMissingImports]

    from convcanon.hlo.hlo_import import hlo_to_bytecode

    calls = record_calls(monkeypatch, jax.extend.mlir, "hlo_to_stablehlo")
    assert hlo_to_bytecode(HLO.encode(), "m.hlo")
    assert len(calls) == 1
