"""Every check in the StableHLO conformance corpus holds under our interpreter, before and after
`stablehlo-canonicalize-conv{gate=general}`, with `conv-layout=channels-last` and with
`merge-phases=pad-kernel` (expectations come from the upstream interpreter)."""

from __future__ import annotations

import pytest

from convcanon.driver import transform_text
from convcanon.reference.run import run_hlo_text

from .corpus import CORPUS, corpus_chunks

CHUNKS = corpus_chunks()
IDS = [case for case, _, _ in CHUNKS]


def _assert_checks_hold(text: str, name: str, offset: int) -> int:
    reports = run_hlo_text(text, str(CORPUS / name), line_offset=offset)
    assert reports, "no entry function ran"
    failures = [f for r in reports for f in r.failures]
    assert not failures, "\n".join(failures)
    checks = sum(r.checks for r in reports)
    assert checks > 0, "the case ran no check at all"
    return checks


def test_corpus_is_present() -> None:
    assert len(CHUNKS) >= 40, f"corpus at {CORPUS} looks incomplete ({len(CHUNKS)} cases)"


@pytest.mark.parametrize(("case", "offset", "text"), CHUNKS, ids=IDS)
def test_corpus_case_holds(case: str, offset: int, text: str) -> None:
    _assert_checks_hold(text, case.split(":")[0], offset)


CONV_CHUNKS = [(c, o, t) for c, o, t in CHUNKS if "convolution" in t or "dynamic_conv" in t]


# the default, and the options that change what is emitted for many convs
OPTIONS = ["", " conv-layout=channels-last", " merge-phases=pad-kernel max-mac-ratio=2.25"]


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "channels-last", "pad-kernel"])
@pytest.mark.parametrize(
    ("case", "offset", "text"), CONV_CHUNKS, ids=[c for c, _, _ in CONV_CHUNKS]
)
def test_corpus_case_holds_after_canonicalization(
    case: str, offset: int, text: str, options: str
) -> None:
    name = case.split(":")[0]
    after = transform_text(text, name, f"stablehlo-canonicalize-conv{{gate=general{options}}}")
    _assert_checks_hold(after, name, offset)


def test_canonicalization_changes_corpus_convs() -> None:
    """Guard against a vacuous second test: most conv cases must actually be rewritten."""
    changed = 0
    for case, _, text in CONV_CHUNKS:
        after = transform_text(text, case, "stablehlo-canonicalize-conv{gate=general}")
        changed += "stablehlo.pad" in after or "stablehlo.slice" in after
    assert changed >= len(CONV_CHUNKS) // 2, f"only {changed} of {len(CONV_CHUNKS)} rewritten"
