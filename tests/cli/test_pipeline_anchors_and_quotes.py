"""A pipeline's text read as MLIR reads it: the module's anchor (`builtin.module(...)` or
`any(...)`) around the whole pipeline is peeled, nested pipelines stay nested (our conv passes
directly in `func.func(...)` or `any(...)` run on the module, the same), nesting is bounded,
and a pass option's value may be quoted or braced."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon import pipeline
from convcanon.diagnostics import UsageError
from convcanon.options import spelling
from convcanon.pipeline import PASSES, parse_pipeline

CONV = PASSES["stablehlo-canonicalize-conv"]
ITEMS = ["cse", "canonicalize", "func.func(cse)", "stablehlo-canonicalize-conv{gate=general}"]
MODULE_ANCHORS = ["builtin.module(", "any("]


def _read(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(p.info.name, dict(p.options)) for p in parse_pipeline(text)]


@settings(deadline=None)  # the first upstream pass item loads jaxlib's pass registry
@given(
    items=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=3),
    anchor=st.sampled_from(MODULE_ANCHORS),
    space=st.sampled_from(["", " ", "\n  "]),
)
def test_the_module_anchor_around_the_whole_pipeline_is_peeled(
    items: list[str], anchor: str, space: str
) -> None:
    plain = ",".join(items)
    assert _read(f"{anchor}{space}{plain}{space})") == _read(plain)


@settings(deadline=None)
@given(
    items=st.lists(st.sampled_from(["cse", "canonicalize", "sccp"]), max_size=3),
    at=st.integers(0, 3),
    nest=st.sampled_from(["func.func(", "any("]),
)
def test_our_conv_pass_in_a_function_nest_runs_between_its_neighbours(
    items: list[str], at: int, nest: str
) -> None:
    """`func.func(cse,CONV,canonicalize)`: cse nested on each function, the conv pass on the
    module, then canonicalize nested, in the order written."""
    inner = [*items[:at], CONV.name, *items[at:]]
    read = parse_pipeline(f"builtin.module({nest}{','.join(inner)}))")
    expected: list[str] = []
    for group in (items[:at], [CONV.name], items[at:]):
        if group == [CONV.name]:
            expected.append(CONV.name)
        elif group:
            expected.append(f"{nest}{','.join(group)})")
    assert [_written(p) for p in read] == expected


def _written(invocation: pipeline.PassInvocation) -> str:
    """Our pass by name, MLIR's nest as written (jaxlib prints each pass with its options)."""
    if invocation.info.name in PASSES:
        return invocation.info.name
    return re.sub(r"\{[^{}]*\}", "", str(invocation.options["pipeline"]))


@pytest.mark.parametrize(
    "text, message",
    [
        ("func.func(any(stablehlo-canonicalize-conv))", "cannot be nested in 'func.func(...)'"),
        ("cse,func.func(migraphx-to-tosa)", "'migraphx-to-tosa' runs on the whole module"),
        ("cse,func.func(bogus)", "unknown pass 'bogus'"),
        ("any(" * 1001 + "cse" + ")" * 1001, "nests over 1000 deep"),
    ],
)
def test_what_cannot_nest_is_named(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_pipeline(text)


def test_ten_thousand_anchors_are_refused_in_one_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """jaxlib's pipeline parser is quadratic in the nesting (10,000 levels: 24 s): refused
    before it runs, in one scan of the text."""
    scans: list[str] = []
    closing_parens = pipeline._closing_parens  # pyright: ignore[reportPrivateUsage]

    def counted(text: str) -> dict[int, int]:
        scans.append(text)
        return closing_parens(text)

    monkeypatch.setattr(pipeline, "_closing_parens", counted)
    with pytest.raises(UsageError, match="nests over 1000 deep"):
        _read("any(" * 10_000 + "stablehlo-canonicalize-conv" + ")" * 10_000)
    assert len(scans) == 1


@given(
    option=st.sampled_from(CONV.options),
    quote=st.sampled_from(["'{}'", '"{}"', "{{{}}}", "' {} '"]),
    data=st.data(),
)
def test_a_quoted_or_braced_value_is_the_value(option: Any, quote: str, data: Any) -> None:
    if option.choices:
        value: object = data.draw(st.sampled_from(option.choices))
    elif option.kind is bool:
        value = data.draw(st.booleans())
    elif option.kind is int:
        value = data.draw(st.integers(int(option.minimum or 0), 10**6))
    else:
        value = data.draw(st.floats(float(option.minimum or 0), 100.0))
    written = spelling(value)
    plain = _read(f"{CONV.name}{{{option.name}={written}}}")
    assert _read(f"{CONV.name}{{{option.name}={quote.format(written)} verbose=true}}") == _read(
        f"{CONV.name}{{{option.name}={written} verbose=true}}"
    )
    assert plain[0][1][option.name] == value


@pytest.mark.parametrize("empty", ['""', "''", "{}"])
def test_empty_quotes_or_braces_are_an_empty_value(empty: str) -> None:
    """`gate=""` is the empty value, as MLIR's option parser reads it (the refusal names ''),
    not the two quotes."""
    with pytest.raises(UsageError, match=r"option 'gate' must be one of neuron, general; got ''$"):
        parse_pipeline(f"{CONV.name}{{gate={empty}}}")
