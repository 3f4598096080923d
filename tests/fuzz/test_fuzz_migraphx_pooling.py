"""MIGraphX's printed programs as real models print them: pooling with hostile windows, debug
symbols of any text after an instruction, literals printed without values (`@literal{ ... }`,
an argument in their place) of hostile layouts. Each program is imported, and what imports is
run (`--memory-limit 64MiB`, a small `--max-work`) and lowered by `migraphx-to-tosa`; what
lowers must verify in iree-opt. The property is `assert_no_harm` at each step. The printed
fixtures of tests/migraphx are damaged too, through the same three commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.migraphx.shape_rules import ShapeError, pool_window

from . import sources
from .conftest import REPO, Outcome, assert_no_harm, digest, run_cli
from .mutations import mutated

FUZZ = settings(
    max_examples=sources.examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
IREE_OPT = Path(sys.executable).with_name("iree-opt")
PRINTED = [
    REPO / "tests" / "migraphx" / "fixtures" / "debug_symbols_elided_literals.txt",
    REPO / "tests" / "migraphx" / "fixtures" / "small_cnn_pooling.txt",
]
_BIG = [2**31, 2**40, 2**62, 2**63 - 1, 10**9, 10**20]


def _weighted(usual: st.SearchStrategy[int], odd: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """Mostly `usual` (windows that import, so the run and the lowering see them), else `odd`."""
    return st.integers(0, 9).flatmap(lambda roll: usual if roll < 7 else odd)


_HOSTILE = _weighted(st.integers(1, 4), st.one_of(st.integers(-2, 9), st.sampled_from(_BIG)))
_SYMBOL = st.text(st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]), max_size=40)


def _braced(values: list[int]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def _standard(lens: list[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(lens):
        strides.insert(0, step)
        step *= max(n, 1)
    return strides


def _padding(count: int) -> st.SearchStrategy[list[int]]:
    return st.lists(_weighted(st.integers(0, 3), _HOSTILE), min_size=count, max_size=count)


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
        "padding": _braced(draw(st.sampled_from([spatial, 2 * spatial, 1]).flatmap(_padding))),
        "stride": _braced(draw(per_dim)),
        "lengths": _braced(draw(per_dim)),
        "dilations": _braced(draw(per_dim)),
        "ceil_mode": str(draw(st.integers(0, 1))),
        "count_include_pad": str(draw(st.integers(0, 1))),
        "lp_order": str(draw(_weighted(st.just(2), _HOSTILE))),
    }
    optional = ["dilations", "ceil_mode", "count_include_pad", "lp_order"]
    kept = ["mode", "padding", "stride", "lengths"]
    kept = [k for k in kept if draw(st.sampled_from([True] * 19 + [False]))] + draw(
        st.lists(st.sampled_from(optional), unique=True)
    )
    out = _pooled(lens, {k: fields[k] for k in kept})
    literal_lens = draw(
        st.lists(
            _weighted(st.integers(1, 3), st.sampled_from([4096, 10**6])), min_size=1, max_size=3
        )
    )
    literal_strides = draw(
        st.one_of(
            st.just(_standard(literal_lens)),
            st.just(_standard(literal_lens)),
            st.lists(_HOSTILE, min_size=len(literal_lens), max_size=len(literal_lens)),
        )
    )
    tail = [f" # {draw(_SYMBOL)}" if draw(st.booleans()) else "" for _ in range(4)]
    field_text = ",".join(f"{k}={fields[k]}" for k in kept)
    return (
        'module: "main"\n'
        f"x = @param:x -> {element}, {_braced(lens)}, {_braced(_standard(lens))}{tail[0]}\n"
        f"w = @literal{{ ... }} -> float_type, {_braced(literal_lens)}, "
        f"{_braced(literal_strides)}{tail[1]}\n"
        f"@1 = pooling[{field_text}](x) -> {element}, {_braced(out)}, "
        f"{_braced(_standard(out))}{tail[2]}\n"
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


def _log(step: str, code: int) -> None:
    """For a campaign (CONVCANON_FUZZ_LOG=file): one line per command run, and its exit."""
    log = os.environ.get("CONVCANON_FUZZ_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"pooling-{step}\t{code}\n")


def _through_the_tools(text: bytes, work: Path, capsys) -> None:  # noqa: ANN001 (pytest's)
    """Import; what imports is run and lowered; what lowers verifies in iree-opt."""
    program = work / "program.txt"
    program.write_bytes(text)
    imported = work / "imported.mlir"
    outcome = run_cli(main, ["import-migraphx", str(program), "-o", str(imported)], capsys)
    assert_no_harm(outcome, program, digest(program), imported)
    _log("import", outcome.code)
    if outcome.code != 0:
        return
    before = digest(imported)
    results = work / "results.npz"
    ran = ["run", str(imported), "--memory-limit", "64MiB", "--max-work", "1e8", "-o", str(results)]
    ran_outcome = run_cli(main, ran, capsys)
    assert_no_harm(ran_outcome, imported, before, results)
    _log("run", ran_outcome.code)
    tosa = work / "lowered.mlir"
    lowered: Outcome = run_cli(
        opt_main, [str(imported), "-p", "migraphx-to-tosa", "-o", str(tosa)], capsys
    )
    assert_no_harm(lowered, imported, before, tosa)
    _log("lower", lowered.code)
    if lowered.code == 0 and IREE_OPT.exists():
        checked = subprocess.run([str(IREE_OPT), str(tosa)], capture_output=True, text=True)
        _log("iree-opt", checked.returncode)
        assert checked.returncode == 0, checked.stderr


@FUZZ
@given(text=_program())
def test_hostile_pooling_symbols_and_elided_literals(text: str, tmp_path_factory, capsys):
    _through_the_tools(text.encode(), tmp_path_factory.mktemp("pool"), capsys)


@FUZZ
@given(data=st.data())
def test_damaged_printed_programs_of_real_models(data: st.DataObject, tmp_path_factory, capsys):
    source = data.draw(st.sampled_from(PRINTED))
    damaged = data.draw(mutated(source.read_bytes()))
    _through_the_tools(damaged, tmp_path_factory.mktemp("printed"), capsys)
