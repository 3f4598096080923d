"""Inlining `func.call`: the `inline` pass of a `convcanon-opt` pipeline, and the first step of
shape refinement (as jax's refinement inlines every call first).

jaxlib registers MLIR's inliner pass but not the func dialect's inliner interface, so its
`inline` inlines nothing. This one inlines what MLIR's does on StableHLO and MHLO programs: every
call of a top-level function whose body is one block ending in its return, callees before their
callers (so each body is copied once its own calls are gone); then, as MLIR's inliner, it erases
the private functions it leaves unused and runs its default pipeline (`canonicalize`) on every
function. Calls into a call cycle are left: MLIR's inliner unrolls some of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import downcast, source_loc
from convcanon.records import NamedTuple

MAX_INLINED_OPS = 1 << 22  # ops one function may hold once its calls are inlined


def _functions(module: ir.Module) -> dict[str, ir.Operation]:
    functions: dict[str, ir.Operation] = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            functions[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
    return functions


def _calls(op: ir.Operation) -> tuple[list[ir.Operation], int]:
    """The calls inside `op`, and how many ops it holds."""
    found: list[ir.Operation] = []
    count = 0

    def visit(inner: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        if inner.name == "func.call":
            found.append(inner)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found, count


def _check_sizes(
    order: list[str],
    calls: dict[str, tuple[list[ir.Operation], int]],
    inlinable: set[str],
    functions: dict[str, ir.Operation],
    filename: str,
) -> None:
    """Refuse, before anything is inlined, a function that would hold over MAX_INLINED_OPS ops
    once its calls are: copies multiply (a chain of functions each calling the next twice
    doubles at every level), so a small file could ask for more than any memory."""
    size: dict[str, int] = {}
    for name in order:
        found, total = calls[name]
        for call in found:
            target = callee(call)
            if target in inlinable:  # done before `name`: callees come first
                total += size[target] - 1
        size[name] = total
        if total > MAX_INLINED_OPS:
            raise ConvcanonError(
                f"inlining the calls of @{name} would give it {total} ops, over the"
                f" {MAX_INLINED_OPS} an inlined function may hold",
                source_loc(functions[name].location, filename),
            )


def _one_block(function: ir.Operation) -> bool:
    blocks = function.regions[0].blocks
    if len(blocks) != 1:
        return False
    last = blocks[0].operations[len(blocks[0].operations) - 1].operation.name
    return last in ("func.return", "return")


def _callees_first(graph: dict[str, set[str]]) -> tuple[list[str], set[str]]:
    """The functions in an order where each comes after those it calls, and those on a call
    cycle (which are never inlined). Iterative: a call chain as deep as the module is long."""
    order: list[str] = []
    cyclic: set[str] = set()
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for root in graph:
        if root in state:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        state[root] = 1
        while stack:
            name, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                stack.pop()
                state[name] = 2
                order.append(name)
            elif state.get(step) == 1:  # a cycle: every function on the stack from `step`
                at = next(i for i, (n, _) in enumerate(stack) if n == step)
                cyclic.update(n for n, _ in stack[at:])
            elif step not in state and step in graph:
                state[step] = 1
                stack.append((step, iter(sorted(graph[step]))))
    return order, cyclic


class Left(NamedTuple):
    """The calls not inlined (of a function on a call cycle, of one of several blocks, of a
    declaration; not those inside skipped functions), and the functions on a cycle."""

    calls: list[ir.Operation]
    cyclic: frozenset[str]


def callee(call: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def inline_calls(
    module: ir.Module,
    filename: str,
    skipped: frozenset[str] = frozenset(),
    then: Callable[[ir.Operation], None] | None = None,
) -> Left:
    """Inline every call of a one-block function not on a call cycle, in place, except inside
    the `skipped` functions, each function's calls once its callees are done; `then` runs on
    each function before its calls are inlined and again after, if any was (as MLIR's inliner
    runs its pipeline on a callable until inlining changes it no more)."""
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext

    functions = _functions(module)
    calls = {name: _calls(function) for name, function in functions.items()}
    graph = {name: {callee(c) for c in found} for name, (found, _) in calls.items()}
    order, cyclic = _callees_first(graph)
    inlinable = {n for n, f in functions.items() if n not in cyclic and _one_block(f)}
    _check_sizes([n for n in order if n not in skipped], calls, inlinable, functions, filename)
    left: list[ir.Operation] = []
    for name in order:
        if name in skipped:
            continue
        if then is not None:
            then(functions[name])
        inlined = False
        for call in calls[name][0]:
            target = callee(call)
            if target not in inlinable:
                left.append(call)
                continue
            with ir.InsertionPoint(call):
                results = _jax_mlir_ext.inlined_func_call(
                    functions[target], list(call.operands), call.location
                )
            for old, new in zip(call.results, results, strict=True):
                old.replace_all_uses_with(new)
            call.erase()
            inlined = True
        if inlined:
            _locations_as_mlir_stacks_them(functions[name])
            if then is not None:
                then(functions[name])
    return Left(left, frozenset(cyclic))


def _locations_as_mlir_stacks_them(function: ir.Operation) -> None:
    """jax's `inlined_func_call` locates each copied op at `""(callsite(L at C))` (L the op's
    location in the callee, C the call's); MLIR's inliner at L with C appended to the end of its
    chain of callers (`stackLocations`), so nested inlining reads callsite(L at callsite(C1 at
    C2)). The locations are MLIR's, as `--mlir-print-debuginfo` prints and diagnostics read."""

    def visit(op: ir.Operation) -> ir.WalkResult:
        location = downcast(op.location)
        if isinstance(location, ir.NameLoc) and location.name_str == "":
            inner = downcast(location.child_loc)
            if isinstance(inner, ir.CallSiteLoc):
                op.location = _stacked(inner.callee, inner.caller)
            else:  # an op of the callee at no location (a constant canonicalize merged): `""(C)`
                op.location = ir.Location.callsite(ir.Location.unknown(), [inner])
        return ir.WalkResult.ADVANCE

    function.walk(visit)


def _stacked(callee: ir.Location, caller: ir.Location) -> ir.Location:
    frames: list[ir.Location] = []
    last = downcast(callee)
    while isinstance(last, ir.CallSiteLoc):
        frames.append(last.callee)
        last = downcast(last.caller)
    stacked = ir.Location.callsite(last, [caller])
    for frame in reversed(frames):
        stacked = ir.Location.callsite(frame, [stacked])
    return stacked


def inline_module(
    module: ir.Module, filename: str, then: Callable[[ir.Operation], None] | None
) -> None:
    """`inline` on `module`, as MLIR's inliner leaves it: the private functions nothing refers
    to are erased without their calls inlined; then the calls are inlined, and the private
    functions left without a reference erased (a reference from one of the first counts: MLIR
    erases those last, and keeps what only they referred to)."""
    unused = frozenset(_unused_private(module))
    inline_calls(module, filename, skipped=unused, then=then)
    functions = _functions(module)
    for name in _unused_private(module):
        functions[name].erase()


def _unused_private(module: ir.Module) -> list[str]:
    """The private top-level functions no op refers to by a symbol reference in an attribute
    (a call, a custom call's `called_computations`, ...)."""
    referred: set[str] = set()

    def refs(attribute: ir.Attribute) -> None:
        if isinstance(attribute, ir.FlatSymbolRefAttr):
            referred.add(attribute.value)
        elif isinstance(attribute, ir.SymbolRefAttr):
            referred.add(attribute.value[0])
        elif isinstance(attribute, ir.ArrayAttr):
            for item in attribute:
                refs(item)
        elif isinstance(attribute, ir.DictAttr):
            for index in range(len(attribute)):
                refs(attribute[index].attr)

    def visit(op: ir.Operation) -> ir.WalkResult:
        attributes = op.attributes
        for index in range(len(attributes)):
            named = attributes[index]
            if named.name != "sym_name":
                refs(named.attr)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    unused = []
    for name, function in _functions(module).items():
        attributes = function.attributes
        visibility = attributes["sym_visibility"] if "sym_visibility" in attributes else None
        private = visibility is not None and ir.StringAttr(visibility).value == "private"
        if private and name not in referred:
            unused.append(name)
    return unused
