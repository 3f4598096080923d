"""The conv canonicalization passes: collect-then-rewrite over each `func.func`.

Phase 1 reads every conv's ConvParams and gate decision; phase 2 rewrites the accepted ones, pad
first (the stride math assumes zero padding), then stride. A lhs-dilated conv (polyphase mode)
is first split into output phases, each an undilated conv that then goes through pad and
stride. `verbose` prints the seed's phase 2b remarks (convs whose operand chain reaches another
conv) and every rejection, changing nothing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.hlo import build
from convcanon.hlo.context import source_loc, with_notes
from convcanon.hlo.dialect_check import check_conv_dialect
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.gate import ConvOptions, Decision, decide
from convcanon.hlo.io import HloFile
from convcanon.hlo.params import ConvKey, ConvParams, conv_key, int64_overflow, read_conv_params
from convcanon.hlo.phase_merge import (
    extend_kernel,
    fold_padding,
    foldable,
    kernel_extension,
    lhs_groups,
    mergeable,
    stride_convs,
    zero_tap_pads,
)
from convcanon.hlo.phase_plan import lattice_macs, lhs_dilation_plans, uses_polyphase
from convcanon.hlo.recipe import Recipe, Trace, replay
from convcanon.hlo.rewrite_layout import (
    is_channels_last,
    lhs_channels_last,
    pad_channels_last,
    to_channels_last,
)
from convcanon.hlo.rewrite_lhs_dilation import explicit_lhs_dilation, merged_lhs_dilation
from convcanon.hlo.rewrite_pad import euet001, explicit_pad, pad_overrides
from convcanon.hlo.rewrite_stride import explicit_stride
from convcanon.pipeline import OptionValue, PassStats


@dataclass
class ConvRecord:
    """What happened to one conv: what `explain` shows and the statistics count.

    The source location and type strings are derived on demand: only `explain`, remarks and
    errors need them, and printing them costs more than the rest of a conv's bookkeeping."""

    location: ir.Location
    filename: str
    params: ConvParams
    decision: Decision
    value_types: tuple[ir.Type, ir.Type, ir.Type]  # lhs, rhs, result
    phases: int = 0
    ops_added: list[str] = field(default_factory=list)
    macs_after: int = 0
    lattice_macs_before: int = 0
    lhs_phases: int = 0  # output phases of the lhs-dilation rewrite (0: not used)
    max_phases: int = 0  # the gate's limit on partial convs
    unmerged: int = 0  # partial convs without phase merging (one per phase)
    summed: int = 0  # most partial convs summed into one output element
    position: tuple[int, int] | None = None  # where the op is in the .mlir, for debug-info input

    @property
    def loc(self) -> SourceLoc:
        return source_loc(self.location, self.filename, position=self.position)

    @property
    def types(self) -> tuple[str, str, str]:
        """lhs, rhs and result types as MLIR prints them."""
        lhs, rhs, result = self.value_types
        return str(lhs), str(rhs), str(result)


def _walk(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """Every op nested under `op`, in pre-order (MLIR's own walk: no Python per-op recursion)."""
    ops: list[ir.Operation] = []

    def visit(current: ir.Operation) -> ir.WalkResult:
        ops.append(current)
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return iter(ops)


def functions(module: ir.Module) -> list[ir.Operation]:
    return [op for op in _walk(module.operation) if op.name == "func.func"]


def convs_of(func: ir.Operation, dialect: Dialect) -> list[ir.Operation]:
    return [op for op in _walk(func) if op.name == dialect.conv]


def _convs_in_functions(module: ir.Module, dialect: Dialect) -> list[ir.Operation]:
    """Every conv nested in a `func.func`, in pre-order: one walk of the module, in C++."""
    name = dialect.conv
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [conv for conv in found if _in_function(conv)]


def _in_function(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == "func.func":
            return True
        parent = parent.parent
    return False


class _Plan(NamedTuple):
    """What the gate decides and the rewrite will emit for one conv configuration."""

    decision: Decision
    phases: int  # partial convs emitted
    lattice_macs: int
    lhs_phases: int
    unmerged: int  # partial convs without merging
    summed: int  # most partial convs summed into one output element


def plan_conv(p: ConvParams, options: ConvOptions) -> _Plan:
    """The gate's decision and the rewrite's size, computed from the params alone."""
    decision = decide(p, options)
    lattice = 0 if p.dynamic_reason or p.num_spatial == 0 else lattice_macs(p)
    if not decision.accepted:
        return _Plan(decision, 0, lattice, 0, 0, 0)
    lhs_phases = 0
    if uses_polyphase(p, options.polyphase):
        lhs_phases = math.prod(len(plan.phases) for plan in lhs_dilation_plans(p))
    merged = options.merge_plan(p)
    return _Plan(decision, merged.convs, lattice, lhs_phases, merged.unmerged, merged.summed)


def _reaches_conv(conv: ir.Operation, dialect: Dialect) -> ir.Operation | None:
    """The first convolution found walking `conv`'s operands' producers (seed phase 2b)."""
    seen: set[int] = set()
    stack = [v for v in conv.operands]
    while stack:
        value = stack.pop()
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            continue  # a block argument
        producer = owner.operation
        key = hash(producer)
        if key in seen:
            continue
        seen.add(key)
        if producer.name == dialect.conv:
            return producer
        stack.extend(producer.operands)
    return None


def _remark(loc: SourceLoc, message: str) -> None:
    print(with_notes(loc, f"{loc}: remark: {message}"), file=sys.stderr)


def canonicalize(
    hlo_file: HloFile, options: Mapping[str, OptionValue], dialect: Dialect
) -> tuple[PassStats, list[ConvRecord]]:
    """Run the pass over every function; returns statistics and one record per conv seen.

    Every conv is collected (params, decision, EUET001) before any is rewritten. Params and plans
    are memoized by the conv's uniqued attributes and types: models repeat a few configurations."""
    opts = ConvOptions.from_mapping(options)
    stats = PassStats()
    records: list[ConvRecord] = []
    memo: dict[ConvKey, tuple[ConvParams, _Plan, int, bool]] = {}  # + MACs, pads have a zero
    module = hlo_file.module
    with module.context, ir.Location.unknown():
        todo: list[tuple[ir.Operation, ConvKey, ConvParams, ConvRecord]] = []
        for conv in _convs_in_functions(module, dialect):
            operands = conv.operands
            types = (operands[0].type, operands[1].type, conv.results[0].type)
            key = conv_key(conv, types)
            known = memo.get(key)
            if known is None:
                p = read_conv_params(conv)
                plan = plan_conv(p, opts)
                macs = 0 if p.dynamic_reason else p.macs
                zeros = not plan.decision.accepted or _has_zeros(p, types, opts)
                known = memo[key] = (p, plan, macs, zeros)
            p, plan, macs, zeros = known
            decision = plan.decision
            stats.bump("convs-seen")
            record = ConvRecord(
                conv.location,
                hlo_file.filename,
                p,
                decision,
                types,
                plan.phases,
                [],
                macs,
                plan.lattice_macs,
                plan.lhs_phases,
                opts.max_phases,
                plan.unmerged,
                plan.summed,
            )
            record.position = hlo_file.position_of(dialect.conv, len(records))
            records.append(record)
            if opts.verbose:
                _verbose_remarks(conv, decision, dialect, hlo_file, record.loc)
            if not decision.accepted:
                stats.bump(f"skipped: {decision.reason}")
                continue
            if not zeros:
                raise euet001(p, record.loc)
            overflow = int64_overflow(p)
            if overflow is not None:
                raise ConvcanonError(overflow, record.loc)
            todo.append((conv, key, p, record))
        builder = build.Builder(dialect)
        recipes: dict[ConvKey, Recipe | None] = {}
        for conv, key, p, record in todo:
            layout_ops: list[str] = []
            if opts.conv_layout == "channels-last" and not is_channels_last(p):
                builder.emitted = []
                conv = to_channels_last(builder, conv, p)
                layout_ops = builder.emitted
                operands = conv.operands
                types = (operands[0].type, operands[1].type, conv.results[0].type)
                key, p = conv_key(conv, types), read_conv_params(conv)
                stats.bump("channels-last")
            _rewrite(builder, conv, key, p, record, opts, stats, recipes)
            record.ops_added = layout_ops + record.ops_added
        if not records:
            check_conv_dialect(hlo_file, dialect)
        _verify(hlo_file, builder.created)
    return stats, records


def _verify(hlo_file: HloFile, created: list[build.AnyOp]) -> None:
    """Verify the rewritten module; raises MLIRError on an invalid op.

    A module known valid (parsed) needs only the ops the pass created verified: each is built
    before the conv it replaces from values that dominate that conv, and the conv's uses get a
    value of its own type, so no other op's validity changes. Replayed ops that repeat a
    recorded one exactly are not listed (see `recipe.replay`). About 1 us per listed op,
    instead of 1 us per op of the module (0.12 s for a 100k-op module)."""
    if not hlo_file.verified:
        hlo_file.module.operation.verify()
        return
    for op in created:
        op.verify()


def _verbose_remarks(
    conv: ir.Operation, decision: Decision, dialect: Dialect, hlo_file: HloFile, loc: SourceLoc
) -> None:
    if not decision.accepted:
        _remark(loc, f"convolution not canonicalized: {decision.reason}")
    producer = _reaches_conv(conv, dialect)
    if producer is not None:
        where = hlo_file.loc_of(producer)
        _remark(loc, f"convolution's operand chain reaches the convolution at {where}")


def _has_zeros(p: ConvParams, types: tuple[ir.Type, ir.Type, ir.Type], opts: ConvOptions) -> bool:
    """Whether every pad the rewrite may emit has a zero: the lhs's, and the result's for the
    pads that place output phases."""
    extends = (
        opts.merge_phases == "pad-kernel"
        and opts.merge_plan(p).convs < opts._replace(merge_phases="exact").merge_plan(p).convs
    )
    elements = []
    if p.needs_pad or extends:
        elements.append(ir.ShapedType(types[0]).element_type)
    if uses_polyphase(p, opts.polyphase):
        elements.append(ir.ShapedType(types[2]).element_type)
    if extends:
        elements.append(ir.ShapedType(types[1]).element_type)
    return all(build.has_zero(e) for e in elements)


def _rewrite(
    b: build.Builder,
    conv: ir.Operation,
    key: ConvKey,
    p: ConvParams,
    record: ConvRecord,
    opts: ConvOptions,
    stats: PassStats,
    recipes: dict[ConvKey, Recipe | None],
) -> None:
    """Rewrite one accepted conv before `conv`, which the result replaces; records the ops,
    phases and multiply-adds actually emitted.

    The first conv of a configuration (`key`) is rewritten while its ops are recorded; the
    others replay the record, which builds the same ops without planning them again."""
    ip, loc = ir.InsertionPoint(conv), record.location
    b.begin_conv(conv.operands[0])
    recipe = recipes.get(key)
    if recipe is not None:
        block = conv.block

        def zero_of(element: ir.Type) -> ir.Value:
            return b.zero(element, block, loc)

        total = replay(recipe, conv, zero_of, b.emitted, b.created, ip, loc)
    else:
        trace = None
        if key not in recipes:  # record the first conv of each key only
            operands = conv.operands
            trace = b.trace = Trace(operands[0], operands[1])
        local = PassStats()
        try:
            partials, total = _rewrite_ops(b, conv, p, record, opts, local, ip, loc)
        finally:
            b.trace = None
        macs = sum(_emitted_macs(c, p) for c in partials)
        bumps = tuple(local.counters.items())
        recipe = Recipe((), -1, len(partials), macs, bumps)
        if trace is not None:
            index = trace.refs.get(total) if trace.valid else None
            kept = (
                None
                if index is None
                else Recipe(tuple(trace.steps), index, len(partials), macs, bumps)
            )
            recipes[key] = kept
    for name, n in recipe.bumps:
        stats.bump(name, n)
    conv.results[0].replace_all_uses_with(total)
    conv.erase()
    record.phases = recipe.partials
    record.ops_added = b.emitted
    record.macs_after = recipe.macs_after


def _rewrite_ops(
    b: build.Builder,
    conv: ir.Operation,
    p: ConvParams,
    record: ConvRecord,
    opts: ConvOptions,
    stats: PassStats,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> tuple[list[ir.Operation], ir.Value]:
    """The ops that replace one accepted conv: its partial convs and the value of their sum.

    For f16/bf16/f8 results where an output sums several partials (`wide-partials`), the
    partials are f32, summed in f32 and converted once: rounding each partial first doubles the
    error. Output phases never overlap, so placing them needs no widening."""
    result_type = ir.RankedTensorType(conv.results[0].type)
    element = result_type.element_type
    wide = opts.wide_partials and record.summed > 1 and build.is_narrow_float(element)
    acc = ir.F32Type.get() if wide else element
    acc_type = b.tensor(p.result_shape, acc)
    if uses_polyphase(p, opts.polyphase):

        def rewrite_phase(
            kernel: ir.Value, q: ConvParams, overrides: dict[str, ir.Attribute], ty: ir.Type
        ) -> tuple[list[ir.Operation], ir.Value]:
            return _pad_then_stride(b, conv, kernel, q, ty, overrides, opts, ip, loc, None)

        plans = lhs_dilation_plans(p)
        if opts.merge_phases == "none":
            partials, total = explicit_lhs_dilation(b, conv, p, plans, acc, rewrite_phase, ip, loc)
        else:
            groups = lhs_groups(p, opts.merge_phases, opts.max_mac_ratio)
            partials, total = merged_lhs_dilation(
                b, conv, p, plans, groups, acc, rewrite_phase, ip, loc
            )
        stats.bump("rewritten-lhs-dilation")
    else:
        rhs = conv.operands[1]
        partials, total = _pad_then_stride(b, conv, rhs, p, acc_type, {}, opts, ip, loc, stats)
    if wide:
        total = b.convert(total, result_type, ip, loc)
        stats.bump("wide-partials")
    if record.phases < record.unmerged:
        stats.bump("merged-phases", record.unmerged - record.phases)
    return partials, total


def _pad_then_stride(
    b: build.Builder,
    conv: ir.Operation,
    rhs: ir.Value,
    p: ConvParams,
    result_type: ir.Type,
    overrides: dict[str, ir.Attribute],
    opts: ConvOptions,
    ip: ir.InsertionPoint,
    loc: ir.Location,
    stats: PassStats | None,
) -> tuple[list[ir.Operation], ir.Value]:
    """Explicit pad, then explicit stride, of the conv `p` describes: `conv`'s lhs with kernel
    `rhs`, `overrides` on `conv`'s attributes. The partials are clones of `conv` with result type
    `result_type`. Returns them and their sum."""
    lhs = conv.operands[0]
    lhs_element = ir.ShapedType(lhs.type).element_type
    lhs_shape = p.lhs_shape
    block = conv.operation.block
    if opts.merge_phases == "pad-kernel" and p.batch_group_count == 1:
        extra = kernel_extension(p, opts.max_mac_ratio)
        if any(extra):
            rhs = _extend_kernel(b, rhs, p, extra, block, ip, loc)
            p = extend_kernel(p, extra)
    rhs_element = ir.ShapedType(rhs.type).element_type
    padded = any(lo or hi for lo, hi in p.padding)  # the conv's own padding, to be reset
    merge = opts.merge_phases != "none"
    zeros = None
    lhs_layout = None
    if build.has_zero(lhs_element) and build.has_zero(rhs_element):
        zeros = (lambda: b.zero(lhs_element, block, loc), lambda: b.zero(rhs_element, block, loc))
        if merge and mergeable(p) and foldable(p):  # pad straight to the fold's extent
            p = fold_padding(p)  # (which can be none: a crop of what the fold leaves out)
            if stride_convs(p, "exact", 1.0) > 1:  # several readers of the fold
                lhs, p, lhs_layout = lhs_channels_last(b, lhs, lhs_element, p, ip, loc)
                lhs_shape = p.lhs_shape
    if p.needs_pad:

        def zero_value() -> ir.Value:
            return b.zero(lhs_element, block, loc)

        back = None
        if not p.needs_stride and pad_channels_last(p):
            lhs, p, back = lhs_channels_last(b, lhs, lhs_element, p, ip, loc)
        lhs, lhs_shape = explicit_pad(
            b, lhs, lhs_element, p, opts.negative_padding, zero_value, ip, loc
        )
        if back is not None:  # padded channels-last, read back in the conv's own layout
            lhs, lhs_shape = b.transpose(lhs, lhs_shape, lhs_element, back, ip, loc)
        overrides = {**overrides, **pad_overrides(b, p, "lhs_dilation" in conv.attributes)}
        if stats is not None:
            stats.bump("rewritten-pad")
    elif "padding" in overrides or padded:  # padding the kernel extension or the fold cancelled
        overrides = {**overrides, **pad_overrides(b, p, False)}
    if p.needs_stride:
        types = (lhs_element, rhs_element, result_type)
        partials, total = explicit_stride(
            b, conv, lhs, lhs_shape, rhs, types, p, overrides, ip, loc, merge, zeros, lhs_layout
        )
        if stats is not None:
            stats.bump("rewritten-stride")
    else:
        partials = [b.rebuild_conv(conv, lhs, rhs, overrides, ip, result_type)]
        total = partials[0].results[0]
    return partials, total


def _extend_kernel(
    b: build.Builder,
    rhs: ir.Value,
    p: ConvParams,
    extra: tuple[int, ...],
    block: ir.Block,
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """`rhs` with `extra` zero taps after its last tap per dim (before its first element when
    the window is reversed there, since tap k reads element K-1-k)."""
    element = ir.ShapedType(rhs.type).element_type
    rank = len(p.rhs_shape)
    low, high = [0] * rank, [0] * rank
    for axis, e, reversed_ in zip(p.dims.rhs_spatial, extra, p.reversal, strict=True):
        low[axis], high[axis] = zero_tap_pads(0, e, reversed_)
    zero = b.zero(element, block, loc)
    return b.pad(rhs, p.rhs_shape, element, zero, low, high, [0] * rank, ip, loc)[0]


def _emitted_macs(conv: ir.Operation, p: ConvParams) -> int:
    """Multiply-adds of an emitted conv, from its kernel and result types (dims as in `p`)."""
    kernel = ir.ShapedType(conv.operands[1].type).shape
    taps = math.prod(kernel[d] for d in p.dims.rhs_spatial) * kernel[p.dims.rhs_in_feature]
    shape = ir.ShapedType(conv.results[0].type).shape
    return math.prod(build.static_extent(d) for d in shape) * taps


def canonicalize_conv_stablehlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, STABLEHLO)[0]


def canonicalize_conv_mhlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, MHLO)[0]
