"""Declared strides of migraphx values, held against what their ops compute.

rocMLIR reads only a function's boundary as memory, so the strides its kernels declare on the
values inside are advisory, and real kernels declare some that their own op contradicts (a
multibroadcast result with stride 1 on its broadcast dim, a transpose with its input's strides).
One rule, shared by `migraphx-to-tosa`, `convcanon run`, `verify` and `import-migraphx`:

- every layout MIGraphX can describe is accepted on a value that is only read (an argument or
  an intermediate), overlapping and gathered views included; a function result whose elements
  overlap is refused where it is written (the write is ambiguous);
- an intermediate whose declared strides contradict the strides its op computes (transpose,
  broadcast, multibroadcast: the ops whose result is a view of their input) takes the computed
  strides, with a located `warning:` naming the value and both strides.

`strict-strides` restores the earlier contract: a declared layout must tile memory (reshape,
transpose, slice, broadcast; the "not representable" error) and a contradiction is an error.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from convcanon.diagnostics import ConvcanonError, SourceLoc, report
from convcanon.migraphx import layout
from convcanon.migraphx import ops as mx
from convcanon.migraphx import shape_rules as rules
from convcanon.migraphx.op_base import int_list, int_value
from convcanon.migraphx.shaped_type import ShapedType

STRICT_OPTION = "strict-strides"

_STRICT: contextvars.ContextVar[bool] = contextvars.ContextVar("strict_strides", default=False)
_PRINTED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "stride_warnings_printed", default=None
)


@contextlib.contextmanager
def stride_policy(strict: bool) -> Iterator[None]:
    """One command's policy (`--strict-strides`): every reconcile inside it, however often the
    command parses its module (verify runs several engines), follows it and prints each
    warning once."""
    strict_token = _STRICT.set(strict)
    printed_token = _PRINTED.set(set())
    try:
        yield
    finally:
        _STRICT.reset(strict_token)
        _PRINTED.reset(printed_token)


def strict_by_default() -> bool:
    """The strictness of the command under way (False outside any `stride_policy`)."""
    return _STRICT.get()


def _warn(where: SourceLoc, message: str) -> None:
    """A located warning, through the diagnostics' `report` (so `--verify-diagnostics` sees
    it), said once per command however often the command reads its module."""
    printed = _PRINTED.get()
    if printed is not None:
        key = f"{where}: {message}"
        if key in printed:
            return
        printed.add(key)
    report("warning", where, message)


def _strides_text(strides: Sequence[int]) -> str:
    return "x".join(map(str, strides)) or "(scalar)"


def _value_name(value: SSAValue, op: Operation) -> str:
    from convcanon.migraphx.io import source_name

    if value.name_hint:
        return f"%{value.name_hint}"
    return source_name(op) or f"the result of {op.name}"


def _location(op: Operation, filename: str) -> SourceLoc:
    from convcanon.migraphx.io import op_location

    return op_location(op) or SourceLoc(filename)


def computed_strides(op: Operation) -> tuple[int, ...] | None:
    """The strides a view op gives its result (size-1 dims as declared), or None for an op
    whose result MIGraphX lays out as it chooses (computes, reshape, slice, ...)."""
    if not isinstance(op, mx.TransposeOp | mx.BroadcastOp | mx.MultiBroadcastOp):
        return None
    source, result = op.operands[0].type, op.results[0].type
    if not isinstance(source, ShapedType) or not isinstance(result, ShapedType):
        return None
    declared = result.stride_values
    if isinstance(op, mx.TransposeOp):
        perm = int_list(op, "permutation")
        return tuple(source.stride_values[p] for p in perm)
    out_lens = result.lens
    if isinstance(op, mx.BroadcastOp):
        axis = int_value(op, "axis")
        placed = [1] * len(out_lens)
        placed[axis : axis + source.rank] = source.lens
        held = {axis + k: s for k, s in enumerate(source.stride_values)}
    else:
        placed = list(rules.multibroadcast_placement(source.lens, out_lens, declared))
        real = [s for n, s in zip(source.lens, source.stride_values, strict=True) if n != 1]
        dims = [d for d, n in enumerate(placed) if n != 1]
        held = dict(zip(dims, real, strict=True))
    return tuple(
        declared[d] if n == 1 else held[d] if placed[d] == n else 0 for d, n in enumerate(out_lens)
    )


def _contradicts(lens: Sequence[int], declared: Sequence[int], computed: Sequence[int]) -> bool:
    return any(n > 1 and a != b for n, a, b in zip(lens, declared, computed, strict=True))


def _untiled(ty: ShapedType) -> str | None:
    reason = layout.check_layout(ty.lens, ty.stride_values)
    return None if reason is None else f"!migraphx.shaped layout is not representable: {reason}"


def reconcile_strides(module: ModuleOp, filename: str, strict: bool | None = None) -> None:
    """Check every function's declared layouts (see the module docstring); in place, each
    contradicted intermediate retyped to its op's strides. Raises ConvcanonError (strict;
    None: the command's `stride_policy`)."""
    if strict is None:
        strict = strict_by_default()
    for function in module.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        block = function.body.blocks[0]
        returned = {v for op in block.ops if isinstance(op, func.ReturnOp) for v in op.operands}
        if strict:
            for ty in (*function.function_type.inputs.data, *function.function_type.outputs.data):
                reason = _untiled(ty) if isinstance(ty, ShapedType) else None
                if reason is not None:
                    raise ConvcanonError(reason, _location(function, filename))
        for op in block.ops:
            _reconcile_op(op, returned, filename, strict)


def _reconcile_op(op: Operation, returned: set[SSAValue], filename: str, strict: bool) -> None:
    if not op.results or not isinstance(op.results[0].type, ShapedType):
        return
    value = op.results[0]
    ty = value.type
    assert isinstance(ty, ShapedType)
    computed = None if value in returned else computed_strides(op)
    if computed is not None and _contradicts(ty.lens, ty.stride_values, computed):
        message = (
            f"{_value_name(value, op)} is declared with strides {_strides_text(ty.stride_values)}, "
            f"but {op.name} computes {_strides_text(computed)}"
        )
        where = _location(op, filename)
        if strict:
            raise ConvcanonError(f"{message} ({STRICT_OPTION})", where)
        _warn(where, f"{message}: the computed strides are used")
        retyped = Rewriter.replace_value_with_new_type(
            value, ShapedType(ty.lens, computed, ty.element_type)
        )
        retyped.name_hint = value.name_hint
        return
    reason = _untiled(ty) if strict else None
    if reason is not None:
        raise ConvcanonError(reason, _location(op, filename))
