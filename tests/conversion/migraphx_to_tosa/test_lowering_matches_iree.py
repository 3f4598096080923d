"""The lowered TOSA parses and verifies in iree-opt, compiles with IREE (llvm-cpu), and its flat
outputs equal the migraphx reference over flat strided buffers (and so does our TOSA interpreter).

Every IREE compile costs ~1 s, so the hypothesis runs here are small; the same strategies run
with many more examples against the reference interpreter in test_lowering_matches_reference.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from .cases import HAND_WRITTEN
from .harness import check_with_iree
from .programs import conv_programs, dot_programs, elementwise_programs, reduction_programs

_FEW = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_program_matches_iree(name: str) -> None:
    check_with_iree(HAND_WRITTEN[name]())


@_FEW
@given(conv_programs())
def test_random_conv_matches_iree(text: str) -> None:
    check_with_iree(text)


@_FEW
@given(elementwise_programs())
def test_random_elementwise_chain_matches_iree(text: str) -> None:
    check_with_iree(text)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(dot_programs())
def test_random_dot_matches_iree(text: str) -> None:
    check_with_iree(text)


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(reduction_programs())
def test_random_reduction_matches_iree(text: str) -> None:
    check_with_iree(text)
