"""MIGraphX's `concat`, `pad` and `batch_norm_inference` in printed programs with hostile
fields (axes out of range, pads huge, negative past the dim, reflect wider than the dim, pad
lists of the wrong length, NaN/infinite/huge values, epsilons of any sign, bad modes) over
operands of hostile layouts (transposed, broadcast, stride 0, strides past int64) and mismatched
lens, ranks and types. Each program goes through import, `run` (`--memory-limit 64MiB`, a small
`--max-work`), `migraphx-to-tosa` and iree-opt with `assert_no_harm` at each step. The printed
fixtures of these ops are damaged in test_fuzz_migraphx_pooling.py with the others; here their
imported migraphx MLIR is damaged, through `run` and the lowering.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file
from convcanon.migraphx.shape_rules import ShapeError, concat_lens, pad_lens

from . import sources
from .conftest import REPO
from .mutations import mutated
from .printed_programs import (
    BIG,
    braced,
    module_through_the_tools,
    standard,
    through_the_tools,
    weighted,
)

FUZZ = settings(
    max_examples=sources.examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FIXTURE = REPO / "tests" / "migraphx" / "fixtures" / "concat_and_pad.txt"
BATCH_NORM = REPO / "tests" / "fuzz" / "fixtures" / "batch_norm.txt"
_ODD = st.one_of(st.integers(-3, 9), st.sampled_from(BIG), st.sampled_from([-(2**63), -(10**12)]))
_RANK = weighted(st.integers(1, 5), st.sampled_from([1, 8, 33, 64, 65]))
"""Mostly a real model's, else past what a run holds (32) and what numpy does (64)."""
_FLOATS = ["0", "-0.5", "1e-05", "7", "1e30", "nan", "-nan", "inf", "-inf", "3.40282e+38",
           "-3.40282347e+38", "1e39", "-1e-45", "-1", "0x1p3", "1e", ""]  # fmt: skip
_TYPES = ["float_type", "half_type", "bf16_type", "double_type", "int8_type", "uint8_type",
          "int32_type", "int64_type", "bool_type", "fp8e4m3fnuz_type"]  # fmt: skip


@st.composite
def _layout(draw: st.DrawFn, lens: list[int]) -> list[int]:
    """Strides of `lens`: standard, a permuted order, broadcast (0 on some dims) or hostile."""
    kind = draw(st.sampled_from(["standard", "standard", "permuted", "broadcast", "hostile"]))
    if kind == "permuted":
        order = draw(st.permutations(range(len(lens))))
        strides = standard([lens[d] for d in order])
        return [strides[order.index(d)] for d in range(len(lens))]
    if kind == "broadcast":
        return [0 if draw(st.booleans()) else s for s in standard(lens)]
    if kind == "hostile":
        return draw(
            st.lists(weighted(st.integers(0, 4), _ODD), min_size=len(lens), max_size=len(lens))
        )
    return standard(lens)


def _param(draw: st.DrawFn, name: str, lens: list[int], element: str) -> str:
    return f"{name} = @param:{name} -> {element}, {braced(lens)}, {braced(draw(_layout(lens)))}\n"


def _program(draw: st.DrawFn, params: str, line: str, out: list[int], element: str) -> str:
    """The op's line (its declared result `out`, in a drawn layout) returned, after `params`."""
    return (
        f'module: "main"\n{params}@1 = {line} -> {element}, {braced(out)}, '
        f"{braced(draw(_layout(out)))}\n@2 = @return(@1)\n"
    )


def _lens(draw: st.DrawFn, rank: st.SearchStrategy[int]) -> list[int]:
    """Mostly small lens (so the run and the lowering see the op), else some hostile."""
    count = draw(rank)
    small = st.integers(1, 4) if count <= 8 else st.sampled_from([1] * 9 + [2])  # no overflow
    each = small if draw(st.integers(0, 4)) else weighted(small, _ODD)
    return draw(st.lists(each, min_size=count, max_size=count))


@st.composite
def _concat(draw: st.DrawFn) -> str:
    """Operands alike but along the axis (sometimes not), of one type (sometimes not)."""
    lens = _lens(draw, _RANK)
    element = draw(st.sampled_from(_TYPES))
    count = draw(weighted(st.integers(1, 4), st.sampled_from([0, 1, 40, 300])))
    axis = draw(weighted(st.integers(-len(lens), len(lens) - 1), _ODD))
    operands = []
    for k in range(count):
        mine = list(lens)
        if mine and draw(st.booleans()):
            mine[axis % len(mine)] = draw(st.integers(1, 3))
        if draw(st.integers(0, 19)) == 0:
            mine = _lens(draw, st.integers(0, 4))
        kind = draw(st.sampled_from([element] * 19 + _TYPES))
        operands.append((f"x{k}", mine, kind))
    distinct = {n: (m, t) for n, m, t in operands[: draw(st.integers(1, 3))]}
    names = [
        n if n in distinct else draw(st.sampled_from(sorted(distinct))) for n, _, _ in operands
    ]
    params = "".join(_param(draw, n, m, t) for n, (m, t) in distinct.items())
    try:
        out = list(concat_lens([distinct[n][0] for n in names], axis))
    except ShapeError:
        out = lens
    fields = draw(st.sampled_from([f"axis={axis}", f"axis={axis}", "", f"axis={axis},axis=0"]))
    return _program(draw, params or _param(draw, "x0", lens, element),
                    f"concat[{fields}]({','.join(names)})", out, element)  # fmt: skip


@st.composite
def _pad(draw: st.DrawFn) -> str:
    lens = _lens(draw, st.just(0) | _RANK)
    element = draw(st.sampled_from(_TYPES))
    size = draw(st.sampled_from([2 * len(lens)] * 9 + [len(lens), 2 * len(lens) + 1, 0]))
    top = max([1, *[n for n in lens if n < 100]])
    small = st.integers(-top - 1, top + 1)
    pads = draw(st.lists(weighted(small, _ODD), min_size=size, max_size=size))
    mode = draw(weighted(st.integers(0, 2), st.sampled_from(["-1", "3", "reflect", "2.0", "1e9"])))
    value = draw(st.sampled_from(_FLOATS))
    try:
        out = list(pad_lens(lens, pads))
    except ShapeError:
        out = lens
    fields = [f"mode={mode}", f"pads={braced(pads)}", f"value={value}"]
    kept = [f for f in fields if draw(st.integers(0, 19))]
    return _program(draw, _param(draw, "x", lens, element), f"pad[{','.join(kept)}](x)", out,
                    element)  # fmt: skip


@st.composite
def _batch_norm(draw: st.DrawFn) -> str:
    lens = _lens(draw, _RANK)
    element = draw(st.sampled_from(["float_type"] * 4 + _TYPES))
    mode = draw(weighted(st.integers(0, 1), _ODD))
    channels = lens[1] if len(lens) > 1 else 1
    usual = [channels] if mode == 1 else lens[1:]
    param = draw(
        st.sampled_from([usual] * 6 + [[1, channels, *[1] * (len(lens) - 2)], [channels + 1], []])
    )
    params = _param(draw, "x", lens, element)
    for name in "sbmv":
        mine = param if draw(st.integers(0, 19)) else [draw(st.integers(1, 5))]
        kind = element if draw(st.integers(0, 19)) else draw(st.sampled_from(_TYPES))
        params += _param(draw, name, mine, kind)
    fields = [f"epsilon={draw(st.sampled_from(_FLOATS))}",
              f"momentum={draw(st.sampled_from(_FLOATS))}", f"bn_mode={mode}"]  # fmt: skip
    kept = [f for f in fields if draw(st.integers(0, 9))]
    args = draw(st.sampled_from(["x,s,b,m,v"] * 9 + ["x,s,b,m", "x,s,b,m,v,v", "x,x,x,x,x"]))
    return _program(draw, params, f"batch_norm_inference[{','.join(kept)}]({args})", lens, element)


_PROGRAMS = {"concat": _concat(), "pad": _pad(), "norm": _batch_norm()}


@pytest.mark.parametrize("op", sorted(_PROGRAMS))
@FUZZ
@given(data=st.data())
def test_hostile_fields_and_layouts(op: str, data: st.DataObject, tmp_path_factory, capsys):
    text = data.draw(_PROGRAMS[op])
    through_the_tools(text.encode(), tmp_path_factory.mktemp(op), capsys, op)


@FUZZ
@given(data=st.data())
def test_damaged_migraphx_mlir_of_concat_pad_and_norm(
    data: st.DataObject, tmp_path_factory, capsys
):
    source = data.draw(st.sampled_from([FIXTURE, BATCH_NORM])).read_text()
    text = print_file(import_program(source, "p.txt")).encode()
    module = tmp_path_factory.mktemp("mlir") / "module.mlir"
    module.write_bytes(data.draw(mutated(text)))
    module_through_the_tools(module, capsys, "mlir")
