"""The gate, the options and policy resolved per conv, phase merging and the planner on plain
`ConvParams` literals, without MLIR: what the gate counts is what the plan builds, every partial
conv is canonical and shaped as its own window says, and the multiply-adds stay at the floor
(the per-dim phase algebra is checked against numpy in test_hlo_phase_plan.py and
test_hlo_lhs_dilation.py)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Literal
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from convcanon.hlo import gate
from convcanon.hlo.config import resolve
from convcanon.hlo.conv_params import DYNAMIC, ConvParams, DimensionNumbers, padded_extent
from convcanon.hlo.gate import ConvOptions, decide
from convcanon.hlo.phase_merge import merge_plan
from convcanon.hlo.phase_plan import lattice_macs
from convcanon.hlo.plan import ConvPlan, plan_conv
from convcanon.hlo.plan_fold import Fold, Unfold
from convcanon.hlo.plan_layout import moves_data, permuted
from convcanon.hlo.plan_phases import PhasePlan, Rearrangement
from convcanon.hlo.plan_window import Operand, Slices, WindowPlan
from convcanon.hlo.policy import POLICIES, EnginePolicy

REPO = Path(__file__).resolve().parents[2]
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@pytest.mark.parametrize(
    "module", ["test_hlo_planning_on_plain_values", "test_hlo_interleave_plan"]
)
def test_planning_imports_no_mlir(module: str) -> None:
    """The plain-value planning tests and everything they plan with load without jaxlib (or
    JAX, or numpy)."""
    code = (
        f"import sys; import tests.hlo.{module}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'jax', 'jaxlib', 'numpy'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# -- whole convs ----------------------------------------------------------------------------------


Kind = Literal["any", "strided", "transposed", "depth-to-space"]


# one spatial dim: lhs extent, kernel, rhs dilation, stride, lhs dilation, padding, output
SpatialDim = tuple[int, int, int, int, int, tuple[int, int], int]


@st.composite
def spatial_dim(draw: st.DrawFn, kind: Kind) -> SpatialDim:
    """One spatial dim of a valid conv of `kind` (see `conv_params`)."""
    k, d = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    s, ld = draw(st.integers(1, 3)), draw(st.sampled_from([1, 1, 2, 3]))
    lo, hi = draw(st.integers(-1, 3)), draw(st.integers(-1, 3))
    if kind == "strided":
        s, d, ld = draw(st.integers(2, 3)), 1, 1
        k = draw(st.integers(s, 4))
    elif kind == "transposed":
        s, d, ld = 1, 1, draw(st.integers(2, 3))
        lo, hi = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
    elif kind == "depth-to-space":  # every phase reads one window, with O/P outputs
        s, d, ld = 1, 1, draw(st.integers(2, 3))
        k = ld * draw(st.integers(1, 2))
        lo = hi = k - 1
    h = draw(st.integers(1, 9))
    padded = padded_extent(h, lo, hi, ld - 1)
    window = (k - 1) * d + 1
    assume(padded >= window)
    return (h, k, d, s, ld, (lo, hi), (padded - window) // s + 1)


@st.composite
def conv_params(draw: st.DrawFn, kind: Kind = "any") -> ConvParams:
    """A valid conv: 1 or 2 spatial dims in a random layout, strides, rhs and lhs dilation,
    padding (negative too), window reversal, feature groups. `strided`: strided windows at
    least as wide as their stride, without dilation (those a space-to-depth fold reads);
    `transposed`: lhs-dilated, unit stride, padded by less than the window (a transposed
    conv's gradient form, whose output phases may read one window); `depth-to-space`: one
    whose kernel is a multiple of its lhs dilation, fully padded (a VALID transposed conv)."""
    n = draw(st.integers(1, 2))
    spatial = [draw(spatial_dim(kind)) for _ in range(n)]
    groups = draw(st.sampled_from([1, 2]))
    in_per_group, out_per_group = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    batch = draw(st.integers(1, 2))

    def layout() -> tuple[int, ...]:
        return tuple(draw(st.permutations(range(n + 2))))

    lhs_axes, rhs_axes, out_axes = layout(), layout(), layout()  # axis of each role
    dims = DimensionNumbers(
        lhs_batch=lhs_axes[0],
        lhs_feature=lhs_axes[1],
        lhs_spatial=lhs_axes[2:],
        rhs_in_feature=rhs_axes[0],
        rhs_out_feature=rhs_axes[1],
        rhs_spatial=rhs_axes[2:],
        out_batch=out_axes[0],
        out_feature=out_axes[1],
        out_spatial=out_axes[2:],
    )

    def shape(
        axes: tuple[int, ...], first: int, second: int, extents: list[int]
    ) -> tuple[int, ...]:
        out = [0] * (n + 2)
        for axis, extent in zip(axes, [first, second, *extents], strict=True):
            out[axis] = extent
        return tuple(out)

    return ConvParams(
        lhs_shape=shape(lhs_axes, batch, groups * in_per_group, [d[0] for d in spatial]),
        rhs_shape=shape(rhs_axes, in_per_group, groups * out_per_group, [d[1] for d in spatial]),
        result_shape=shape(out_axes, batch, groups * out_per_group, [d[6] for d in spatial]),
        element_type="f32",
        dims=dims,
        strides=tuple(d[3] for d in spatial),
        padding=tuple(d[5] for d in spatial),
        lhs_dilation=tuple(d[4] for d in spatial),
        rhs_dilation=tuple(d[2] for d in spatial),
        reversal=tuple(draw(st.booleans()) for _ in spatial),
        feature_group_count=groups,
        batch_group_count=1,
        narrow_result=draw(st.booleans()),
    )


OPTIONS = st.builds(
    ConvOptions,
    gate=st.just("general"),
    lhs_dilation=st.sampled_from(["polyphase", "interior-pad"]),
    negative_padding=st.sampled_from(["pad", "slice"]),
    merge_phases=st.sampled_from(["auto", "exact", "pad-kernel", "none"]),
    max_mac_ratio=st.sampled_from([1.0, 2.0, 3.0]),
    conv_layout=st.sampled_from(["auto", "keep", "channels-last"]),
    engine=st.sampled_from(list(POLICIES)),
    max_phases=st.just(10_000),
)


def _window_outputs(q: ConvParams) -> tuple[int, ...]:
    """The output extents `q`'s own shapes and window give."""
    return tuple(
        (padded - ((k - 1) * d + 1)) // s + 1
        for padded, k, d, s in zip(
            q.padded_spatial, q.kernel_spatial, q.rhs_dilation, q.strides, strict=True
        )
    )


@SETTINGS
@given(p=conv_params(), options=OPTIONS)
def test_the_plan_emits_the_convs_the_gate_counted_at_the_multiply_add_floor(
    p: ConvParams, options: ConvOptions
) -> None:
    """The gate counts under the config the plan is made under; each partial conv is canonical
    and its declared result is what its own operands and window give; the partials' multiply-adds
    are the floor (the lattice's), or within max-mac-ratio of it where kernels are zero-extended."""
    plan = plan_conv(p, options)
    config = resolve(p, options)
    assert plan.decision == decide(p, config)
    assert (plan.policy, plan.merge) == (options.engine, config.merge)
    if not plan.decision.accepted:
        assert plan.body is None and not plan.partials
        return
    merged = plan.decision.merged
    assert merged is not None and merged.convs <= merged.unmerged
    assert dict(plan.counters).get("merged-phases", 0) == merged.unmerged - merged.convs
    floor = lattice_macs(p)
    assert plan.lattice_macs == floor
    interior = options.lhs_dilation == "interior-pad" and any(d > 1 for d in p.lhs_dilation)
    for partial in plan.partials:
        q = partial.params
        assert q.strides == (1,) * q.num_spatial and q.lhs_dilation == (1,) * q.num_spatial
        assert q.padding == ((0, 0),) * q.num_spatial
        assert _window_outputs(q) == q.out_spatial
    base = p.macs if interior else floor  # interior-pad multiplies the inserted zeros too
    if config.merge == "pad-kernel":
        assert base <= plan.macs_after <= math.floor(base * options.max_mac_ratio + 1e-9)
    else:
        assert plan.macs_after == base
    splits = config.per_tap or config.policy.split_line_partials
    if not splits:  # a split writes one conv per tap, past the gate's count of phases
        assert len(plan.partials) == merged.convs


@SETTINGS
@given(p=conv_params(), options=OPTIONS, max_phases=st.integers(1, 12))
def test_an_accepted_conv_never_emits_more_partial_convs_than_max_phases(
    p: ConvParams, options: ConvOptions, max_phases: int
) -> None:
    """`max-phases` bounds the partial convs a rewrite emits. The gate counts merged phases
    before anything is enumerated; a policy that writes a partial as one conv per tap (a
    depthwise conv, a line phase) emitted more than it counted (a 3x3/2 depthwise conv under
    `generic`: 9 against 4), so the plan's own count is checked too."""
    options = options._replace(max_phases=max_phases)
    plan = plan_conv(p, options)
    if plan.decision.accepted:
        assert len(plan.partials) <= max_phases
        return
    assert plan.body is None and not plan.partials
    unlimited = plan_conv(p, options._replace(max_phases=10_000))
    if unlimited.decision.accepted:  # refused for its count alone, and it says so
        assert len(unlimited.partials) > max_phases
        assert plan.decision.reason.endswith(f"over max-phases {max_phases}")


@SETTINGS
@given(p=conv_params(), options=OPTIONS)
def test_the_config_resolves_auto_once_and_keeps_what_was_asked(
    p: ConvParams, options: ConvOptions
) -> None:
    config = resolve(p, options)
    policy = POLICIES[options.engine]
    assert config.policy is policy and config.options.merge_phases == config.merge
    if options.merge_phases != "auto":
        assert config.merge == options.merge_phases
    elif config.merge == "pad-kernel":  # an image stem: few input features, strided
        assert p.needs_stride and p.lhs_shape[p.dims.lhs_feature] <= policy.pad_kernel_features
    expected_layout = options.conv_layout == "channels-last" or (
        options.conv_layout == "auto" and policy.channels_last
    )
    assert config.channels_last == expected_layout
    assert config.polyphase == (options.polyphase and any(d > 1 for d in p.lhs_dilation))


@SETTINGS
@given(p=conv_params(), options=OPTIONS)
def test_merging_never_adds_convs(p: ConvParams, options: ConvOptions) -> None:
    config = resolve(p, options)
    polyphase = config.polyphase
    none = merge_plan(p, polyphase, "none", options.max_mac_ratio)
    for mode in ("exact", "pad-kernel"):
        merged = merge_plan(p, polyphase, mode, options.max_mac_ratio)
        assert merged.unmerged == none.unmerged == none.convs
        assert 1 <= merged.convs <= none.convs or none.convs == 0


# -- every choice between forms is the plan's ------------------------------------------------------


def _nhwc(
    spatial: int, kernel: int, stride: int, pad: int, lhs_dilation: int, out: int
) -> ConvParams:
    dims = DimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    return ConvParams(
        lhs_shape=(1, spatial, spatial, 8),  # more features than an image stem
        rhs_shape=(kernel, kernel, 8, 8),
        result_shape=(1, out, out, 8),
        element_type="f32",
        dims=dims,
        strides=(stride, stride),
        padding=((pad, pad), (pad, pad)),
        lhs_dilation=(lhs_dilation, lhs_dilation),
        rhs_dilation=(1, 1),
        reversal=(False, False),
        feature_group_count=1,
        batch_group_count=1,
    )


def test_a_folded_strided_conv_reads_each_kernel_phase_as_one_slice_and_folds_no_kernel() -> None:
    """A 3x3/2 conv's lhs is folded (space-to-depth) once; each partial's kernel is one strided
    slice of the kernel, so no kernel fold is planned for the emitter to build and drop."""
    plan = plan_conv(_nhwc(8, 3, 2, 1, 1, 4), ConvOptions(gate="general", engine="xla-cpu"))
    body = plan.body
    assert isinstance(body, WindowPlan) and body.lhs_fold is not None
    assert body.kernel_fold is None
    assert len(body.partials) == 4
    assert all(isinstance(c.rhs, Slices) and len(c.rhs.windows) == 1 for c in body.partials)


def test_a_2x2_stride_2_transposed_conv_plans_its_kernel_as_one_rearrangement() -> None:
    """Its four output phases read one window: one 1x1 conv whose kernel is the kernel
    rearranged (fewer ops than four slices and a concatenate), put in place by depth-to-space."""
    plan = plan_conv(_nhwc(4, 2, 1, 1, 2, 8), ConvOptions(gate="general"))
    body = plan.body
    assert isinstance(body, PhasePlan) and body.assembly == "depth-to-space"
    (group,) = body.groups
    assert isinstance(group.kernel, Rearrangement)
    assert group.conv.params.kernel_spatial == (1, 1)


@settings(max_examples=40, deadline=None)
@given(p=conv_params(), options=OPTIONS)
def test_planning_a_conv_resolves_its_policy_and_counts_its_convs_once(
    p: ConvParams, options: ConvOptions
) -> None:
    """The options and policy are resolved into one config that the gate's count and the
    planner both read: `merge_mode` and `merge_plan` run once per conv configuration."""
    calls: list[str] = []
    merge_mode, merge_plan = EnginePolicy.merge_mode, gate.merge_plan

    def counted_mode(*args: object) -> object:
        calls.append("merge_mode")
        return merge_mode(*args)  # pyright: ignore[reportArgumentType]

    def counted_plan(*args: object) -> object:
        calls.append("merge_plan")
        return merge_plan(*args)  # pyright: ignore[reportArgumentType]

    with (
        mock.patch.object(EnginePolicy, "merge_mode", counted_mode),
        mock.patch.object(gate, "merge_plan", counted_plan),
    ):
        plan = plan_conv(p, options)
    counted = 1 if plan.decision.accepted else calls.count("merge_plan")  # 0 if refused early
    assert calls == ["merge_mode"] + ["merge_plan"] * counted and counted <= 1


# -- the plan's build facts: what the emitter builds, decided on plain values ---------------------


@st.composite
def maybe_dynamic_batch(
    draw: st.DrawFn, kinds: tuple[Kind, ...] = ("any", "strided")
) -> ConvParams:
    """A conv of `conv_params` (of each of `kinds` as often), its batch only known at run time
    half the time."""
    p = draw(conv_params(draw(st.sampled_from(kinds))))
    if not draw(st.booleans()):
        return p
    lhs, out = list(p.lhs_shape), list(p.result_shape)
    lhs[p.dims.lhs_batch] = out[p.dims.out_batch] = DYNAMIC
    return p._replace(lhs_shape=tuple(lhs), result_shape=tuple(out))


def _window_plans(plan: ConvPlan) -> list[WindowPlan]:
    if isinstance(plan.body, WindowPlan):
        return [plan.body]
    if isinstance(plan.body, PhasePlan):
        return [g.conv for g in plan.body.groups]
    return []


def elements(shape: tuple[int, ...]) -> tuple[int, int]:
    """(dynamic extents, product of the static ones): what a reshape keeps."""
    return shape.count(DYNAMIC), math.prod(d for d in shape if d != DYNAMIC)


def _check_fold(fold: Fold, operand: tuple[int, ...], readers: list[Operand]) -> None:
    """The fold crops or pads `operand` to whole folds and splits each folded axis into
    (outer, s); it builds its split iff an unfold reads it, and else the dynamic size of a
    dynamic `operand`."""
    target = list(operand)
    for axis, outer, s in fold.folds:
        target[axis] = outer * s
    shape = operand
    if fold.limit is not None:
        assert any(t < e for t, e in zip(target, operand, strict=True))
        shape = fold.limit
    if fold.high is not None:
        shape = tuple(e + h for e, h in zip(shape, fold.high, strict=True))
    assert shape == tuple(target)
    assert elements(fold.split) == elements(shape)
    assert len(fold.split) == len(operand) + len(fold.folds)
    unfolds = [u for u in readers if isinstance(u, Unfold)]
    assert unfolds, "a fold no partial reads is not planned"
    assert fold.split_read == any(u.reads_split for u in unfolds)
    # where no split is built, the unfolds' reshapes of a dynamic extent read the size the
    # fold builds
    assert fold.builds_size == (not fold.split_read and DYNAMIC in operand)


def _check_unfold(u: Unfold, fold: Fold, operand: tuple[int, ...]) -> None:
    """`u`'s crop, split, permutation and merged shape give the partial's `operand`; it reads
    the fold's split only where it crops it or moves its data."""
    cropped = fold.split
    if u.crop is not None:
        start, limit = u.crop
        assert len(start) == len(limit) == len(fold.split)
        cropped = tuple(
            d if d == DYNAMIC else hi - lo
            for d, lo, hi in zip(fold.split, start, limit, strict=True)
        )
        assert cropped != fold.split or start != (0,) * len(start)
    assert elements(u.split) == elements(cropped)
    assert sorted(u.order) == list(range(len(u.split)))
    assert elements(u.merged) == elements(u.split)
    assert (permuted(u.merged, u.layout) if u.layout is not None else u.merged) == operand
    if not u.reads_split:  # a reshape of the folded operand: nothing cropped
        assert u.crop is None
    else:
        assert u.crop is not None or moves_data(fold.split, u.order)


@SETTINGS
@given(p=maybe_dynamic_batch(), options=OPTIONS)
def test_a_folds_split_is_built_iff_an_unfold_reads_it_and_each_geometry_fits(
    p: ConvParams, options: ConvOptions
) -> None:
    """Each fold and unfold carries what the emitter builds: the fold's crop or pad to whole
    folds and its split (built only when an unfold slices or transposes it), each unfold's
    crop, permutation and shapes, which give exactly the partial conv's operand."""
    plan = plan_conv(p, options)
    for window in _window_plans(plan):
        lhs = [c.lhs for c in window.partials]
        rhs = [c.rhs for c in window.partials]
        if window.lhs_fold is None:
            assert not any(isinstance(u, Unfold) for u in lhs)
        else:
            _check_fold(window.lhs_fold, window.params.lhs_shape, lhs)
        if window.kernel_fold is None:
            assert not any(isinstance(u, Unfold) for u in rhs)
        else:
            _check_fold(window.kernel_fold, window.params.rhs_shape, rhs)
        for c in window.partials:
            if isinstance(c.lhs, Unfold):
                assert window.lhs_fold is not None
                _check_unfold(c.lhs, window.lhs_fold, c.params.lhs_shape)
            if isinstance(c.rhs, Unfold):
                assert window.kernel_fold is not None
                _check_unfold(c.rhs, window.kernel_fold, c.params.rhs_shape)


@SETTINGS
@given(p=conv_params(kind="transposed"), options=OPTIONS)
def test_a_kernel_rearrangement_absorbs_the_channels_last_move_iff_it_starts_by_a_transpose(
    p: ConvParams, options: ConvOptions
) -> None:
    """A phase group's kernel rearrangement that starts by transposing the kernel carries the
    kernel's channels-last move (one transpose of the conv's own kernel does both), and the
    kernel is moved as a value of its own only where something reads it so: a window rewrite,
    or a phase group whose kernel absorbs no move."""
    plan = plan_conv(p, options)
    layout, body = plan.channels_last, plan.body
    if layout is None or body is None:
        assert body is None or not any(
            isinstance(g.kernel, Rearrangement) and g.kernel.move is not None
            for g in (body.groups if isinstance(body, PhasePlan) else ())
        )
        return
    if isinstance(body, WindowPlan):
        assert layout.moves_kernel
        return
    kernel = layout.params.rhs_shape  # the moved kernel's
    assert kernel == permuted(p.rhs_shape, layout.rhs)
    absorbed = 0
    for group in body.groups:
        r = group.kernel
        if not isinstance(r, Rearrangement):
            continue
        assert sorted(r.order) == list(range(len(r.split)))
        assert math.prod(r.merged) == math.prod(r.cut if r.cut is not None else r.split)
        first = r.crop is None and r.high is None and r.cut is None and not r.flips
        starts_by_transpose = first and r.split == kernel and moves_data(kernel, r.order)
        assert (r.move is not None) == starts_by_transpose
        if r.move is not None:
            absorbed += 1
            assert r.move == layout.rhs
            # one transpose of the conv's own kernel gives what the move and `order` give
            assert permuted(p.rhs_shape, tuple(r.move[d] for d in r.order)) == permuted(
                kernel, r.order
            )
    assert layout.moves_kernel == (absorbed < len(body.groups))
