"""The conv canonicalization passes: collect-then-rewrite over each `func.func` (DESIGN 2.5).

Phase 1 reads every conv's ConvParams and gate decision; phase 2 rewrites the accepted ones, pad
first (the stride math assumes zero padding), then stride. `verbose` prints the seed's phase 2b
remarks (convs whose operand chain reaches another conv) and every rejection, changing nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from jaxlib.mlir import ir

from convcanon.diagnostics import SourceLoc
from convcanon.hlo import build
from convcanon.hlo.context import source_loc
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.gate import ConvOptions, Decision, decide
from convcanon.hlo.io import HloFile
from convcanon.hlo.params import ConvParams, read_conv_params
from convcanon.hlo.rewrite_pad import euet001, explicit_pad, plan_pad
from convcanon.hlo.rewrite_stride import explicit_stride, ops_added, phase_count, plan_stride
from convcanon.pipeline import OptionValue, PassStats


@dataclass
class ConvRecord:
    """What happened to one conv: what `explain` shows and the statistics count."""

    loc: SourceLoc
    params: ConvParams
    decision: Decision
    types: tuple[str, str, str] = ("", "", "")  # lhs, rhs, result as MLIR prints them
    phases: int = 0
    ops_added: list[str] = field(default_factory=list)
    macs_after: int = 0


def _walk(op: ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
    """Every op nested under `op`, in pre-order (iterative: no recursion limit on deep IR)."""
    stack = [op.operation]
    while stack:
        current = stack.pop()
        yield current
        children = [
            child.operation
            for region in current.regions
            for block in region.blocks
            for child in block.operations
        ]
        stack.extend(reversed(children))


def functions(module: ir.Module) -> list[ir.Operation]:
    return [op for op in _walk(module.operation) if op.name == "func.func"]


def convs_of(func: ir.Operation, dialect: Dialect) -> list[ir.Operation]:
    return [op for op in _walk(func) if op.name == dialect.conv]


def plan_record(
    p: ConvParams, decision: Decision, options: ConvOptions, loc: SourceLoc
) -> ConvRecord:
    """What the rewrite of one conv will emit, computed from its params alone (for `explain`)."""
    record = ConvRecord(loc, p, decision, macs_after=0 if p.dynamic_reason else p.macs)
    if not decision.accepted:
        return record
    pad_ops = plan_pad(p, options.negative_padding).ops_added if p.needs_pad else []
    plans = plan_stride(p)
    record.phases = phase_count(plans)
    record.ops_added = pad_ops + (ops_added(plans, p) if p.needs_stride else ["convolution"])
    return record


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
    print(f"{loc}: remark: {message}", file=sys.stderr)


def canonicalize(
    hlo_file: HloFile, options: Mapping[str, OptionValue], dialect: Dialect
) -> tuple[PassStats, list[ConvRecord]]:
    """Run the pass over every function; returns statistics and one record per conv seen."""
    opts = ConvOptions.from_mapping(options)
    stats = PassStats()
    records: list[ConvRecord] = []
    module = hlo_file.module
    with module.context, ir.Location.unknown():
        for func in functions(module):
            todo: list[tuple[ir.Operation, ConvParams, ConvRecord]] = []
            for conv in convs_of(func, dialect):
                loc = source_loc(conv.location, hlo_file.filename)
                p = read_conv_params(conv)
                decision = decide(p, opts)
                stats.bump("convs-seen")
                record = plan_record(p, decision, opts, loc)
                record.types = (
                    str(conv.operands[0].type),
                    str(conv.operands[1].type),
                    str(conv.results[0].type),
                )
                records.append(record)
                if opts.verbose:
                    _verbose_remarks(conv, decision, dialect, hlo_file.filename, loc)
                if not decision.accepted:
                    stats.bump(f"skipped: {decision.reason}")
                    continue
                element = ir.ShapedType(conv.operands[0].type).element_type
                if p.needs_pad and build.zero_attr(element) is None:
                    raise euet001(p, loc)
                todo.append((conv, p, record))
            for conv, p, record in todo:
                _rewrite(conv, p, record, dialect, opts, stats)
        module.operation.verify()
    return stats, records


def _verbose_remarks(
    conv: ir.Operation, decision: Decision, dialect: Dialect, filename: str, loc: SourceLoc
) -> None:
    if not decision.accepted:
        _remark(loc, f"convolution not canonicalized: {decision.reason}")
    producer = _reaches_conv(conv, dialect)
    if producer is not None:
        where = source_loc(producer.location, filename)
        _remark(loc, f"convolution's operand chain reaches the convolution at {where}")


def _rewrite(
    conv: ir.Operation,
    p: ConvParams,
    record: ConvRecord,
    dialect: Dialect,
    opts: ConvOptions,
    stats: PassStats,
) -> None:
    """Pad first, then stride; records the phases and multiply-adds actually emitted."""
    current: ir.Operation = conv
    if p.needs_pad:
        current = explicit_pad(current, p, dialect, opts.negative_padding, record.loc)
        stats.bump("rewritten-pad")
    partials = [current]
    if p.needs_stride:
        partials = explicit_stride(current, read_conv_params(current), dialect)
        stats.bump("rewritten-stride")
    record.phases = len(partials)
    record.macs_after = sum(read_conv_params(c).macs for c in partials)


def canonicalize_conv_stablehlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, STABLEHLO)[0]


def canonicalize_conv_mhlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, MHLO)[0]
