"""Record one conv configuration's rewrite and replay it on every conv with that configuration.

A model repeats a few conv configurations thousands of times, and the rewrite's planning (phase
plans, slice windows, attribute lookups) costs several times what building its ops does. The
emitted ops depend only on the conv's uniqued attributes and types (its `ConvKey`) and the pass
options, so the first conv of a key is rewritten as usual while a `Trace` records each op (name,
result type, operands as indices, attributes); later convs of that key build the same ops from
the record. The scalar zero of pads is looked up per conv, since it is one per block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jaxlib.mlir import ir

# Step kinds. Plain classes, not dataclasses or an Enum: this module is on convcanon-opt's
# start-up path, where generating a dataclass's methods costs ~0.5 ms each.
CREATE = 0  # Operation.create at the conv
CLONE = 1  # a clone of the conv with new operands, result type and some attributes
ZERO = 2  # the block's scalar zero of an element type (Builder.zero)


class Step:
    __slots__ = ("kind", "short", "name", "results", "operands", "attributes", "element")

    def __init__(
        self,
        kind: int,
        short: str,
        name: str,
        results: list[ir.Type],
        operands: tuple[int, ...],
        attributes: dict[str, ir.Attribute],
        element: ir.Type | None = None,
    ) -> None:
        self.kind = kind
        self.short = short  # the op's name without its dialect, as `ConvRecord.ops_added` has it
        self.name = name
        self.results = results
        self.operands = operands  # indices into the values: 0 lhs, 1 rhs, then step i's result
        self.attributes = attributes  # CREATE: all of them; CLONE: those it replaces
        self.element = element  # ZERO


class Trace:
    """The steps of one rewrite as it builds them; `valid` turns False on anything the record
    cannot express (then no recipe is kept and each such conv is rewritten as usual)."""

    __slots__ = ("refs", "steps", "valid")

    def __init__(self, lhs: ir.Value, rhs: ir.Value) -> None:
        self.refs: dict[ir.Value, int] = {lhs: 0, rhs: 1}
        self.steps: list[Step] = []
        # conv(x, x) would map both operands to one index: a later conv of the key may differ
        self.valid = lhs != rhs

    def indices(self, values: Sequence[ir.Value]) -> tuple[int, ...]:
        found = tuple(self.refs.get(v, -1) for v in values)
        if -1 in found:
            self.valid = False
        return found

    def add(self, step: Step, result: ir.Value) -> None:
        self.refs[result] = len(self.steps) + 2
        self.steps.append(step)


class Recipe:
    """A recorded rewrite and what it adds up to (the same for every conv of the key)."""

    __slots__ = ("steps", "total", "partials", "macs_after", "bumps")

    def __init__(
        self,
        steps: tuple[Step, ...],
        total: int,
        partials: int,
        macs_after: int,
        bumps: tuple[tuple[str, int], ...],
    ) -> None:
        self.steps = steps
        self.total = total  # index of the value that replaces the conv's result
        self.partials = partials
        self.macs_after = macs_after
        self.bumps = bumps  # statistics counters the rewrite bumps


def replay(
    recipe: Recipe,
    conv: ir.Operation,
    zero_of: Callable[[ir.Type], ir.Value],
    emitted: list[str],
    created: list[ir.Operation | ir.OpView],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """Build `recipe`'s ops for `conv` at `ip`, appending their names to `emitted` and the ops
    that need verifying to `created`; returns the value that replaces the conv's result.
    `zero_of(element)` is the block's zero.

    A CREATE op repeats a recorded one exactly (name, attributes, operand and result types), so
    it verifies if the recorded one does and is not listed; a CLONE also carries this conv's own
    other attributes (precision, frontend attributes), so it is."""
    operands = conv.operands
    values = [operands[0], operands[1]]
    create = ir.Operation.create
    for step in recipe.steps:
        if step.kind == CREATE:
            args = [values[i] for i in step.operands]
            value = create(
                step.name,
                results=step.results,
                operands=args,
                attributes=step.attributes,
                loc=loc,
                ip=ip,
            ).result
            emitted.append(step.short)
        elif step.kind == CLONE:
            new = conv.clone(ip=ip)
            created.append(new)
            emitted.append(step.short)
            value = new.results[0]
            if step.results:
                value.set_type(step.results[0])
            new_operands = new.operands
            new_operands[0] = values[step.operands[0]]
            new_operands[1] = values[step.operands[1]]
            attributes = new.attributes
            for name, attr in step.attributes.items():
                attributes[name] = attr
        else:
            assert step.element is not None
            value = zero_of(step.element)
        values.append(value)
    return values[recipe.total]
