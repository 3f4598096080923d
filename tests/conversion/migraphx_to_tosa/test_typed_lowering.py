"""MIGraphX's element types and its index/shape ops, lowered: random programs over sign-explicit
integers, comparisons, gather, scatter_none and squeeze/unsqueeze/flatten equal the migraphx
reference over flat strided buffers, on our TOSA interpreter (many examples) and on IREE llvm-cpu
(a few: each compile costs about a second); every lowered module verifies in iree-opt."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import check_with_interpreter, check_with_iree, iree_opt_verify
from .typed_programs import (
    Typed,
    f16_division_program,
    float_compare_programs,
    gather_programs,
    integer_programs,
    scatter_programs,
    unit_dim_programs,
)

_MANY = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
_FEW = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


def _on_interpreter(program: Typed) -> None:
    iree_opt_verify(check_with_interpreter(program.text, rtol=2e-3, inputs=program.inputs()))


def _on_iree(program: Typed) -> None:
    check_with_iree(program.text, rtol=2e-3, inputs=program.inputs())


@_MANY
@given(integer_programs())
def test_random_integer_program_keeps_its_sign_on_the_interpreter(program: Typed) -> None:
    _on_interpreter(program)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(integer_programs(types=("si64", "ui64")))
def test_random_64_bit_integer_program_verifies_and_matches_on_the_interpreter(
    program: Typed,
) -> None:
    # IREE's TOSA validation rejects casts from i64 to narrower types; iree-opt and our TOSA
    # interpreter are the judges here
    _on_interpreter(program)


@_MANY
@given(st.one_of(float_compare_programs(), unit_dim_programs()))
def test_random_compare_and_unit_dim_program_matches_on_the_interpreter(program: Typed) -> None:
    _on_interpreter(program)


@_MANY
@given(st.one_of(gather_programs(), scatter_programs()))
def test_random_gather_and_scatter_match_on_the_interpreter(program: Typed) -> None:
    _on_interpreter(program)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(integer_programs())
def test_random_integer_program_matches_iree(program: Typed) -> None:
    _on_iree(program)


@_FEW
@given(st.one_of(float_compare_programs(), unit_dim_programs()))
def test_random_compare_and_unit_dim_program_matches_iree(program: Typed) -> None:
    _on_iree(program)


@_FEW
@given(st.one_of(gather_programs(), scatter_programs()))
def test_random_gather_and_scatter_match_iree(program: Typed) -> None:
    _on_iree(program)


def test_f16_division_is_finite_where_the_quotient_is() -> None:
    # a * reciprocal(b) in f16 overflows for 0.7026 / 1.425e-05 (reference 4.93e4)
    _on_iree(f16_division_program())
