"""Each conv of BEFORE and the ops AFTER has in its place, as two small modules of their own.

The pass rewrites one conv at a time and gives every op it creates the conv's location, so the
ops of AFTER at a conv's location are its rewrite. For each location a conv of BEFORE has, the
ops at it are split into connected pieces (by def-use, in each module); the k-th piece of
BEFORE pairs with the k-th of AFTER. Each piece becomes `@main`: its operands from outside as
arguments (constants are copied in), its one result returned. BEFORE's and AFTER's arguments are
matched by the conv operand each feeds (lhs, kernel) and by type, never by position, since a
rewrite may touch the kernel first. Only ops directly in a function body are paired: a conv in
a loop body is judged with the whole program only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from jaxlib.mlir import ir

from convcanon.diagnostics import SourceLoc
from convcanon.hlo.context import print_module, source_loc

CONVS = ("convolution", "dynamic_conv")
_FILE_IN_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@dataclass(frozen=True)
class ConvSite:
    """One conv of BEFORE: where it is, and its piece of each module as `@main` text (None
    with `reason` when AFTER's piece cannot be told apart); `changed`: AFTER's piece differs."""

    loc: SourceLoc
    before: str | None
    after: str | None
    reason: str = ""

    @property
    def changed(self) -> bool:
        return self.before != self.after


def is_conv(op: ir.Operation) -> bool:
    return op.name.split(".", 1)[-1] in CONVS


def _is_leaf_constant(op: ir.Operation) -> bool:
    """A constant with no operands: copied into each piece that uses it (the pass shares one
    zero per block between the convs of the block)."""
    return op.name.endswith(".constant") and not len(op.operands) and not len(op.regions)


def location_key(location: ir.Location, own_name: str) -> str:
    """A location as text, file names cut to their last component and the parser's "-" read as
    `own_name`: BEFORE parsed from `dir/f.mlir` has `loc("-":3:8)` where AFTER, printed with
    locations by `convcanon-opt f.mlir`, says `loc("f.mlir":3:8)`."""

    def file_part(match: re.Match[str]) -> str:
        name = own_name if match[1] in ("-", "") else match[1]
        return f'"{os.path.basename(name)}":{match[2]}:{match[3]}'

    return _FILE_IN_LOC.sub(file_part, str(location))


def function_ops(module: ir.Module) -> list[ir.Operation]:
    """The ops directly in each function's body, in order."""
    found: list[ir.Operation] = []
    for func in module.body.operations:
        if func.operation.name != "func.func":
            continue
        for block in func.operation.regions[0].blocks:
            found.extend(op.operation for op in block.operations)
    return found


def conv_sites(
    before: ir.Module,
    before_name: str,
    after: ir.Module,
    after_name: str,
    labels: Sequence[SourceLoc] | None = None,
) -> list[ConvSite]:
    """One site per conv directly in a function body of BEFORE, in order. `labels`: where each
    is for the report (default: its own location in BEFORE)."""
    before_ops = function_ops(before)
    convs = [op for op in before_ops if is_conv(op)]
    if labels is None:
        labels = [source_loc(op.location, before_name) for op in convs]
    keys = [location_key(op.location, before_name) for op in convs]
    wanted = set(keys) - {"loc(unknown)"}
    before_groups = _groups(before_ops, before_name, wanted)
    after_groups = _groups(function_ops(after), after_name, wanted)
    pieces: dict[str, list[tuple[list[ir.Operation], list[ir.Operation]]] | None] = {}
    for key in wanted:
        ours, theirs = _pieces(before_groups[key]), _pieces(after_groups.get(key, []))
        pieces[key] = list(zip(ours, theirs, strict=True)) if len(ours) == len(theirs) else None
    sites: list[ConvSite] = []
    taken: dict[str, int] = {}
    for op, key, label in zip(convs, keys, labels, strict=True):
        pairs = pieces.get(key)
        if key == "loc(unknown)":
            sites.append(ConvSite(label, None, None, "it has no location to find it by in AFTER"))
            continue
        if pairs is None:
            count = len(after_groups.get(key, []))
            why = (
                "AFTER has no op at its location (print AFTER with --mlir-print-debuginfo)"
                if not count
                else "the ops at its location in AFTER do not pair one to one with BEFORE's"
            )
            sites.append(ConvSite(label, None, None, why))
            continue
        pair = next(p for i, p in enumerate(pairs) if i >= taken.get(key, 0) and _holds(p[0], op))
        taken[key] = pairs.index(pair) + 1
        sites.append(_site(label, *pair))
    return sites


def _holds(piece: list[ir.Operation], op: ir.Operation) -> bool:
    return any(o == op for o in piece)


def _groups(ops: list[ir.Operation], name: str, wanted: set[str]) -> dict[str, list[ir.Operation]]:
    groups: dict[str, list[ir.Operation]] = {}
    for op in ops:
        key = location_key(op.location, name)
        if key in wanted:
            groups.setdefault(key, []).append(op)
    return groups


def _pieces(ops: list[ir.Operation]) -> list[list[ir.Operation]]:
    """`ops` split into pieces connected by def-use (constants without operands join none),
    ordered by their first op."""
    index = {hash(op): i for i, op in enumerate(ops) if not _is_leaf_constant(op)}
    parent = list(range(len(ops)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, op in enumerate(ops):
        if hash(op) not in index:
            continue
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, ir.Block):
                continue
            j = index.get(hash(owner.operation))
            if j is not None:
                parent[root(i)] = root(j)
    found: dict[int, list[ir.Operation]] = {}  # by root, in order of each piece's first op
    for i, op in enumerate(ops):
        if hash(op) in index:
            found.setdefault(root(i), []).append(op)
    return list(found.values())


def _site(label: SourceLoc, before: list[ir.Operation], after: list[ir.Operation]) -> ConvSite:
    ours, theirs = _inputs(before), _inputs(after)
    if isinstance(ours, str) or isinstance(theirs, str):
        return ConvSite(label, None, None, ours if isinstance(ours, str) else str(theirs))
    matched = _match(ours, theirs, before, after)
    if matched is None:
        return ConvSite(label, None, None, "AFTER's operands of its rewrite cannot be told apart")
    before_text = _as_function(before, ours)
    after_text = _as_function(after, matched)
    if isinstance(before_text, str) and isinstance(after_text, str):
        return ConvSite(label, before_text, after_text)
    return ConvSite(label, None, None, "its piece of a module does not stand alone")


def _inputs(piece: list[ir.Operation]) -> list[ir.Value] | str:
    """The values a piece reads from outside (constants excepted), in order of first use."""
    inside = {hash(op) for op in piece}
    found: list[ir.Value] = []
    for op in piece:
        for value in op.operands:
            owner = value.owner
            outside = isinstance(owner, ir.Block) or hash(owner.operation) not in inside
            if outside and not (
                not isinstance(owner, ir.Block) and _is_leaf_constant(owner.operation)
            ):
                if value not in found:
                    found.append(value)
    exits = _exits(piece)
    if len(exits) != 1:
        return f"the ops at its location give {len(exits)} results where a conv gives one"
    return found


def _exits(piece: list[ir.Operation]) -> list[ir.Value]:
    """What replaces the conv: the results of a piece that ops outside it read (a dead op left
    inside, such as a partial conv whose sum was dropped, is not one); for a piece nothing
    reads, its results no op of it reads."""
    inside = {hash(op) for op in piece}
    results: list[ir.Value] = [result for op in piece for result in op.results]
    read_outside = [
        result
        for result in results
        if any(hash(use.owner.operation) not in inside for use in result.uses)
    ]
    if read_outside:
        return read_outside
    return [r for r in results if not any(hash(u.owner.operation) in inside for u in r.uses)]


def _roles(value: ir.Value, piece: list[ir.Operation]) -> frozenset[int]:
    """The conv operands (0 lhs, 1 kernel, 2 padding) `value` reaches inside `piece`."""
    inside = {hash(op) for op in piece}
    roles: set[int] = set()
    stack, seen = [value], set()
    while stack:
        for use in stack.pop().uses:
            user = use.owner.operation
            if hash(user) not in inside:
                continue
            if is_conv(user):
                roles.add(use.operand_number)
            elif hash(user) not in seen:
                seen.add(hash(user))
                stack.extend(user.results)
    return frozenset(roles)


def _match(
    ours: list[ir.Value],
    theirs: list[ir.Value],
    before: list[ir.Operation],
    after: list[ir.Operation],
) -> list[ir.Value] | None:
    """AFTER's inputs in the order of BEFORE's: each matched by the conv operands it feeds and
    its type (then by type alone); None when that is not one to one."""
    if len(ours) != len(theirs):
        return None
    for key in (
        lambda v, piece: (_roles(v, piece), str(v.type)),
        lambda v, piece: str(v.type),
    ):
        mine = [key(v, before) for v in ours]
        other = [key(v, after) for v in theirs]
        if len(set(mine)) == len(mine) and sorted(map(str, mine)) == sorted(map(str, other)):
            return [theirs[other.index(k)] for k in mine]
    return None


def _as_function(piece: list[ir.Operation], inputs: list[ir.Value]) -> str | None:
    """The piece as `@main(inputs) -> its result`, constants it reads copied in; None when it
    does not verify on its own."""
    (result,) = _exits(piece)
    context = piece[0].context
    with context, ir.Location.unknown(context):
        module = ir.Module.create()
        kind = ir.FunctionType.get([v.type for v in inputs], [result.type])
        func = ir.Operation.create(
            "func.func",
            attributes={
                "sym_name": ir.StringAttr.get("main"),
                "function_type": ir.TypeAttr.get(kind),
            },
            regions=1,
            ip=ir.InsertionPoint(module.body),
        )
        block = func.regions[0].blocks.append(*[v.type for v in inputs])
        values: dict[ir.Value, ir.Value] = dict(zip(inputs, block.arguments, strict=True))
        ip = ir.InsertionPoint(block)
        for op in piece:
            for value in op.operands:
                owner = value.owner
                if value not in values and not isinstance(owner, ir.Block):
                    copy = owner.operation.clone(ip=ip)  # a constant
                    values[value] = copy.results[0]
            copy = op.clone(ip=ip)
            for i, value in enumerate(op.operands):
                copy.operands[i] = values[value]
            values.update(zip(op.results, copy.results, strict=True))
        ir.Operation.create("func.return", operands=[values[result]], ip=ip)
        try:
            module.operation.verify()
        except ir.MLIRError:
            return None
        return print_module(module)
