"""Shape refinement: a shape-polymorphic module (`tensor<?x...>` arguments, as `jax.export` writes
with a symbolic batch) made static for concrete argument shapes, with StableHLO's own passes.

This is what jax does before compiling an exported module (`refine_polymorphic_shapes`): the
entry's argument types are refined (`stablehlo-refine-arguments`), every call is inlined, so a
helper jax calls with different constant arguments (`divmod` of a SAME pad over a symbolic
spatial dim) is refined once per call site, shapes are propagated through every op
(`stablehlo-refine-shapes`, which also resolves `jax.global_constant` dimension arguments), and the
dynamic ops whose shape operands became constants fold to static ones
(`stablehlo-canonicalize-dynamism`: `real_dynamic_slice` to `slice`, `dynamic_reshape` to
`reshape`, ...). The `shape_assertion` custom calls jax.export puts in `@main` are then constant:
a false one is the user's error (its own message), a true one is removed. A shape left dynamic
after all that is an error, so what runs next is static.

Each dim must fit what the module computes dims in, checked before any type is built: int64 for
a type, int32 where the module reads a dim as a value (`get_dimension_size` gives `tensor<i32>`,
jax's dimension variables are i32): a larger dim would wrap there, and refinement would blame the
module for the wrapped value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError, SourceLoc

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1

_DYNAMIC_TYPE = re.compile(r"tensor<(?:[\d?]+x)*\?")


def may_be_dynamic(text: str) -> bool:
    """Whether the text spells a tensor type with a `?` dim (cheap: no parse)."""
    return _DYNAMIC_TYPE.search(text) is not None


def _entry(module: ir.Module, entry: str | None) -> ir.Operation | None:
    name = entry or "main"
    for op in module.body.operations:
        attributes = op.operation.attributes
        if op.operation.name == "func.func" and ir.StringAttr(attributes["sym_name"]).value == name:
            return op.operation
    return None


def _is_dynamic(ty: ir.Type) -> bool:
    return isinstance(ty, ir.RankedTensorType) and not ir.RankedTensorType(ty).has_static_shape


def dynamic_arguments(text: str, filename: str, entry: str | None = None) -> list[str]:
    """The printed types of the entry's (default @main's) arguments if any has a dynamic dim;
    [] for a static entry, or a module without it."""
    if not may_be_dynamic(text):
        return []
    from convcanon.hlo.context import parse_module

    module = parse_module(text, filename)  # kept alive while its ops are read
    function = _entry(module, entry)
    if function is None or not function.regions[0].blocks:
        return []
    types = [a.type for a in function.regions[0].blocks[0].arguments]
    return [str(t) for t in types] if any(_is_dynamic(t) for t in types) else []


def refine_text(
    text: str, filename: str, shapes: Sequence[Sequence[int] | None], entry: str | None = None
) -> str:
    """The module refined to the given argument shapes (None: that argument's type as it is).

    Each shape must have the argument's rank and agree with its static dims. The entry must be
    @main, as in jax.export's modules (StableHLO's refinement starts from @main).
    """
    from convcanon.hlo.context import parse_module, print_module

    module = parse_module(text, filename)
    function = _entry(module, "main")
    if entry not in (None, "main") or function is None or not function.regions[0].blocks:
        raise ConvcanonError(
            f"shape refinement starts from a @main with a body; @{entry or 'main'} is the entry",
            SourceLoc(filename),
        )
    arguments = list(function.regions[0].blocks[0].arguments)
    if len(shapes) != len(arguments):
        raise ConvcanonError(
            f"@main takes {len(arguments)} argument(s); {len(shapes)} shape(s) given to refine it",
            SourceLoc(filename),
        )
    check_dims_fit(module, filename, shapes, function)
    with module.context, ir.Location.unknown():
        types = [
            _refined_type(a.type, s, i, filename)
            for i, (a, s) in enumerate(zip(arguments, shapes, strict=True))
        ]
        if "mhlo." in text:
            from convcanon.hlo.legalize import to_stablehlo

            to_stablehlo(module)
        _inline_calls(module, filename)
        _run_refinement(module, filename, types)
        _resolve_shape_assertions(module, filename)
        _check_static(module, filename)
    return print_module(module, debug_info=True)


def check_batch_sizes(text: str, filename: str, batches: Sequence[int]) -> None:
    """Refuse, before any is run, a batch size the module's dims cannot hold (`check_dims_fit`)."""
    from convcanon.hlo.context import parse_module

    module = parse_module(text, filename)
    function = _entry(module, "main")
    if function is not None and function.regions[0].blocks and batches:
        try:
            check_dims_fit(module, filename, [_batch_shapes(function, max(batches))], function)
        except ConvcanonError as err:
            err.message = f"batch size {max(batches)}: {err.message}"
            raise


def _batch_shapes(function: ir.Operation, batch: int) -> list[int]:
    """Every dynamic dim of @main's arguments set to `batch`, flattened (for the fit check)."""
    dims: list[int] = []
    for argument in function.regions[0].blocks[0].arguments:
        if _is_dynamic(argument.type):
            tensor = ir.RankedTensorType(argument.type)
            dims += [batch if tensor.is_dynamic_dim(d) else 0 for d in range(tensor.rank)]
    return dims


def refine_at_batch(text: str, filename: str, batch: int, entry: str | None = None) -> str:
    """The module with every dynamic dim of @main's arguments set to `batch`, refined."""
    from convcanon.hlo.context import parse_module

    module = parse_module(text, filename)  # kept alive while its ops are read
    function = _entry(module, "main")
    if function is None or not function.regions[0].blocks:
        return refine_text(text, filename, [], entry)  # its error
    shapes: list[list[int] | None] = []
    for argument in function.regions[0].blocks[0].arguments:
        if not _is_dynamic(argument.type):
            shapes.append(None)
            continue
        tensor = ir.RankedTensorType(argument.type)
        shapes.append(
            [
                batch if tensor.is_dynamic_dim(d) else tensor.get_dim_size(d)
                for d in range(tensor.rank)
            ]
        )
    return refine_text(text, filename, shapes, entry)


def _dimension_reader(module: ir.Module) -> ir.Operation | None:
    """The first op that reads a dim as an i32 value (`get_dimension_size`), if any."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("stablehlo.get_dimension_size", "mhlo.get_dimension_size"):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0] if found else None


def check_dims_fit(
    module: ir.Module, filename: str, shapes: Sequence[Sequence[int] | None], entry: ir.Operation
) -> None:
    """Refuse a dim the module cannot hold, before a type is built from it: over int64 no type
    holds it; over int32 a module that reads dims as i32 values would compute with it wrapped."""
    from convcanon.hlo.context import source_loc

    dims = [d for shape in shapes if shape is not None for d in shape]
    if not dims:
        return
    largest = max(dims)
    if largest > INT64_MAX or min(dims) < 0:
        bad = largest if largest > INT64_MAX else min(dims)
        raise ConvcanonError(
            f"dim {bad} does not fit a tensor type (dims are int64: 0 to {INT64_MAX})",
            source_loc(entry.location, filename),
        )
    if largest > INT32_MAX:
        reader = _dimension_reader(module)
        if reader is not None:
            raise ConvcanonError(
                f"dim {largest} does not fit the i32 this module reads dims as "
                f"({reader.name} gives tensor<i32>, as jax's dimension variables are; at most "
                f"{INT32_MAX})",
                source_loc(reader.location, filename),
            )


def _inline_calls(module: ir.Module, filename: str) -> None:
    """Inline every `func.call` of a one-block function, as jax's refinement does first:
    refinement then sees each call site's own constants. A call of a function that calls
    itself (directly or through others) is refused at the call."""
    from convcanon.hlo.context import source_loc
    from convcanon.hlo.inline import callee, inline_calls

    left = inline_calls(module, filename)
    for call in left.calls:
        name = callee(call)
        if name in left.cyclic:
            raise ConvcanonError(
                f"@{name} calls itself, directly or through other functions: shape refinement"
                " inlines every call, and a recursive one cannot be",
                source_loc(call.location, filename),
            )


def _refined_type(ty: ir.Type, shape: Sequence[int] | None, index: int, filename: str) -> ir.Type:
    if shape is None or not isinstance(ty, ir.RankedTensorType):
        return ty
    tensor = ir.RankedTensorType(ty)
    fits = len(shape) == tensor.rank and all(
        tensor.is_dynamic_dim(d) or tensor.get_dim_size(d) == shape[d] for d in range(tensor.rank)
    )
    if not fits:
        raise ConvcanonError(
            f"argument {index} is {ty}: shape {list(shape)} does not fit it", SourceLoc(filename)
        )
    return ir.RankedTensorType.get(list(shape), tensor.element_type, tensor.encoding)


def _run_refinement(module: ir.Module, filename: str, types: list[ir.Type]) -> None:
    from jaxlib.mlir import passmanager

    from convcanon.hlo.context import register_hlo_passes

    register_hlo_passes()
    listed = ",".join(str(t) for t in types)
    pipeline = (
        f"builtin.module(symbol-dce,stablehlo-refine-arguments{{types='{listed}'}},cse,"
        "stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism))"
    )
    try:
        passmanager.PassManager.parse(pipeline).run(module.operation)
    except ir.MLIRError as err:
        raise _refinement_error(err, filename) from None


def _refinement_error(err: ir.MLIRError, filename: str) -> ConvcanonError:
    """The whole first diagnostic on one line (a refinement message goes on past its first line:
    `refined with incompatible refinement keys:` then the keys), its notes but the op dumps."""
    from convcanon.hlo.context import source_loc

    diagnostics = list(err.error_diagnostics)
    if not diagnostics:
        return ConvcanonError(f"shape refinement failed: {err}", SourceLoc(filename))
    first = diagnostics[0]
    parts = [first.message.split(" (see current operation:", 1)[0]]
    parts += [str(n.message) for n in first.notes if "see current operation" not in n.message]
    message = "; ".join(" ".join(part.split()) for part in parts if part.strip())
    return ConvcanonError(
        f"shape refinement failed: {message}", source_loc(first.location, filename)
    )


def _constant_values(value: ir.Value) -> list[int] | None:
    owner = value.owner
    if not isinstance(owner, ir.OpView | ir.Operation) or owner.name != "stablehlo.constant":
        return None
    attribute = owner.attributes["value"]
    if not isinstance(attribute, ir.DenseIntElementsAttr):
        return None
    dense = ir.DenseIntElementsAttr(attribute)
    if dense.is_splat:
        return [int(dense.get_splat_value().value)]  # pyright: ignore[reportAttributeAccessIssue]
    return [int(v) for v in dense]


def _resolve_shape_assertions(module: ir.Module, filename: str) -> None:
    """Each `shape_assertion` custom call now tests a constant: false is an error with its own
    message (formatted with its other operands, as jax does), true is removed."""
    from convcanon.hlo.context import source_loc

    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "stablehlo.custom_call" and "call_target_name" in op.attributes:
            if ir.StringAttr(op.attributes["call_target_name"]).value == "shape_assertion":
                found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        where = source_loc(op.location, filename)
        holds = _constant_values(op.operands[0])
        if holds is None:
            raise ConvcanonError("a shape assertion is not constant after shape refinement", where)
        if not all(holds):
            template = "shape assertion failed"
            if "error_message" in op.attributes:
                template = ir.StringAttr(op.attributes["error_message"]).value
            values = [(_constant_values(v) or ["?"])[0] for v in list(op.operands)[1:]]
            try:
                message = template.format(*values)
            except (IndexError, KeyError, ValueError):
                message = template
            raise ConvcanonError(message, where)
        op.erase()


def _check_static(module: ir.Module, filename: str) -> None:
    """Refinement must leave no dynamic shape: every op's results and block arguments static."""
    from convcanon.hlo.context import source_loc

    left: list[tuple[ir.Operation, ir.Type]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        types = [r.type for r in op.results]
        types += [
            a.type for region in op.regions for block in region.blocks for a in block.arguments
        ]
        dynamic = [t for t in types if _is_dynamic(t)]
        if dynamic:
            left.append((op, dynamic[0]))
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if left:
        op, ty = left[0]
        raise ConvcanonError(
            f"shape refinement left a dynamic shape: {op.name} has {ty}",
            source_loc(op.location, filename),
        )
