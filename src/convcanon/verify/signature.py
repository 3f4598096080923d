"""What `verify` reads from an HLO module before it runs it: the entry function, its argument
types, the longest sum into one output element (which sets the rounding floor), and which
arguments are weights (a network-like draw normalises them by their fan-in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from convcanon.diagnostics import ConvcanonError, SourceLoc


@dataclass(frozen=True)
class Signature:
    """What verify needs from a module: entry name, argument types, longest reduction, and the
    arguments that are conv kernels or dot weights (index -> fan-in)."""

    entry: str
    args: list  # list[hlo_interp.TensorType]
    reduction: int
    weights: dict[int, int]


def module_signature(
    text: str, filename: str, entry: str | None, memory_limit: int | None = None
) -> Signature:
    """Parse `text` (HLO) and read the entry's argument types and the longest reduction;
    arguments whose random values would not fit in `memory_limit` (default: the interpreter's)
    are refused."""
    from jaxlib.mlir import ir

    from convcanon.reference import hlo_interp
    from convcanon.reference.parsed import read_only_module
    from convcanon.reference.run import refuse_tuples
    from convcanon.verify.inputs import InputsTooLarge, check_drawn_bytes

    module = read_only_module(text, filename)
    interp = hlo_interp.Interpreter(module, filename)
    public = [
        name
        for name, func in interp.functions.items()
        if "sym_visibility" not in func.attributes
        or ir.StringAttr(func.attributes["sym_visibility"]).value == "public"
    ]
    entry = chosen_entry(entry, list(interp.functions), public, SourceLoc(filename))
    if not interp.functions[entry].regions[0].blocks:
        raise ConvcanonError(
            f"@{entry} is a declaration: it has no body to run", interp.loc(interp.functions[entry])
        )
    block = interp.functions[entry].regions[0].blocks[0]
    args = [hlo_interp.tensor_type(a.type, SourceLoc(filename)) for a in block.arguments]
    refuse_tuples(entry, interp.functions[entry], interp.loc(interp.functions[entry]))
    limit = memory_limit or hlo_interp.DEFAULT_MEMORY_LIMIT
    where = interp.loc(interp.functions[entry])
    for index, arg in enumerate(args):  # random inputs are allocated before any interpreter runs
        if arg.nbytes > limit:
            raise InputsTooLarge(
                f"@{entry} argument {index} ({arg.element}{list(arg.shape)}) needs {arg.nbytes} "
                f"bytes, over the memory limit of {limit}",
                where,
            )
    check_drawn_bytes(args, entry, limit, where)
    return Signature(entry, args, _longest_reduction(module), _weight_arguments(block))


def chosen_entry(entry: str | None, functions: list[str], public: list[str], loc: SourceLoc) -> str:
    """The function `verify` compares: `entry`, else @main, else the only public function.
    Several public functions and no @main is refused: judging the first alone said ok of two
    modules whose other functions differ."""
    if entry is None and "main" not in functions and len(public) > 1:
        names = ", ".join(f"@{name}" for name in public)
        raise ConvcanonError(
            f"no @main and {len(public)} public functions ({names}): name the one to compare"
            " with --entry",
            loc,
        )
    if entry is None:
        entry = "main" if "main" in functions or not public else public[0]
    if entry not in functions:
        known = ", ".join(functions) or "none"
        raise ConvcanonError(f"no entry function @{entry} (functions: {known})", loc)
    return entry


# ops that carry a weight to a conv or dot unchanged in value (a kernel is often reshaped,
# transposed or converted on the way: flax's NCHW export, a bf16 cast)
_VALUE_PRESERVING = ("convert", "reshape", "transpose", "reverse", "copy", "bitcast_convert")


def _weight_arguments(block: object) -> dict[int, int]:
    """Entry arguments that reach a conv's kernel or a dot's rhs through value-preserving ops,
    with the fan-in of what they feed (the products summed per output element)."""
    from jaxlib.mlir import ir

    assert isinstance(block, ir.Block)
    found: dict[int, int] = {}
    for index, argument in enumerate(block.arguments):
        frontier: list[ir.Value] = [argument]
        seen: set[int] = set()
        while frontier:
            value = frontier.pop()
            for use in value.uses:
                user = use.owner.operation
                kind = user.name.split(".", 1)[-1]
                if kind in ("convolution", "dynamic_conv", "dot_general", "dot"):
                    if use.operand_number == 1:
                        shapes = [
                            tuple(ir.RankedTensorType(v.type).shape)
                            for v in user.operands
                            if isinstance(v.type, ir.RankedTensorType)
                        ]
                        fan_in = _contraction_length(user, kind, shapes)
                        found[index] = max(found.get(index, 1), fan_in)
                elif kind in _VALUE_PRESERVING and hash(user) not in seen:
                    seen.add(hash(user))
                    frontier.extend(user.results)
    return found


def _longest_reduction(module: object) -> int:
    """Max number of terms any conv/dot/reduce sums into one output element."""
    from jaxlib.mlir import ir

    assert isinstance(module, ir.Module)
    longest = 1

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal longest
        kind = op.name.split(".", 1)[-1]
        operand_shapes = [
            tuple(ir.RankedTensorType(v.type).shape)
            for v in op.operands
            if isinstance(v.type, ir.RankedTensorType)
        ]
        result_sizes = [
            math.prod(ir.RankedTensorType(r.type).shape)
            for r in op.results
            if isinstance(r.type, ir.RankedTensorType)
        ]
        if kind in ("convolution", "dynamic_conv", "dot_general", "dot") and operand_shapes:
            longest = max(longest, _contraction_length(op, kind, operand_shapes))
        elif kind in ("reduce", "reduce_window") and operand_shapes and result_sizes:
            longest = max(longest, math.prod(operand_shapes[0]) // max(1, result_sizes[0]))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return longest


def _contraction_length(op: object, kind: str, shapes: list[tuple[int, ...]]) -> int:
    """Products summed into one output element: the kernel without its output features (conv),
    the contracted dims (dot); the whole rhs when the attributes cannot be read."""
    from jaxlib.mlir import ir

    from convcanon.reference import hlo_interp

    assert isinstance(op, ir.Operation)
    whole = math.prod(shapes[1]) if len(shapes) > 1 else 1
    try:
        if kind in ("convolution", "dynamic_conv"):
            dims = hlo_interp.conv_dims(op.attributes["dimension_numbers"])
            return whole // max(1, shapes[1][dims.kernel_output_feature_dimension])
        if kind == "dot_general":
            dims = hlo_interp.dot_dims(op.attributes["dot_dimension_numbers"])
            return math.prod(shapes[0][d] for d in dims.lhs_contracting_dimensions)
        return shapes[0][-1] if shapes[0] else 1
    except (KeyError, TypeError, ValueError, IndexError):
        return whole
