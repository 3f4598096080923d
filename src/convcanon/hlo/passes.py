"""The conv canonicalization passes: collect-then-rewrite over each `func.func` (DESIGN 2.5).

Phase 1 reads every conv's ConvParams and gate decision; phase 2 rewrites the accepted ones, pad
first (the stride math assumes zero padding), then stride. `verbose` prints the seed's phase 2b
remarks (convs whose operand chain reaches another conv) and every rejection, changing nothing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from jaxlib.mlir import ir

from convcanon.diagnostics import SourceLoc
from convcanon.hlo import build
from convcanon.hlo.context import source_loc, with_notes
from convcanon.hlo.dialect_check import check_conv_dialect
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.gate import ConvOptions, Decision, decide
from convcanon.hlo.io import HloFile
from convcanon.hlo.params import ConvKey, ConvParams, conv_key, read_conv_params
from convcanon.hlo.rewrite_pad import euet001, explicit_pad, pad_overrides, plan_pad
from convcanon.hlo.rewrite_stride import explicit_stride, ops_added, phase_count, plan_stride
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


@dataclass(frozen=True)
class _Zero:
    """Where a padded conv gets its pad value: the zero of `element` shared in `block`."""

    element: ir.Type
    value: ir.Attribute
    block: ir.Block


@dataclass(frozen=True)
class _Plan:
    """What the gate decides and the rewrite will emit for one conv configuration."""

    decision: Decision
    phases: int
    ops_added: tuple[str, ...]


def plan_conv(p: ConvParams, options: ConvOptions) -> _Plan:
    """The gate's decision and the rewrite's output, computed from the params alone."""
    decision = decide(p, options)
    if not decision.accepted:
        return _Plan(decision, 0, ())
    pad_ops = plan_pad(p, options.negative_padding).ops_added if p.needs_pad else []
    plans = plan_stride(p)
    emitted = ops_added(plans, p) if p.needs_stride else ["convolution"]
    return _Plan(decision, phase_count(plans), tuple(pad_ops + emitted))


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
    memo: dict[ConvKey, tuple[ConvParams, _Plan]] = {}
    module = hlo_file.module
    with module.context, ir.Location.unknown():
        todo: list[tuple[ir.Operation, ConvParams, ConvRecord, _Zero | None]] = []
        zero_attrs: dict[ir.Type, ir.Attribute | None] = {}
        zero_sites: set[tuple[ir.Block, ir.Type]] = set()
        for conv in _convs_in_functions(module, dialect):
            operands = conv.operands
            types = (operands[0].type, operands[1].type, conv.results[0].type)
            key = conv_key(conv, types)
            known = memo.get(key)
            if known is None:
                p = read_conv_params(conv)
                known = memo[key] = (p, plan_conv(p, opts))
            p, plan = known
            decision = plan.decision
            stats.bump("convs-seen")
            record = ConvRecord(
                conv.location,
                hlo_file.filename,
                p,
                decision,
                types,
                plan.phases,
                list(plan.ops_added),
                0 if p.dynamic_reason else p.macs,
            )
            record.position = hlo_file.position_of(dialect.conv, len(records))
            records.append(record)
            if opts.verbose:
                _verbose_remarks(conv, decision, dialect, hlo_file, record.loc)
            if not decision.accepted:
                stats.bump(f"skipped: {decision.reason}")
                continue
            zero: _Zero | None = None
            if p.needs_pad:
                element = ir.ShapedType(types[0]).element_type
                if element not in zero_attrs:
                    zero_attrs[element] = build.zero_attr(element)
                value = zero_attrs[element]
                if value is None:
                    raise euet001(p, record.loc)
                zero = _Zero(element, value, conv.block)
                if "constant" in record.ops_added:  # the pad's zero: one per block and type
                    if (zero.block, element) in zero_sites:
                        record.ops_added.remove("constant")
                    zero_sites.add((zero.block, element))
            todo.append((conv, p, record, zero))
        builder = build.Builder(dialect)
        for conv, p, record, zero in todo:
            _rewrite(builder, conv, p, record, zero, opts, stats)
        if not records:
            check_conv_dialect(hlo_file, dialect)
        module.operation.verify()
    return stats, records


def _verbose_remarks(
    conv: ir.Operation, decision: Decision, dialect: Dialect, hlo_file: HloFile, loc: SourceLoc
) -> None:
    if not decision.accepted:
        _remark(loc, f"convolution not canonicalized: {decision.reason}")
    producer = _reaches_conv(conv, dialect)
    if producer is not None:
        where = hlo_file.loc_of(producer)
        _remark(loc, f"convolution's operand chain reaches the convolution at {where}")


def _rewrite(
    b: build.Builder,
    conv: ir.Operation,
    p: ConvParams,
    record: ConvRecord,
    zero: _Zero | None,
    opts: ConvOptions,
    stats: PassStats,
) -> None:
    """Pad first, then stride, all emitted before `conv`, which the result replaces; records the
    phases and multiply-adds actually emitted."""
    ip, loc = ir.InsertionPoint(conv), record.location
    lhs, rhs = conv.operands[0], conv.operands[1]
    lhs_element = ir.ShapedType(record.value_types[0]).element_type
    lhs_shape = p.lhs_shape
    overrides: dict[str, ir.Attribute] = {}
    if zero is not None:

        def zero_value() -> ir.Value:
            return b.zero(zero.element, zero.value, zero.block, loc)

        lhs, lhs_shape = explicit_pad(
            b, lhs, lhs_element, p, opts.negative_padding, zero_value, ip, loc
        )
        overrides = pad_overrides(b, p, "lhs_dilation" in conv.attributes)
        stats.bump("rewritten-pad")
    if p.needs_stride:
        rhs_element = ir.ShapedType(record.value_types[1]).element_type
        partials, total = explicit_stride(
            b, conv, lhs, lhs_shape, (lhs_element, rhs_element), p, overrides, ip, loc
        )
        stats.bump("rewritten-stride")
    else:
        partials = [b.rebuild_conv(conv, lhs, rhs, overrides, ip)]
        total = partials[0].results[0]
    conv.results[0].replace_all_uses_with(total)
    conv.erase()
    record.phases = len(partials)
    record.macs_after = sum(_emitted_macs(c, p) for c in partials)


def _emitted_macs(conv: ir.Operation, p: ConvParams) -> int:
    """Multiply-adds of an emitted conv, from its kernel and result types (dims as in `p`)."""
    kernel = ir.ShapedType(conv.operands[1].type).shape
    taps = math.prod(kernel[d] for d in p.dims.rhs_spatial) * kernel[p.dims.rhs_in_feature]
    return math.prod(ir.ShapedType(conv.results[0].type).shape) * taps


def canonicalize_conv_stablehlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, STABLEHLO)[0]


def canonicalize_conv_mhlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, MHLO)[0]
