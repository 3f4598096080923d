"""Shape-polymorphic exports: convs whose batch is symbolic (jax.export with
`export.symbolic_shape("b")`) are rewritten in both dialects, and at every concrete batch size the
refined rewrite is canonical, exact on XLA and at the multiply-add floor, with none of the dynamic
ops it added left once refined."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.refine import refine_at_batch

from .cases import (
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    judge,
    parse,
    run_pass,
    total_macs,
)

jax = pytest.importorskip("jax")
from jax import export, lax  # noqa: E402

DIALECTS = [pytest.param(STABLEHLO, id="stablehlo"), pytest.param(MHLO, id="mhlo")]
DYNAMIC_OPS = re.compile(r"real_dynamic_slice|dynamic_reshape|get_dimension_size|dynamic_broadcast")


@dataclass(frozen=True)
class PolyConv:
    text: str
    lhs: tuple[int, ...]  # with batch 0 standing for the symbol
    rhs: tuple[int, ...]


@st.composite
def poly_convs(draw: st.DrawFn) -> PolyConv:
    """A random conv exported by jax.export with a symbolic batch: NHWC/HWIO or NCHW/OIHW (as
    torch-mlir writes it), 1 or 2 spatial dims, strides, negative padding, lhs and rhs dilation
    and feature groups."""
    n = draw(st.integers(1, 2))
    nchw = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    strides, pads, lhs_dil, rhs_dil, extents, kernels = ([] for _ in range(6))
    for _ in range(n):
        k, s = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        ld, rd = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        lo, hi = draw(st.integers(-1, 3)), draw(st.integers(-1, 3))
        effective = (k - 1) * rd + 1
        smallest = max(1, -(-(effective - 1 - lo - hi) // ld) + 1)
        h = draw(st.integers(smallest, smallest + 5))
        strides.append(s), pads.append((lo, hi)), lhs_dil.append(ld), rhs_dil.append(rd)
        extents.append(h), kernels.append(k)
    spatial = "HW"[:n] if n == 2 else "W"
    if nchw:
        dims = (f"NC{spatial}", f"OI{spatial}", f"NC{spatial}")
        lhs, rhs = (0, cin, *extents), (cout, cin // groups, *kernels)
    else:
        dims = (f"N{spatial}C", f"{spatial}IO", f"N{spatial}C")
        lhs, rhs = (0, *extents, cin), (*kernels, cin // groups, cout)

    def conv(x, w):
        return lax.conv_general_dilated(
            x,
            w,
            tuple(strides),
            tuple(pads),
            tuple(lhs_dil),
            tuple(rhs_dil),
            dimension_numbers=dims,
            feature_group_count=groups,
        )

    (b,) = export.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, *lhs[1:]), np.float32)
    w = jax.ShapeDtypeStruct(rhs, np.float32)
    return PolyConv(export.export(jax.jit(conv))(x, w).mlir_module(), lhs, rhs)


def _inputs(case: PolyConv, batch: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = [(batch, *case.lhs[1:]), case.rhs]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("layout", ["keep", "channels-last"])
@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=poly_convs())
def test_a_symbolic_batch_is_rewritten_exact_at_every_batch_size(
    case: PolyConv, dialect: Dialect, layout: str
) -> None:
    after, stats, _ = run_pass(case.text, dialect, gate="general", conv_layout=layout)
    assert not any(k.startswith("skipped: dynamic") for k in stats.counters), stats.counters
    assert_canonical(all_conv_params(after, dialect))  # on the polymorphic module itself
    canonical = as_stablehlo_text(after, dialect)
    assert "jax.uses_shape_polymorphism" in canonical and "shape_assertion" in canonical
    for batch in (1, 2, 5):
        original = refine_at_batch(case.text, "before.mlir", batch)
        refined = refine_at_batch(canonical, "after.mlir", batch)
        assert not DYNAMIC_OPS.search(refined)
        (before,) = all_conv_params(parse(original), STABLEHLO)
        params = all_conv_params(parse(refined), STABLEHLO)
        assert_canonical(params)
        assert total_macs(params) == lattice_macs(before)
        inputs = _inputs(case, batch, seed=batch)
        run = judge([before, *params])  # the reference where XLA has known conv bugs
        assert_same_results(run(original, inputs), run(refined, inputs), "f32")


def test_dynamic_spatial_extents_stay_rejected_with_their_reason() -> None:
    (w,) = export.symbolic_shape("w")

    def conv(x, k):
        return lax.conv_general_dilated(
            x, k, (2,), "VALID", dimension_numbers=("NWC", "WIO", "NWC")
        )

    x = jax.ShapeDtypeStruct((1, 2 * w, 3), np.float32)
    text = export.export(jax.jit(conv))(
        x, jax.ShapeDtypeStruct((3, 3, 4), np.float32)
    ).mlir_module()
    _, stats, printed = run_pass(text, STABLEHLO, gate="general")
    (reason,) = [k for k in stats.counters if k.startswith("skipped: ")]
    assert reason.startswith("skipped: dynamic spatial or feature extent: lhs is tensor<1x?x3xf32>")
    assert "real_dynamic_slice" not in printed
