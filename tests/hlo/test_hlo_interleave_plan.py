"""How a lhs-dilated conv's output phases are put in place as its plan describes it, on plain
`ConvParams` literals without MLIR: each phase cut from its group conv's result, each stage's
rows filling their slots in order (zero blocks where no phase has taps, a crop where the slots
hold more outputs than the extent), each value built where it is read as it is; the interleave
and one depth-to-space followed element by element to q + P*m; an all-zero result that moves no
operand it does not read. That the emitted ops compute the conv is checked against XLA in
test_hlo_lhs_dilation.py."""

from __future__ import annotations

import itertools
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.hlo.conv_params import DYNAMIC, ConvParams, DimensionNumbers
from convcanon.hlo.gate import ConvOptions
from convcanon.hlo.plan import plan_conv
from convcanon.hlo.plan_phases import (
    InterleaveRow,
    InterleaveStage,
    PhaseCut,
    PhasePart,
    PhasePlan,
    ZeroBlock,
)
from tests.hlo.test_hlo_planning_on_plain_values import (
    OPTIONS,
    SETTINGS,
    elements,
    maybe_dynamic_batch,
)

# lhs-dilated convs, a transposed conv's gradient form twice as often as any other: most of the
# interleaves that cut merged phases, skip runs of phases and crop come from it
LHS_DILATED = maybe_dynamic_batch(("transposed", "transposed", "any"))
INTERLEAVES = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


def _interleave_plans(p: ConvParams, options: ConvOptions) -> PhasePlan | None:
    body = plan_conv(p, options).body
    return body if isinstance(body, PhasePlan) and body.assembly == "interleave" else None


def _stage_dim(body: PhasePlan, stage: InterleaveStage) -> tuple[int, int, int, int]:
    """The stage's spatial dim, its period, outputs per slot (ceil(O/P)) and slots (min(P, O))."""
    i = body.params.dims.out_spatial.index(stage.axis)
    period, extent = body.dims[i].period, body.params.out_spatial[i]
    return i, period, -(-extent // period), min(period, extent)


def _check_row(body: PhasePlan, stage: InterleaveStage, row: InterleaveRow, present: set[int]):
    """The row's parts fill its slots once each in order: a phase that has a value at its own
    slot (padded by one zero iff its dim plan gives it one output fewer), one zero block per
    run of slots where no phase has one; reshaped on a new axis unless it is the only part."""
    i, _, each, slots = _stage_dim(body, stage)
    outputs = {ph.q: ph.outputs for ph in body.dims[i].phases}
    slot, zeros_before = 0, False
    for part in row.parts:
        if isinstance(part, ZeroBlock):
            run = part.shape[stage.axis + 1]
            assert run > 0 and not zeros_before  # one block per run
            assert not present & set(range(slot, slot + run))
            slot, zeros_before = slot + run, True
            continue
        assert part.key == row.key[:i] + (slot,) + row.key[i + 1 :] and slot in present
        short = each - outputs[slot]
        assert short in (0, 1)
        high = [0] * len(body.params.result_shape)
        high[stage.axis] = short
        assert part.high == (tuple(high) if short else None)
        assert (part.column is None) == (len(row.parts) == 1)
        slot, zeros_before = slot + 1, False
    assert slot == slots


@INTERLEAVES
@given(p=LHS_DILATED, options=OPTIONS)
def test_each_interleave_row_fills_its_slots_once_in_order_with_zeros_only_where_no_phase_has_taps(
    p: ConvParams, options: ConvOptions
) -> None:
    """The interleave puts the dims with a period in place from the last, one stage each; a
    stage's rows are the values whose keys differ only in its dim, each read by exactly one
    row, and a row is cropped to the extent exactly when its slots hold more outputs."""
    body = _interleave_plans(p, options)
    if body is None:
        return
    q = body.params
    periodic = [i for i in range(q.num_spatial - 1, -1, -1) if body.dims[i].period > 1]
    assert [_stage_dim(body, stage)[0] for stage in body.stages] == periodic
    keys = [key for group in body.groups for key in group.phases]
    for stage in body.stages:
        i, _, each, slots = _stage_dim(body, stage)
        extent = q.out_spatial[i]
        rows = {key[:i] + (0,) + key[i + 1 :]: set[int]() for key in keys}
        for key in keys:
            rows[key[:i] + (0,) + key[i + 1 :]].add(key[i])
        assert [row.key for row in stage.rows] == list(rows)  # in the order of their values
        for row in stage.rows:
            _check_row(body, stage, row, rows[row.key])
            assert (row.crop is not None) == (each * slots > extent)
            if row.crop is not None:
                assert row.reshape is not None and row.crop[stage.axis] == extent
        keys = list(rows)
    assert keys == [(0,) * q.num_spatial]


def _cut_shape(result: tuple[int, ...], cut: PhaseCut, count: int) -> tuple[int, ...]:
    """The shape the emitter's cut of one of `count` phases gives from a group conv's
    `result`: one phase's share of its elements."""
    shape = result
    if cut.split is not None:
        assert elements(cut.split) == elements(shape)
        shape = cut.split
    bounds = list(zip(shape, cut.start, cut.limit, strict=True))
    assert all(d == DYNAMIC or 0 <= lo < hi <= d for d, lo, hi in bounds)
    shape = tuple(d if d == DYNAMIC else hi - lo for d, lo, hi in bounds)
    assert elements(shape)[1] * count == elements(result)[1]
    if cut.reshape is not None:
        assert elements(cut.reshape) == elements(shape)
        shape = cut.reshape
    return shape


def _part_shape(
    values: dict[tuple[int, ...], tuple[int, ...]], part: ZeroBlock | PhasePart, rank: int
) -> tuple[int, ...]:
    """The shape of one part of a row; a padded phase value is built (read with its own rank)."""
    if isinstance(part, ZeroBlock):
        return part.shape
    shape = values.pop(part.key)  # each value is read once
    if part.high is not None:
        assert len(shape) == rank
        shape = tuple(d + h for d, h in zip(shape, part.high, strict=True))
    if part.column is not None:
        assert elements(part.column) == elements(shape)
        shape = part.column
    return shape


def _concatenated(shapes: list[tuple[int, ...]], axis: int) -> tuple[int, ...]:
    if len(shapes) == 1:
        return shapes[0]
    assert len({s[:axis] + s[axis + 1 :] for s in shapes}) == 1
    return (*shapes[0][:axis], sum(s[axis] for s in shapes), *shapes[0][axis + 1 :])


@INTERLEAVES
@given(p=LHS_DILATED, options=OPTIONS)
def test_the_interleave_of_the_group_convs_results_is_the_result_and_builds_what_it_reads(
    p: ConvParams, options: ConvOptions
) -> None:
    """Each phase is cut from its group conv's result (whose shape the conv's own window plan
    gives) by a slice of its share; every concatenate joins parts of one shape, a padded
    value is built where it is made, and the last stage gives the result's shape, built."""
    body = _interleave_plans(p, options)
    if body is None:
        return
    rank = len(body.params.result_shape)
    values: dict[tuple[int, ...], tuple[int, ...]] = {}
    for group, cuts in zip(body.groups, body.cuts, strict=True):
        (result,) = {c.params.result_shape for c in group.conv.partials}
        assert len(cuts) == len(group.phases) and (cuts == (None,)) == (len(cuts) == 1)
        for key, cut in zip(group.phases, cuts, strict=True):
            values[key] = result if cut is None else _cut_shape(result, cut, len(cuts))
    for stage in body.stages:
        placed = {}
        for row in stage.rows:
            parts = [_part_shape(values, part, rank) for part in row.parts]
            shape = _concatenated(parts, stage.axis + 1)
            if row.reshape is not None:
                assert elements(row.reshape) == elements(shape)
                shape = row.reshape
            if row.crop is not None:
                assert all(c <= d for c, d in zip(row.crop, shape, strict=True))
                shape = row.crop
            placed[row.key] = shape
        assert not values  # every value read
        values = placed
    assert list(values.values()) == [body.params.result_shape]


@st.composite
def all_zero_convs(draw: st.DrawFn) -> ConvParams:
    """A channels-first lhs-dilated conv whose every output reads only inserted or padded zeros
    (its first dim's lhs elements sit at r mod `ld`, 0 < r < ld, and every tap reads a multiple
    of `ld`); its batch dynamic half the time."""
    n, ld = draw(st.integers(1, 2)), draw(st.integers(2, 3))
    k, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    lo = draw(st.integers(0, 2)) * ld + draw(st.integers(1, ld - 1))
    stride, dilation = ld * draw(st.integers(1, 2)), ld * draw(st.integers(1, 2))
    hi = draw(st.integers(0, 3)) + max(0, (k - 1) * dilation - (h - 1) * ld - lo)
    out = ((h - 1) * ld + lo + hi - (k - 1) * dilation) // stride + 1
    other = [draw(st.integers(1, 3)) for _ in range(n - 1)]
    batch = draw(st.sampled_from([DYNAMIC, 2]))
    spatial = tuple(range(2, n + 2))
    return ConvParams(
        lhs_shape=(batch, 2, h, *other),
        rhs_shape=(3, 2, k, *[1] * (n - 1)),
        result_shape=(batch, 3, out, *other),
        element_type="f32",
        dims=DimensionNumbers(0, 1, spatial, 1, 0, spatial, 0, 1, spatial),
        strides=(stride,) + (1,) * (n - 1),
        padding=((lo, hi),) + ((0, 0),) * (n - 1),
        lhs_dilation=(ld,) + (1,) * (n - 1),
        rhs_dilation=(dilation,) + (1,) * (n - 1),
        reversal=(False,) * n,
        feature_group_count=1,
        batch_group_count=1,
    )


@SETTINGS
@given(
    p=st.one_of(all_zero_convs(), maybe_dynamic_batch(("transposed",))),
    options=OPTIONS.map(lambda o: o._replace(conv_layout="channels-last")),
)
def test_an_all_zero_result_moves_no_operand_unless_it_reads_a_dynamic_size(
    p: ConvParams, options: ConvOptions
) -> None:
    """A lhs-dilated conv whose output phases have no taps is zeros: its plan moves neither
    operand channels-last, except the lhs whose dynamic batch the zeros' size reads."""
    plan = plan_conv(p, options)
    body, layout = plan.body, plan.channels_last
    if not isinstance(body, PhasePlan) or layout is None:
        return
    zeros = not body.groups
    assert (body.assembly == "zeros") == zeros
    dynamic = DYNAMIC in p.result_shape
    assert layout.moves_lhs == (not zeros or dynamic)
    assert not (zeros and layout.moves_kernel)


def _static(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if d == DYNAMIC else d for d in shape)  # one element of a dynamic batch


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for extent in reversed(shape):
        index, i = divmod(index, extent)
        out.append(i)
    return tuple(reversed(out))


def _ravel(index: tuple[int, ...], shape: tuple[int, ...]) -> int:
    flat = 0
    for i, extent in zip(index, shape, strict=True):
        flat = flat * extent + i
    return flat


@INTERLEAVES
@given(p=maybe_dynamic_batch(("depth-to-space", "transposed")), options=OPTIONS)
def test_depth_to_space_puts_each_phases_output_m_at_q_plus_p_times_m(
    p: ConvParams, options: ConvOptions
) -> None:
    """The one group conv's element of feature group g, phase k (its q per dim) and feature c
    at spatial m is, after the plan's split, permutation and reshape, the result's element of
    feature g*C + c at q + P*m: followed element by element, in row-major order."""
    body = plan_conv(p, options).body
    if not isinstance(body, PhasePlan) or body.assembly != "depth-to-space":
        assert not isinstance(body, PhasePlan) or body.depth_to_space is None
        return
    d, q, (group,) = body.depth_to_space, body.params, body.groups
    assert d is not None
    source, result = _static(group.conv.params.result_shape), _static(q.result_shape)
    assert math.prod(_static(d.split)) == math.prod(source) == math.prod(result)
    moved = tuple(_static(d.split)[a] for a in d.order)
    dims, count = q.dims, len(group.phases)
    per = source[dims.out_feature] // (q.feature_group_count * count)
    for flat in range(min(math.prod(source), 2048)):
        index = _unravel(flat, source)
        g, rest = divmod(index[dims.out_feature], count * per)
        phase, c = group.phases[rest // per], rest % per
        expected = list(index)
        expected[dims.out_feature] = g * per + c
        for axis, qi, plan in zip(dims.out_spatial, phase, body.dims, strict=True):
            expected[axis] = qi + plan.period * index[axis]
        split = _unravel(flat, _static(d.split))
        at = _unravel(_ravel(tuple(split[a] for a in d.order), moved), result)
        assert at == tuple(expected)


# A tensor as its static shape (a dynamic extent as one element) and its row-major elements: each
# the (group, index) of the group conv result element it holds, or None for an inserted zero.
Tensor = tuple[tuple[int, ...], list[object]]


def _reshaped(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    assert math.prod(_static(shape)) == len(t[1])
    return _static(shape), t[1]


def _sliced(t: Tensor, start: tuple[int, ...], limit: tuple[int, ...]) -> Tensor:
    shape = t[0]
    limit = tuple(d if hi == DYNAMIC else hi for d, hi in zip(shape, limit, strict=True))
    ranges = [range(lo, hi) for lo, hi in zip(start, limit, strict=True)]
    out = tuple(len(r) for r in ranges)
    return out, [t[1][_ravel(index, shape)] for index in itertools.product(*ranges)]


def _padded(t: Tensor, high: tuple[int, ...]) -> Tensor:
    out = tuple(d + h for d, h in zip(t[0], high, strict=True))
    elements: list[object] = [None] * math.prod(out)
    for flat, element in enumerate(t[1]):
        elements[_ravel(_unravel(flat, t[0]), out)] = element
    return out, elements


def _joined(ts: list[Tensor], axis: int) -> Tensor:
    if len(ts) == 1:
        return ts[0]
    out = (*ts[0][0][:axis], sum(t[0][axis] for t in ts), *ts[0][0][axis + 1 :])
    elements: list[object] = [None] * math.prod(out)
    offset = 0
    for shape, values in ts:
        for flat, element in enumerate(values):
            index = list(_unravel(flat, shape))
            index[axis] += offset
            elements[_ravel(tuple(index), out)] = element
        offset += shape[axis]
    return out, elements


def _interleaved(body: PhasePlan) -> Tensor:
    """The interleave of `body` run on labelled elements, as the emitter builds it."""
    values: dict[tuple[int, ...], Tensor] = {}
    for g, (group, cuts) in enumerate(zip(body.groups, body.cuts, strict=True)):
        shape = _static(group.conv.params.result_shape)
        result: Tensor = (shape, [(g, _unravel(i, shape)) for i in range(math.prod(shape))])
        for key, cut in zip(group.phases, cuts, strict=True):
            value = result
            if cut is not None:
                value = _reshaped(value, cut.split) if cut.split is not None else value
                value = _sliced(value, cut.start, cut.limit)
                value = _reshaped(value, cut.reshape) if cut.reshape is not None else value
            values[key] = value
    for stage in body.stages:
        placed = {}
        for row in stage.rows:
            parts = []
            for part in row.parts:
                if isinstance(part, ZeroBlock):
                    zeros = _static(part.shape)
                    parts.append((zeros, [None] * math.prod(zeros)))
                    continue
                value = values[part.key]
                value = _padded(value, part.high) if part.high is not None else value
                parts.append(_reshaped(value, part.column) if part.column is not None else value)
            value = _joined(parts, stage.axis + 1)
            value = _reshaped(value, row.reshape) if row.reshape is not None else value
            if row.crop is not None:
                value = _sliced(value, (0,) * len(row.crop), row.crop)
            placed[row.key] = value
        values = placed
    (value,) = values.values()
    return value


@INTERLEAVES
@given(p=LHS_DILATED, options=OPTIONS)
def test_the_interleave_puts_each_phases_output_m_at_q_plus_p_times_m(
    p: ConvParams, options: ConvOptions
) -> None:
    """Followed element by element, the plan's cuts and stages put the element of feature
    group g, phase k (its q per dim) and feature c at spatial m of a group conv's result at
    the result's feature g*C + c and spatial q + P*m, and zeros where no phase has taps."""
    body = _interleave_plans(p, options)
    if body is None or math.prod(_static(body.params.result_shape)) > 4096:
        return
    q = body.params
    dims = q.dims
    shape, elements = _interleaved(body)
    assert shape == _static(q.result_shape)
    where = {
        key: (g, k) for g, group in enumerate(body.groups) for k, key in enumerate(group.phases)
    }
    for flat, element in enumerate(elements):
        index = _unravel(flat, shape)
        spatial = [index[axis] for axis in dims.out_spatial]
        key = tuple(o % d.period for o, d in zip(spatial, body.dims, strict=True))
        if key not in where:
            assert element is None
            continue
        g, k = where[key]
        count, per = len(body.groups[g].phases), shape[dims.out_feature] // q.feature_group_count
        block, c = divmod(index[dims.out_feature], per)
        expected = list(index)
        expected[dims.out_feature] = block * count * per + k * per + c
        for axis, o, d in zip(dims.out_spatial, spatial, body.dims, strict=True):
            expected[axis] = o // d.period
        assert element == (g, tuple(expected))
