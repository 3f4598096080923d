"""Property: on random convs gate=general leaves only canonical convs, same values, same MACs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect

from .cases import (
    ConvCase,
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    conv_cases,
    parse,
    run_pass,
    total_macs,
    xla,
)

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=conv_cases())
def test_general_gate_is_canonical_exact_and_costs_no_macs(
    case: ConvCase, dialect: Dialect
) -> None:
    before = parse(case.text, dialect)
    macs_before = total_macs(all_conv_params(before, dialect))
    after, stats, _ = run_pass(case.text, dialect, gate="general")
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    assert total_macs(params) == macs_before
    assert stats.counters["convs-seen"] == 1
    inputs = case.inputs()
    expected = xla(case.text, inputs)
    got = xla(as_stablehlo_text(after, dialect), inputs)
    assert_same_results(expected, got, case.element)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=40, deadline=None)
@given(case=conv_cases())
def test_default_gate_leaves_rejected_convs_untouched(case: ConvCase, dialect: Dialect) -> None:
    before = parse(case.text, dialect)
    original = str(before.module)
    after, stats, printed = run_pass(case.text, dialect)
    skipped = [k for k in stats.counters if k.startswith("skipped: ")]
    if skipped:
        assert printed == original
    else:
        assert_canonical(all_conv_params(after, dialect))
