"""MIGraphX's element types and its index/shape ops, lowered: random programs over sign-explicit
integers (ui32 division over the whole range among them), comparisons, gather, scatter_none and
squeeze/unsqueeze/flatten equal the migraphx reference over flat strided buffers, on our TOSA
interpreter (many examples) and on IREE llvm-cpu (a few: each compile costs about a second);
every lowered module verifies in iree-opt."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import (
    as_signless,
    check_with_interpreter,
    check_with_iree,
    iree_opt_verify,
    lower,
    reference,
)
from .typed_programs import (
    Typed,
    f16_division_program,
    float_compare_programs,
    gather_programs,
    integer_programs,
    scatter_programs,
    unit_dim_programs,
    unsigned_division_programs,
)

_MANY = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
_FEW = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


def _on_interpreter(program: Typed) -> None:
    iree_opt_verify(check_with_interpreter(program.text, rtol=2e-3, inputs=program.inputs()))


def _on_iree(program: Typed) -> None:
    check_with_iree(program.text, rtol=2e-3, inputs=program.inputs())


@_MANY
@given(st.one_of(integer_programs(), unsigned_division_programs()))
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


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(integer_programs(), unsigned_division_programs()))
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


def test_unsigned_32_bit_division_of_a_million_pairs_on_iree() -> None:
    """One compile, 2^20 pairs: every pair of edge values, then uniform over the range and
    with divisors below 2^16 (quotients up to 2^32 - 1), against Python's //."""
    from convcanon.verify.iree_tosa import run_tosa_text

    n = 1 << 20
    text = (
        f"func.func @main(%a: !migraphx.shaped<{n}xui32, 1>, %b: !migraphx.shaped<{n}xui32, 1>) "
        f"-> !migraphx.shaped<{n}xui32, 1> {{\n"
        f"  %q = migraphx.div %a, %b : <{n}xui32, 1>, <{n}xui32, 1> -> <{n}xui32, 1>\n"
        f"  return %q : !migraphx.shaped<{n}xui32, 1>\n}}\n"
    )
    rng = np.random.default_rng(7)
    edges = np.array([0, 1, 2, 3, 2**16, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1])
    pairs = np.array(np.meshgrid(edges, edges[1:])).reshape(2, -1)
    a = rng.integers(0, 2**32, n, dtype=np.uint64)
    b = np.where(rng.random(n) < 0.5, rng.integers(1, 2**16, n), rng.integers(1, 2**32, n))
    a[: pairs.shape[1]], b[: pairs.shape[1]] = pairs
    expected = (a // b).astype(np.uint32)
    a, b = a.astype(np.uint32), b.astype(np.uint64).astype(np.uint32)
    tosa_text = lower(text)
    iree_opt_verify(tosa_text)
    flat = [as_signless(a), as_signless(b)]
    got = run_tosa_text(tosa_text, flat)[0].view(np.uint32)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(reference(text, [a, b])[0], expected)
