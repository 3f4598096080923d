"""A pipeline's text read as MLIR reads it: anchors (`builtin.module(...)`, `func.func(...)`,
`any(...)`) around the whole pipeline are peeled in one scan however deep they nest, and a pass
option's value may be quoted or braced."""

from __future__ import annotations

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
ANCHORS = ["builtin.module(", "func.func(", "any("]


def _read(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(p.info.name, dict(p.options)) for p in parse_pipeline(text)]


@settings(deadline=None)  # the first upstream pass item loads jaxlib's pass registry
@given(
    items=st.lists(st.sampled_from(ITEMS), min_size=1, max_size=3),
    anchors=st.lists(st.sampled_from(ANCHORS), max_size=5),
    space=st.sampled_from(["", " ", "\n  "]),
)
def test_anchors_around_the_whole_pipeline_are_peeled(
    items: list[str], anchors: list[str], space: str
) -> None:
    plain = ",".join(items)
    wrapped = plain
    for anchor in reversed(anchors):
        wrapped = f"{anchor}{space}{wrapped}{space})"
    assert _read(wrapped) == _read(plain)


def test_ten_thousand_anchors_are_peeled_in_one_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[str] = []
    closing_parens = pipeline._closing_parens  # pyright: ignore[reportPrivateUsage]

    def counted(text: str) -> dict[int, int]:
        scans.append(text)
        return closing_parens(text)

    plain = _read("stablehlo-canonicalize-conv")
    monkeypatch.setattr(pipeline, "_closing_parens", counted)
    assert _read("any(" * 10_000 + "stablehlo-canonicalize-conv" + ")" * 10_000) == plain
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
