"""MIGraphX's printed programs as real models print them: pooling with hostile windows, debug
symbols of any text after an instruction, literals printed without values (`@literal{ ... }`,
an argument in their place) of hostile layouts. Each program is imported, and what imports is
run (`--memory-limit 64MiB`, a small `--max-work`) and lowered by `migraphx-to-tosa`; what
lowers must verify in iree-opt. The property is `assert_no_harm` at each step. The printed
fixtures (of real models, pooling, concat, pad and batch norm) are damaged too, through the
same three commands.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.migraphx.shape_rules import ShapeError, pool_window

from . import sources
from .conftest import REPO
from .mutations import mutated
from .printed_programs import BIG, braced, standard, through_the_tools, weighted

FUZZ = settings(
    max_examples=sources.examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PRINTED = [
    REPO / "tests" / "migraphx" / "fixtures" / "debug_symbols_elided_literals.txt",
    REPO / "tests" / "migraphx" / "fixtures" / "small_cnn_pooling.txt",
    REPO / "tests" / "migraphx" / "fixtures" / "concat_and_pad.txt",
    REPO / "tests" / "fuzz" / "fixtures" / "batch_norm.txt",
]
_HOSTILE = weighted(st.integers(1, 4), st.one_of(st.integers(-2, 9), st.sampled_from(BIG)))
_SYMBOL = st.text(st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]), max_size=40)


def _padding(count: int) -> st.SearchStrategy[list[int]]:
    return st.lists(weighted(st.integers(0, 3), _HOSTILE), min_size=count, max_size=count)


@st.composite
def _program(draw: st.DrawFn) -> str:
    """`x` pooled with drawn fields (its declared result the computed one, when there is one)
    and returned with an elided literal of a drawn layout, each line with drawn debug symbols."""
    spatial = draw(st.integers(1, 3))
    lens = [
        1,
        draw(st.integers(1, 3)),
        *draw(st.lists(st.integers(1, 9), min_size=spatial, max_size=spatial)),
    ]
    element = draw(st.sampled_from(["float_type", "half_type", "bf16_type", "int8_type"]))
    per_dim = st.lists(_HOSTILE, min_size=spatial, max_size=spatial)
    fields = {
        "mode": draw(
            st.sampled_from(
                ["max", "average", "max", "average", "lpnorm", "0", "1", "2", "7", "mx"]
            )
        ),
        "padding": braced(draw(st.sampled_from([spatial, 2 * spatial, 1]).flatmap(_padding))),
        "stride": braced(draw(per_dim)),
        "lengths": braced(draw(per_dim)),
        "dilations": braced(draw(per_dim)),
        "ceil_mode": str(draw(st.integers(0, 1))),
        "count_include_pad": str(draw(st.integers(0, 1))),
        "lp_order": str(draw(weighted(st.just(2), _HOSTILE))),
    }
    optional = ["dilations", "ceil_mode", "count_include_pad", "lp_order"]
    kept = ["mode", "padding", "stride", "lengths"]
    kept = [k for k in kept if draw(st.sampled_from([True] * 19 + [False]))] + draw(
        st.lists(st.sampled_from(optional), unique=True)
    )
    out = _pooled(lens, {k: fields[k] for k in kept})
    literal_lens = draw(
        st.lists(
            weighted(st.integers(1, 3), st.sampled_from([4096, 10**6])), min_size=1, max_size=3
        )
    )
    literal_strides = draw(
        st.one_of(
            st.just(standard(literal_lens)),
            st.just(standard(literal_lens)),
            st.lists(_HOSTILE, min_size=len(literal_lens), max_size=len(literal_lens)),
        )
    )
    tail = [f" # {draw(_SYMBOL)}" if draw(st.booleans()) else "" for _ in range(4)]
    field_text = ",".join(f"{k}={fields[k]}" for k in kept)
    return (
        'module: "main"\n'
        f"x = @param:x -> {element}, {braced(lens)}, {braced(standard(lens))}{tail[0]}\n"
        f"w = @literal{{ ... }} -> float_type, {braced(literal_lens)}, "
        f"{braced(literal_strides)}{tail[1]}\n"
        f"@1 = pooling[{field_text}](x) -> {element}, {braced(out)}, "
        f"{braced(standard(out))}{tail[2]}\n"
        f"@2 = @return(@1, w){tail[3]}\n"
    )


def _pooled(lens: list[int], fields: dict[str, str]) -> list[int]:
    """The result lens of the drawn pooling, or its input's when it has none."""
    numbers = {
        k: [int(v) for v in fields[k].strip("{}").split(",")] if k in fields else None
        for k in ("padding", "stride", "lengths", "dilations")
    }
    mode = fields.get("mode", "max")
    mode = {"0": "average", "1": "max", "2": "lpnorm"}.get(mode, mode)
    try:
        window = pool_window(
            lens,
            mode,
            numbers["padding"] or [],
            numbers["stride"] or [],
            numbers["lengths"] or [],
            numbers["dilations"],
            int(fields.get("ceil_mode", "0")),
            int(fields.get("count_include_pad", "0")),
            int(fields.get("lp_order", "2")),
        )
    except ShapeError:
        return lens
    return [*lens[:2], *window.out_spatial]


@FUZZ
@given(text=_program())
def test_hostile_pooling_symbols_and_elided_literals(text: str, tmp_path_factory, capsys):
    through_the_tools(text.encode(), tmp_path_factory.mktemp("pool"), capsys, "pooling")


@FUZZ
@given(data=st.data())
def test_damaged_printed_programs_of_real_models(data: st.DataObject, tmp_path_factory, capsys):
    source = data.draw(st.sampled_from(PRINTED))
    damaged = data.draw(mutated(source.read_bytes()))
    through_the_tools(damaged, tmp_path_factory.mktemp("printed"), capsys, "pooling")
