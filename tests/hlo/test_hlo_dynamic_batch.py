"""Shape-polymorphic exports: convs whose batch is symbolic (jax.export with
`export.symbolic_shape("b")`) are rewritten in both dialects, and at every concrete batch size the
refined rewrite is canonical, exact on XLA and at the multiply-add floor, with none of the dynamic
ops it added left once refined. That includes the kernel gradients of a training step, whose
symbolic batch is the contracted feature dim of the conv."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.hlo.conv_params import ConvParams
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.gate import ConvOptions
from convcanon.hlo.options import Engine, MergePhases
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.hlo.plan import plan_conv
from convcanon.hlo.policy import POLICIES
from convcanon.refine import refine_at_batch

from .cases import (
    all_conv_params,
    as_stablehlo_text,
    assert_canonical,
    assert_same_results,
    judge,
    mac_ceiling,
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


def _window_dim(
    draw: st.DrawFn, kernel: int, lhs_dilation: int, pad: int, least: int, more: int
) -> tuple[int, int, int, int, tuple[int, int], int]:
    """One spatial dim of a random conv: (kernel, stride, lhs dilation, rhs dilation, padding,
    lhs extent), the extent at least `least` and large enough for one output."""
    k, s = draw(st.integers(1, kernel)), draw(st.integers(1, 3))
    ld, rd = draw(st.integers(1, lhs_dilation)), draw(st.integers(1, 2))
    lo, hi = draw(st.integers(-1, pad)), draw(st.integers(-1, pad))
    effective = (k - 1) * rd + 1
    smallest = max(least, -(-(effective - 1 - lo - hi) // ld) + 1)
    return k, s, ld, rd, (lo, hi), draw(st.integers(smallest, smallest + more))


@st.composite
def poly_convs(draw: st.DrawFn) -> PolyConv:
    """A random conv exported by jax.export with a symbolic batch: NHWC/HWIO or NCHW/OIHW (as
    torch-mlir writes it), 1 or 2 spatial dims, strides, negative padding, lhs and rhs dilation
    and feature groups."""
    n = draw(st.integers(1, 2))
    nchw = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    windows = [
        _window_dim(draw, kernel=4, lhs_dilation=3, pad=3, least=1, more=5) for _ in range(n)
    ]
    kernels, strides, lhs_dil, rhs_dil, pads, extents = (
        list(v) for v in zip(*windows, strict=True)
    )
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


def _assert_exact_at_batch_sizes(
    text: str, canonical: str, case: PolyProgram, **options: Any
) -> None:
    """At batch 1, 2 and 5 the refined rewrite has no dynamic op left, only canonical convs, the
    original's lattice multiply-adds (within max-mac-ratio of them where the pass `options`
    zero-extend a kernel), and the original's results."""
    for batch in (1, 2, 5):
        original = refine_at_batch(text, "before.mlir", batch)
        refined = refine_at_batch(canonical, "after.mlir", batch)
        assert not DYNAMIC_OPS.search(refined)
        before = all_conv_params(parse(original), STABLEHLO)
        params = all_conv_params(parse(refined), STABLEHLO)
        assert_canonical(params)
        floor = sum(lattice_macs(p) for p in before)
        assert floor <= total_macs(params) <= mac_ceiling(before, gate="general", **options)
        inputs = case.inputs(batch, seed=batch)
        run = judge([*before, *params])  # the reference where XLA has known conv bugs
        assert_same_results(run(original, inputs), run(refined, inputs), "f32")


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
    program = PolyProgram(case.text, [case.lhs, case.rhs])
    _assert_exact_at_batch_sizes(case.text, canonical, program, conv_layout=layout)


@dataclass(frozen=True)
class PolyProgram:
    text: str
    shapes: list[tuple[int, ...]]  # each argument's, with batch 0 standing for the symbol

    def inputs(self, batch: int, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal((batch, *s[1:]) if s[0] == 0 else s).astype(np.float32)
            for s in self.shapes
        ]


@dataclass(frozen=True)
class ConvConfig:
    """A conv of a training step: NHWC/HWIO or NCHW/OIHW, its window and feature groups."""

    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    groups: int = 1
    cin: int = 2  # per group
    cout: int = 2  # per group
    nchw: bool = False


def training_step(c: ConvConfig) -> PolyProgram:
    """`jax.export` with a symbolic batch of one conv's training step: the forward conv and, by
    `jax.vjp` of an incoming gradient, the input gradient and the kernel gradient (a conv whose
    lhs is the activation laid out `[f, 0.., b]`: the batch is its contracted feature)."""
    n = len(c.spatial)
    letters = "HW"[:n] if n == 2 else "W"
    cin, cout = c.groups * c.cin, c.groups * c.cout
    if c.nchw:
        dims = (f"NC{letters}", f"OI{letters}", f"NC{letters}")
        lhs, rhs = (1, cin, *c.spatial), (cout, c.cin, *c.kernel)
    else:
        dims = (f"N{letters}C", f"{letters}IO", f"N{letters}C")
        lhs, rhs = (1, *c.spatial, cin), (*c.kernel, c.cin, cout)

    def conv(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(
            x,
            w,
            c.strides,
            c.padding,
            c.lhs_dilation,
            c.rhs_dilation,
            dimension_numbers=dims,
            feature_group_count=c.groups,
        )

    def step(w: Any, x: Any, g: Any) -> tuple[Any, ...]:
        y, vjp = jax.vjp(conv, x, w)
        return (y, *vjp(g))

    def spec(shape: tuple[Any, ...]) -> Any:
        return jax.ShapeDtypeStruct(shape, np.float32)

    out = tuple(jax.eval_shape(conv, spec(lhs), spec(rhs)).shape)
    (b,) = export.symbolic_shape("b")
    args = [spec(rhs), spec((b, *lhs[1:])), spec((b, *out[1:]))]
    text = export.export(jax.jit(step))(*args).mlir_module()
    return PolyProgram(text, [rhs, (0, *lhs[1:]), (0, *out[1:])])


def _kernel_gradients(params: list[ConvParams]) -> list[ConvParams]:
    return [p for p in params if p.dynamic_feature]


def _assert_training_step_rewritten(
    c: ConvConfig, dialect: Dialect, **options: str
) -> list[ConvParams]:
    """The rewritten step's convs, checked canonical and exact at every batch size."""
    case = training_step(c)
    before = parse(case.text, dialect)
    assert len(_kernel_gradients(all_conv_params(before, dialect))) == 1  # what this is about
    after, stats, _ = run_pass(case.text, dialect, gate="general", **options)
    assert not any(k.startswith("skipped: dynamic") for k in stats.counters), stats.counters
    params = all_conv_params(after, dialect)
    assert_canonical(params)
    _assert_exact_at_batch_sizes(case.text, as_stablehlo_text(after, dialect), case, **options)
    return params


# The issue's kernel gradient (unit stride, padding (0, 1), rhs dilation 2, from a 3x3/2 conv on
# 8x8x8), a dilated conv's (strided), a transposed conv's (lhs-dilated) and a grouped conv's
# (batch_group_count 2 over the static activation features).
TRAINING_STEPS = {
    "strided": ConvConfig((8, 8), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 8, 8),
    "dilated": ConvConfig((9, 7), (3, 2), (1, 1), ((1, 2), (0, 1)), (1, 1), (2, 3)),
    "transposed": ConvConfig((5, 5), (4, 4), (1, 1), ((2, 2), (1, 2)), (2, 2), (1, 1)),
    "grouped": ConvConfig((8, 6), (3, 3), (2, 1), ((1, 1), (0, 2)), (1, 1), (1, 2), 2, nchw=True),
}


@pytest.mark.parametrize("layout", ["keep", "channels-last"])
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", list(TRAINING_STEPS))
def test_kernel_gradients_of_a_symbolic_batch_are_rewritten_exact(
    name: str, dialect: Dialect, layout: str
) -> None:
    params = _assert_training_step_rewritten(TRAINING_STEPS[name], dialect, conv_layout=layout)
    assert _kernel_gradients(params)  # the dynamic feature is carried, not made static


@pytest.mark.parametrize("merge", ["pad-kernel", "none"])
@pytest.mark.parametrize("name", list(TRAINING_STEPS))
def test_kernel_gradients_are_exact_in_every_merge_mode(name: str, merge: str) -> None:
    _assert_training_step_rewritten(TRAINING_STEPS[name], STABLEHLO, merge_phases=merge)


@pytest.mark.parametrize("engine", ["iree-cpu", "generic"])
@pytest.mark.parametrize("name", list(TRAINING_STEPS))
def test_kernel_gradients_are_exact_under_every_engine_policy(name: str, engine: str) -> None:
    """Also no line kernel: no conv of these steps has one, and these policies split the line
    partials (stride phases, and the input gradient's output phases) of the batch-polymorphic
    step into one conv per tap."""
    params = _assert_training_step_rewritten(TRAINING_STEPS[name], STABLEHLO, engine=engine)
    assert not any(sum(k > 1 for k in q.kernel_spatial) == 1 for q in params)


def test_the_issue_kernel_gradient_is_one_padded_conv_over_the_dynamic_feature() -> None:
    case = training_step(TRAINING_STEPS["strided"])
    (grad,) = _kernel_gradients(all_conv_params(parse(case.text), STABLEHLO))
    assert (grad.padding, grad.rhs_dilation) == (((1, 0), (1, 0)), (2, 2))
    assert grad.result_shape == (3, 3, 8, 8)
    _, stats, printed = run_pass(case.text, STABLEHLO, gate="general")
    assert stats.counters["rewritten-pad"] == 2  # the forward's and the kernel gradient's
    assert "tensor<?x9x9x8xf32>" in printed or "tensor<8x9x9x?xf32>" in printed  # padded lhs


@pytest.mark.parametrize("engine", ["xla-cpu", "iree-cpu", "generic"])
@pytest.mark.parametrize("mode", ["exact", "pad-kernel", "none"])
@pytest.mark.parametrize("name", list(TRAINING_STEPS))
def test_a_kernel_gradient_emits_the_partial_convs_the_gate_counted(
    name: str, mode: MergePhases, engine: Engine
) -> None:
    """`max-phases` and the statistics count before planning: the plan of a conv over a dynamic
    feature (stride phases never joined on it) must emit as many convs as that count says, the
    count and the plan made under the one engine policy the options name."""
    options = ConvOptions(gate="general", merge_phases=mode, engine=engine)
    case = training_step(TRAINING_STEPS[name])
    (grad,) = _kernel_gradients(all_conv_params(parse(case.text), STABLEHLO))
    plan = plan_conv(grad, options)
    assert plan.decision.accepted and plan.decision.reason.endswith("(dynamic feature)")
    assert plan.decision.merged is not None
    counted = plan.decision.merged.convs
    if POLICIES[engine].split_line_partials:  # a line phase is one conv per tap, past the count
        assert len(plan.partials) >= counted
    else:
        assert len(plan.partials) == counted
    assert plan.lattice_macs == lattice_macs(grad)
    if mode == "pad-kernel":  # zero taps that merge phases, within the ratio
        assert plan.lattice_macs <= plan.macs_after <= options.max_mac_ratio * plan.lattice_macs
    else:
        assert plan.macs_after == plan.lattice_macs


@st.composite
def conv_configs(draw: st.DrawFn) -> ConvConfig:
    """A random training-step conv: 1 or 2 spatial dims, strides, padding (negative too), lhs
    and rhs dilation, feature groups, either layout."""
    n = draw(st.integers(1, 2))
    windows = [
        _window_dim(draw, kernel=3, lhs_dilation=2, pad=2, least=2, more=4) for _ in range(n)
    ]
    kernel, strides, lhs_dil, rhs_dil, padding, spatial = zip(*windows, strict=True)
    return ConvConfig(
        spatial,
        kernel,
        strides,
        padding,
        lhs_dil,
        rhs_dil,
        draw(st.sampled_from([1, 2])),
        draw(st.integers(1, 2)),
        draw(st.integers(1, 2)),
        draw(st.booleans()),
    )


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=conv_configs())
def test_random_kernel_gradients_are_rewritten_exact(config: ConvConfig, dialect: Dialect) -> None:
    _assert_training_step_rewritten(config, dialect)


_GROUPED_OVER_DYNAMIC_FEATURE = """
func.func @main(%x: tensor<4x6x?xf32>, %w: tensor<3x?x4xf32>) -> tensor<4x6x4xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
    window = {stride = [1], pad = [[1, 1]], rhs_dilate = [1]}
    {batch_group_count = 1 : i64, feature_group_count = 2 : i64}
    : (tensor<4x6x?xf32>, tensor<3x?x4xf32>) -> tensor<4x6x4xf32>
  return %0 : tensor<4x6x4xf32>
}
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_feature_groups_over_a_dynamic_feature_stay_rejected_with_their_reason(
    dialect: Dialect,
) -> None:
    """The kernel's input features are then half the dynamic extent: no value of the conv holds
    that size for a slice of the kernel to read."""
    after, stats, _ = run_pass(_GROUPED_OVER_DYNAMIC_FEATURE, dialect, gate="general")
    skipped = {k: v for k, v in stats.counters.items() if k.startswith("skipped: ")}
    assert skipped == {"skipped: dynamic feature extent with feature_group_count > 1": 1}
    (conv,) = all_conv_params(after, dialect)
    assert conv.padding == ((1, 1),) and conv.feature_group_count == 2  # left as it was


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
