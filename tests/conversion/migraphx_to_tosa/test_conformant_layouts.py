"""Property: values of every type outside the profiles keep their meaning through MIGraphX's
layouts in the conformant form: arguments and results with permuted, gapped and broadcast
strides (4-bit buffers packed by flat memory index), transposes, slices and relayouts moving
storage codes, a convert reading them. IREE runs a few examples (each shape compiles), our TOSA
interpreter many."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.migraphx.shaped_type import ShapedType
from convcanon.tosa.storage import from_storage

from .programs import Program, memory_layouts, small_lens
from .test_conformant_kernels import check

TYPES = ("f8E4M3FNUZ", "f8E5M2FNUZ", "f8E8M0FNU", "f4E2M1FN", "si4", "ui4")
_IREE = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_INTERP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def layout_programs(draw: st.DrawFn) -> tuple[str, str]:
    """arg (random layout) -> transpose -> slice of the first dim -> relayout; returns the
    relaid value (a storage result with its own layout) and its convert to f32/si32."""
    et = draw(st.sampled_from(TYPES))
    lens = draw(small_lens(1, 3))
    p = Program()
    x = p.arg(lens, draw(memory_layouts(lens, allow_broadcast=True)), et)
    perm = draw(st.permutations(list(range(len(lens)))))
    t_lens = tuple(lens[d] for d in perm)
    t_strides = tuple(x.strides[d] for d in perm)
    y = p.op("transpose", [x], t_lens, f"permutation = {list(perm)}", strides=t_strides)
    if t_lens[0] > 1 and draw(st.booleans()):
        start = draw(st.integers(0, t_lens[0] - 1))
        s_lens = (t_lens[0] - start, *t_lens[1:])
        attrs = f"axes = [0], ends = [{t_lens[0]}], starts = [{start}]"
        y = p.op("slice", [y], s_lens, attrs)
    z = p.relayout(y, draw(memory_layouts(y.lens)))
    wide = "si32" if et.startswith(("si", "ui")) else "f32"
    w = p.op("convert", [z], z.lens, et=wide, keyword="to")
    return p.text([z, w]), et


def storage_inputs(text: str, et: str, seed: int) -> list[np.ndarray]:
    """Every argument's flat buffer: random bytes read as the type's values (all codes)."""
    from convcanon.xdsl_io import parse_file_text

    from .harness import entry

    rng = np.random.default_rng(seed)
    (ty,) = entry(parse_file_text(text, "<t>")).function_type.inputs.data
    assert isinstance(ty, ShapedType)
    count = ty.flat_size()
    raw = rng.integers(0, 256, count).astype(np.uint8).view(np.int8)
    return [from_storage(raw, et, count)]


@_IREE
@given(case=layout_programs(), seed=st.integers(0, 1000))
def test_layouts_keep_foreign_values_on_iree(case: tuple[str, str], seed: int) -> None:
    text, et = case
    check(text, storage_inputs(text, et, seed))


@_INTERP
@given(case=layout_programs(), seed=st.integers(0, 1000))
def test_layouts_keep_foreign_values_on_the_interpreter(case: tuple[str, str], seed: int) -> None:
    text, et = case
    check(text, storage_inputs(text, et, seed), iree=False)
