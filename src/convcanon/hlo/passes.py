"""The conv canonicalization passes: a driver that collects, plans and emits.

Phase 1 reads every conv's ConvParams and plans it (`plan.plan_conv`: the gate's decision and
the whole rewrite, once per conv configuration); phase 2 emits each accepted conv's plan in
front of it (`emit.emit`) and replaces it. `verbose` prints the seed's phase 2b remarks (convs
whose operand chain reaches another conv) and every rejection, changing nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc, report
from convcanon.hlo import build
from convcanon.hlo.context import error_from_mlir, op_notes, source_loc
from convcanon.hlo.conv_params import ConvParams, int64_overflow
from convcanon.hlo.dialect_check import check_conv_dialect
from convcanon.hlo.dialects import MHLO, STABLEHLO, Dialect
from convcanon.hlo.dynamic_conv import as_convolution
from convcanon.hlo.emit import emit
from convcanon.hlo.gate import ConvOptions, Decision
from convcanon.hlo.io import HloFile
from convcanon.hlo.params import ConvKey, NotAConvolution, conv_key, read_conv_params
from convcanon.hlo.plan import ConvPlan, plan_conv
from convcanon.hlo.program import AnyOp, Program, instantiate
from convcanon.pipeline import OptionValue, PassStats


class ConvRecord:
    """What happened to one conv: what `explain` shows and the statistics count, read off its
    plan (and `ops_added`, the ops the emitter built for it, in order).

    The source location and type strings are derived on demand: only `explain`, remarks and
    errors need them, and printing them costs more than the rest of a conv's bookkeeping."""

    __slots__ = (
        "location",
        "filename",
        "params",
        "decision",
        "value_types",
        "plan",
        "max_phases",
        "position",
        "kind",
        "kept",
        "ops_added",
    )

    def __init__(
        self,
        location: ir.Location,
        filename: str,
        params: ConvParams,
        decision: Decision,
        value_types: tuple[ir.Type, ir.Type, ir.Type],  # lhs, rhs, result
        plan: ConvPlan,
        max_phases: int,  # the gate's limit on partial convs
        position: tuple[int, int] | None = None,  # the op's place in the .mlir (debug-info input)
        kind: str = "convolution",  # the op as parsed: convolution or dynamic_conv
        kept: str = "convolution",  # and the op the pass plans: a dynamic_conv it could not read
    ) -> None:
        self.location = location
        self.filename = filename
        self.params = params
        self.decision = decision
        self.value_types = value_types
        self.plan = plan
        self.max_phases = max_phases
        self.position = position
        self.kind = kind
        self.kept = kept
        self.ops_added: list[str] = []

    @property
    def phases(self) -> int:
        """Partial convs emitted, after merging."""
        return len(self.plan.partials)

    @property
    def unmerged(self) -> int:
        return self.plan.unmerged

    @property
    def summed(self) -> int:
        return self.plan.summed

    @property
    def lattice_macs_before(self) -> int:
        return self.plan.lattice_macs

    @property
    def lhs_phases(self) -> int:
        return self.plan.lhs_phases

    @property
    def macs_after(self) -> int:
        if not self.decision.accepted:
            return 0 if self.params.dynamic_reason else self.params.macs
        return self.plan.macs_after

    @property
    def policy(self) -> str:
        return self.plan.policy

    @property
    def merge(self) -> str:
        return self.plan.merge

    @property
    def loc(self) -> SourceLoc:
        return source_loc(self.location, self.filename, position=self.position)

    @property
    def types(self) -> tuple[str, str, str]:
        """lhs, rhs and result types as MLIR prints them."""
        lhs, rhs, result = self.value_types
        return str(lhs), str(rhs), str(result)


def _convs_in_functions(
    module: ir.Module, dialect: Dialect
) -> tuple[list[ir.Operation], list[str]]:
    """Every conv (`convolution` or `dynamic_conv`) nested in a `func.func`, in pre-order, and
    the name of each.

    Iterating the blocks from Python costs ~2/3 of MLIR's walk, which calls back into Python
    for every op (either way each op becomes a Python object once)."""
    names = dialect.convs
    found: list[ir.Operation] = []
    found_names: list[str] = []
    # (ops of the blocks being read, whether they are inside a function); the innermost last
    work: list[tuple[Iterator[ir.OpView], bool]] = [(_ops_of(module.operation.regions), False)]
    while work:
        ops, in_function = work[-1]
        for view in ops:
            op = view.operation  # where the op classes are loaded `view.name` may be a symbol's
            op_name = op.name
            if op_name in names:
                if in_function:
                    found.append(op)
                    found_names.append(op_name)
                continue
            regions = op.regions
            if len(regions):
                work.append((_ops_of(regions), in_function or op_name == "func.func"))
                break  # read the nested ops first; `ops` resumes after them
        else:
            work.pop()
    return found, found_names


def _ops_of(regions: ir.RegionSequence) -> Iterator[ir.OpView]:
    """One iterator over the ops of every block (the bindings' own iterator restarts when a
    `for` asks it for an iterator again)."""
    return itertools.chain.from_iterable(
        block.operations for region in regions for block in region.blocks
    )


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
        if producer.name in dialect.convs:
            return producer
        stack.extend(producer.operands)
    return None


def _remark(loc: SourceLoc, message: str) -> None:
    report("remark", loc, message)


def canonicalize(
    hlo_file: HloFile, options: Mapping[str, OptionValue], dialect: Dialect
) -> tuple[PassStats, list[ConvRecord]]:
    """Run the pass over every function; returns statistics and one record per conv seen.

    Every conv is planned (params, decision, EUET001) before any is rewritten. Plans are
    memoized by the conv's uniqued attributes and types: models repeat a few configurations."""
    opts = ConvOptions.from_mapping(options)
    stats = PassStats()
    with hlo_file.module.context, ir.Location.unknown():
        records, todo = _plan_all(hlo_file, opts, dialect, stats)
        created = _emit_all(todo, dialect, stats)
        if not records:
            check_conv_dialect(hlo_file, dialect)
        _verify(hlo_file, created)
    return stats, records


_Todo = tuple[ir.Operation, ConvKey, ConvPlan, ConvRecord]  # a conv to rewrite, and its plan


def _plan_all(
    hlo_file: HloFile, opts: ConvOptions, dialect: Dialect, stats: PassStats
) -> tuple[list[ConvRecord], list[_Todo]]:
    """A record of every conv in the module's functions, and the convs to rewrite with their
    plans (one plan per configuration). Raises EUET001 or an overflow at the first conv that
    has one, before anything is rewritten."""
    plans: dict[ConvKey, ConvPlan] = _plan_cache()
    records: list[ConvRecord] = []
    todo: list[_Todo] = []
    overflows: dict[ConvKey, str | None] = {}
    convs, names = _convs_in_functions(hlo_file.module, dialect)
    positions = hlo_file.positions_of(names)  # counted as parsed, before any replacement
    for source, name, position in zip(convs, names, positions, strict=True):
        conv, unread = _as_planned(source, name, dialect, hlo_file, position)
        operands = conv.operands
        types = (operands[0].type, operands[1].type, conv.results[0].type)
        key = conv_key(conv, types, unread)
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = plan_conv(read_conv_params(conv, unread), opts)
        p, decision = plan.params, plan.decision
        stats.bump("convs-seen")
        record = ConvRecord(
            conv.location,
            hlo_file.filename,
            p,
            decision,
            types,
            plan,
            opts.max_phases,
            position,
            "dynamic_conv" if name == dialect.dynamic_conv else "convolution",
            "dynamic_conv" if unread else "convolution",
        )
        records.append(record)
        if opts.verbose:
            _verbose_remarks(conv, decision, dialect, hlo_file, record.loc)
        if not decision.accepted:
            stats.bump(f"skipped: {decision.reason}")
            continue
        if not plan.zeros:
            raise euet001(p, record.loc, op_notes(source, record.loc))
        if key not in overflows:  # a property of the configuration, checked once
            overflows[key] = int64_overflow(p)
        overflow = overflows[key]
        if overflow is not None:
            raise ConvcanonError(overflow, record.loc, notes=op_notes(source, record.loc))
        todo.append((conv, key, plan, record))
    return records, todo


def _as_planned(
    conv: ir.Operation,
    name: str,
    dialect: Dialect,
    hlo_file: HloFile,
    position: tuple[int, int] | None,
) -> tuple[ir.Operation, str]:
    """The op the pass plans for `conv`: a `dynamic_conv` with a constant padding becomes its
    `convolution`; one whose padding the pass does not read stays, with why not."""
    if name != dialect.dynamic_conv:
        return conv, ""
    try:
        replaced = as_convolution(conv, dialect)
    except NotAConvolution as err:
        where = source_loc(conv.location, hlo_file.filename, position=position)
        raise ConvcanonError(str(err), where, notes=op_notes(conv, where)) from None
    return (conv, replaced) if isinstance(replaced, str) else (replaced, "")


def _emit_all(todo: list[_Todo], dialect: Dialect, stats: PassStats) -> list[AnyOp]:
    """Rewrite each conv of `todo` by its plan's program (emitted once per configuration);
    returns the ops that need verifying."""
    builder = build.Builder(dialect)
    programs: dict[ConvKey, Program] = {}
    zeros = _BlockZeros(builder)
    created: list[AnyOp] = []
    for conv, key, plan, record in todo:
        program = programs.get(key)
        fresh = program is None
        if program is None:
            types = (conv.operands[0].type, conv.operands[1].type, conv.results[0].type)
            program = programs[key] = emit(builder, plan, types)
        zero_of = zeros.of(conv.operation.block, conv.location)
        total = instantiate(program, conv, zero_of, record.ops_added, created, fresh)
        for counter, n in plan.counters:
            stats.bump(counter, n)
        conv.results[0].replace_all_uses_with(total)
        conv.erase()
    return created


class _BlockZeros:
    """The scalar zero of each element type, one per block, made when first used."""

    def __init__(self, builder: build.Builder) -> None:
        self._builder = builder
        self._zeros: dict[tuple[ir.Block, ir.Type], ir.Value] = {}

    def of(self, block: ir.Block, loc: ir.Location) -> Callable[[ir.Type], tuple[ir.Value, bool]]:
        """`zero_of(element)` for a conv in `block`: the zero, and whether it was made now."""

        def zero_of(element: ir.Type) -> tuple[ir.Value, bool]:
            found = self._zeros.get((block, element))
            if found is not None:
                return found, False
            zero = self._builder.block_zero(element, block, loc)
            self._zeros[(block, element)] = zero
            return zero, True

        return zero_of


def _plan_cache() -> dict[ConvKey, ConvPlan]:
    """The plans of one pass run, by conv configuration (a seam for tests)."""
    return {}


def euet001(
    p: ConvParams, loc: SourceLoc, notes: list[tuple[SourceLoc | None, str]] | None = None
) -> ConvcanonError:
    return ConvcanonError(
        f"element type {p.element_type} of the convolution's lhs cannot be zero-padded",
        loc,
        code="EUET001",
        notes=notes,
    )


def _verify(hlo_file: HloFile, created: list[AnyOp]) -> None:
    """Verify the rewritten module. An invalid op is a bug of the rewrite, never of the input:
    it is reported at the conv it was built for as an internal error (exit 1, nothing written),
    not a traceback.

    A module known valid (parsed) needs only the ops the pass created verified: each is built
    before the conv it replaces from values that dominate that conv, and the conv's uses get a
    value of its own type, so no other op's validity changes. About 1 us per op created,
    instead of 1 us per op of the module (0.12 s for a 100k-op module)."""
    try:
        if not hlo_file.verified:
            hlo_file.module.operation.verify()
            return
        for op in created:
            op.verify()
    except ir.MLIRError as err:
        error = error_from_mlir(err, hlo_file.filename, "does not verify")
        raise ConvcanonError(
            f"internal error: the rewritten module does not verify: {error.message}"
            " (a convcanon bug: please report it with this input)",
            error.loc,
            notes=error.notes,
        ) from None


def _verbose_remarks(
    conv: ir.Operation, decision: Decision, dialect: Dialect, hlo_file: HloFile, loc: SourceLoc
) -> None:
    if not decision.accepted:
        _remark(loc, f"convolution not canonicalized: {decision.reason}")
    producer = _reaches_conv(conv, dialect)
    if producer is not None:
        where = hlo_file.loc_of(producer)
        _remark(loc, f"convolution's operand chain reaches the convolution at {where}")


def canonicalize_conv_stablehlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, STABLEHLO)[0]


def canonicalize_conv_mhlo(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> PassStats:
    return canonicalize(hlo_file, options, MHLO)[0]
