"""Many random programs: the lowered TOSA, run by our TOSA interpreter, equals the migraphx
reference semantics over flat strided buffers (cheap: no IREE compile; IREE judges a subset in
test_lowering_matches_iree)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from .harness import check_with_interpreter
from .programs import conv_programs, dot_programs, elementwise_programs, reduction_programs

# numpy warns of nothing in the reference, whatever the values (no RuntimeWarning of a cast)
pytestmark = pytest.mark.filterwarnings("error")

_MANY = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@_MANY
@given(conv_programs())
def test_random_conv_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)


@_MANY
@given(elementwise_programs())
def test_random_elementwise_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)


@_MANY
@given(dot_programs())
def test_random_dot_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)


@_MANY
@given(reduction_programs())
def test_random_reduction_lowering_matches_reference(text: str) -> None:
    check_with_interpreter(text)
