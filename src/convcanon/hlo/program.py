"""A conv configuration's rewrite as a program, and its instances.

A `Program` is the ops of one rewrite in order, each a `Step` with its name, result type,
attributes and operands (the conv's lhs and kernel, or an earlier step's result); `build.Builder`
makes it. `instantiate` builds a program in front of a conv with that conv's location: a model
repeats a few conv configurations thousands of times, and a program is made once per
configuration, its instances costing one `Operation.create` per op.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxlib.mlir import ir

AnyOp = ir.Operation | ir.OpView

Ref = int  # a value of a program: 0 the conv's lhs, 1 its kernel, i + 2 the result of step i

# Step kinds. Plain classes, not dataclasses or an Enum: this module is on convcanon-opt's
# start-up path, where generating a dataclass's methods costs ~0.5 ms each.
CREATE = 0  # an op created from its name, attributes and result type
CLONE = 1  # the conv itself on new operands, with a new result type and some attributes
ZERO = 2  # the block's scalar zero of an element type (one per block, first in it)
PARSE = 3  # an op parsed from text (a complex zero, which the bindings cannot build)


class Step:
    __slots__ = ("kind", "short", "name", "result", "operands", "attributes", "element")

    def __init__(
        self,
        kind: int,
        short: str,
        name: str,
        result: ir.Type,
        operands: tuple[Ref, ...],
        attributes: dict[str, ir.Attribute],
        element: ir.Type | None = None,
    ) -> None:
        self.kind = kind
        self.short = short  # the op's name without its dialect, as `explain` lists it
        self.name = name  # CREATE: the op's name; PARSE: its text, without a location
        self.result = result
        self.operands = operands
        self.attributes = attributes  # CREATE: all of them; CLONE: those it writes
        self.element = element  # ZERO


class Program:
    """The ops of one conv configuration's rewrite, and the value that replaces the conv."""

    __slots__ = ("steps", "total")

    def __init__(self, steps: tuple[Step, ...], total: Ref) -> None:
        self.steps = steps
        self.total = total


def instantiate(
    program: Program,
    conv: AnyOp,
    zero_of: Callable[[ir.Type], tuple[ir.Value, bool]],
    emitted: list[str],
    created: list[AnyOp],
    fresh: bool,
) -> ir.Value:
    """Build `program`'s ops in front of `conv`, with its location, appending the short name
    of each op built to `emitted` and the ops that need verifying to `created`: every op of a
    `fresh` program, else only the convs (a repeated op of a verified program verifies; a
    conv also carries its own other attributes). `zero_of(element)` is the block's zero and
    whether it was made for this call. Returns the value replacing the conv's result."""
    operands = conv.operands
    values: list[ir.Value] = [operands[0], operands[1]]
    ip, loc = ir.InsertionPoint(conv), conv.location
    create = ir.Operation.create
    for step in program.steps:
        kind = step.kind
        if kind == CREATE:
            op = create(
                step.name,
                results=[step.result],
                operands=[values[i] for i in step.operands],
                attributes=step.attributes,
                loc=loc,
                ip=ip,
            )
            if fresh:
                created.append(op)
            emitted.append(step.short)
            values.append(op.result)
        elif kind == CLONE:
            new = conv.operation.clone(ip=ip)
            created.append(new)
            emitted.append(step.short)
            value = new.results[0]
            value.set_type(step.result)
            new_operands = new.operands
            new_operands[0] = values[step.operands[0]]
            new_operands[1] = values[step.operands[1]]
            attributes = new.attributes
            for name, attr in step.attributes.items():
                attributes[name] = attr
            values.append(value)
        elif kind == ZERO:
            assert step.element is not None
            zero, made = zero_of(step.element)
            if made:
                emitted.append("constant")
            values.append(zero)
        else:
            op = ir.Operation.parse(f"{step.name} {loc}", context=loc.context)
            ip.insert(op)
            created.append(op)
            emitted.append(step.short)
            values.append(op.result)
    return values[program.total]
