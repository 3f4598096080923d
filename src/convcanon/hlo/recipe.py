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
from dataclasses import dataclass, field
from enum import Enum

from jaxlib.mlir import ir


class StepKind(Enum):
    CREATE = "create"  # Operation.create at the conv
    CLONE = "clone"  # a clone of the conv with new operands, result type and some attributes
    ZERO = "zero"  # the block's scalar zero of an element type (Builder.zero)


@dataclass(frozen=True)
class Step:
    kind: StepKind
    short: str  # the op's name without its dialect, as `ConvRecord.ops_added` lists it
    name: str
    results: list[ir.Type]
    operands: tuple[int, ...]  # indices into the values: 0 lhs, 1 rhs, then step i's result
    attributes: dict[str, ir.Attribute]  # CREATE: all of them; CLONE: those it replaces
    element: ir.Type | None = None  # ZERO


@dataclass
class Trace:
    """The steps of one rewrite as it builds them; `valid` turns False on anything the record
    cannot express (then no recipe is kept and each such conv is rewritten as usual)."""

    refs: dict[ir.Value, int]
    steps: list[Step] = field(default_factory=list)
    valid: bool = True

    @staticmethod
    def of(lhs: ir.Value, rhs: ir.Value) -> Trace:
        # conv(x, x) would map both operands to one index: a later conv of the key may differ
        return Trace({lhs: 0, rhs: 1}, valid=lhs != rhs)

    def indices(self, values: Sequence[ir.Value]) -> tuple[int, ...]:
        found = tuple(self.refs.get(v, -1) for v in values)
        if -1 in found:
            self.valid = False
        return found

    def add(self, step: Step, result: ir.Value) -> None:
        self.refs[result] = len(self.steps) + 2
        self.steps.append(step)


@dataclass(frozen=True)
class Recipe:
    """A recorded rewrite and what it adds up to (the same for every conv of the key)."""

    steps: tuple[Step, ...]
    total: int  # index of the value that replaces the conv's result
    partials: int
    macs_after: int
    bumps: tuple[tuple[str, int], ...]  # statistics counters the rewrite bumps


def replay(
    recipe: Recipe,
    conv: ir.Operation,
    zero_of: Callable[[ir.Type], ir.Value],
    emitted: list[str],
    ip: ir.InsertionPoint,
    loc: ir.Location,
) -> ir.Value:
    """Build `recipe`'s ops for `conv` at `ip`, appending their names to `emitted`; returns the
    value that replaces the conv's result. `zero_of(element)` is the block's zero."""
    operands = conv.operands
    values = [operands[0], operands[1]]
    create = ir.Operation.create
    for step in recipe.steps:
        if step.kind is StepKind.CREATE:
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
        elif step.kind is StepKind.CLONE:
            new = conv.clone(ip=ip)
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
