"""A copy of an HLO module with every float narrower than f64 widened to f64 (complex to c128).

`verify` judges against the module evaluated in f64: the closest thing to real arithmetic that an
engine runs. Literals keep their (narrow) values exactly; `convert` between floats becomes the
identity, so the copy has no rounding except f64's. Ops whose meaning depends on the bit width
(`bitcast_convert`) cannot be widened: the caller gets the reason instead of a copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from jaxlib.mlir import ir

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.resources import F8_FLOATS

NARROW_FLOATS = frozenset({"f16", "bf16", "f32", "tf32"}) | F8_FLOATS
_WIDTH_BOUND = ("bitcast_convert", "reduce_precision_bits")


@dataclass(frozen=True)
class Widened:
    """The widened module text, or why there is none (`text` is None then)."""

    text: str | None
    reason: str = ""
    changed: bool = True


def _wide_element(element: ir.Type) -> ir.Type | None:
    name = str(element)
    if name in NARROW_FLOATS:
        return ir.F64Type.get()
    if name == "complex<f32>":
        return ir.ComplexType.get(ir.F64Type.get())
    return None


def wide_type(t: ir.Type) -> ir.Type | None:
    """The f64 version of a type, or None when it has no narrow float in it."""
    if isinstance(t, ir.RankedTensorType):
        ranked = ir.RankedTensorType(t)
        element = _wide_element(ranked.element_type)
        if element is None:
            return None
        return ir.RankedTensorType.get(list(ranked.shape), element, ranked.encoding)
    if isinstance(t, ir.TupleType):
        tup = ir.TupleType(t)
        parts = [tup.get_type(i) for i in range(tup.num_types)]
        wide = [wide_type(p) for p in parts]
        if all(w is None for w in wide):
            return None
        return ir.TupleType.get_tuple([w or p for w, p in zip(wide, parts, strict=True)])
    return _wide_element(t)


def _wide_or_same(t: ir.Type) -> ir.Type:
    return wide_type(t) or t


def widen_text(text: str, filename: str) -> Widened:
    """Parse `text`, widen it, print it; a module that cannot be widened gives the reason.
    `dense_resource` weights are inlined first: a blob cannot be re-encoded in f64."""
    from convcanon.hlo.context import error_from_mlir, parse_module, print_module
    from convcanon.hlo.resources import inline_dense_resources

    text = inline_dense_resources(text, filename)
    module = parse_module(text, filename)
    try:
        with module.context, ir.Location.unknown(module.context):
            changed = _widen(module)
    except _CannotWiden as err:
        return Widened(None, str(err), False)
    except (TypeError, ValueError) as err:  # an attribute or type the bindings cannot handle
        return Widened(None, f"cannot widen: {err}", False)
    if not changed:
        return Widened(text, changed=False)
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        reason = error_from_mlir(err, filename, "verifier failed").folded_message()
        return Widened(None, f"the f64 copy does not verify: {reason}", False)
    return Widened(print_module(module, debug_info=True))  # diagnostics keep their lines


class _CannotWiden(Exception):
    pass


def _widen(module: ir.Module) -> bool:
    """Widen in place; True when anything changed."""
    changed = False
    ops: list[ir.Operation] = []

    def collect(op: ir.Operation) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    for op in ops:
        kind = op.name.split(".", 1)[-1]
        if kind in _WIDTH_BOUND and any(wide_type(v.type) for v in [*op.operands, *op.results]):
            raise _CannotWiden(f"'{op.name}' depends on the float width")
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    wide = wide_type(arg.type)
                    if wide is not None:
                        arg.set_type(wide)
                        changed = True
        if kind == "constant" and "value" in op.attributes:
            changed |= _widen_constant(op)  # reads the literal by its narrow result type
        for result in op.results:
            wide = wide_type(result.type)
            if wide is not None:
                result.set_type(wide)
                changed = True
        if op.name == "func.func":
            changed |= _widen_signature(op)
    return changed


def _widen_signature(op: ir.Operation) -> bool:
    signature = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    inputs = [_wide_or_same(t) for t in signature.inputs]
    results = [_wide_or_same(t) for t in signature.results]
    if inputs == list(signature.inputs) and results == list(signature.results):
        return False
    op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    return True


def _widen_constant(op: ir.Operation) -> bool:
    """Re-encode a narrow float literal in f64 (values exact: every narrow float is an f64)."""
    from convcanon.reference import hlo_interp

    old = op.results[0].type
    try:
        attr = op.attributes["value"]
        narrow = ir.DenseElementsAttr(attr).type if isinstance(attr, ir.DenseElementsAttr) else None
    except TypeError:  # complex literals: the bindings cannot downcast them
        attr, narrow = None, None
    if attr is not None and narrow is None:
        return False
    wide = wide_type(narrow if narrow is not None else old)
    if wide is None or not isinstance(wide, ir.RankedTensorType):
        return False
    shape = list(ir.RankedTensorType(wide).shape)
    wide_bytes = math.prod(shape) * (16 if "complex" in str(wide) else 8)
    if wide_bytes > hlo_interp.DEFAULT_MEMORY_LIMIT:  # checked before any copy is made
        raise _CannotWiden(
            f"a literal of shape {shape} needs {wide_bytes} bytes in f64, over the memory limit"
            f" of {hlo_interp.DEFAULT_MEMORY_LIMIT}"
        )
    try:
        if attr is not None and narrow is not None:
            value = hlo_interp.dense_value(attr, hlo_interp.tensor_type(narrow))
        else:
            value = hlo_interp.parse_dense_text(str(op), hlo_interp.tensor_type(old))
    except (ConvcanonError, ValueError, KeyError) as err:
        raise _CannotWiden(f"cannot read a literal: {err}") from None
    target = np.complex128 if value.dtype.kind == "c" else np.float64
    element = ir.RankedTensorType(wide).element_type
    array = np.ascontiguousarray(value.astype(target))
    if attr is not None and ir.DenseElementsAttr(attr).is_splat and target is np.float64:
        flat = array.reshape(-1)
        scalar = ir.FloatAttr.get(element, float(flat[0]) if flat.size else 0.0)
        op.attributes["value"] = ir.DenseElementsAttr.get_splat(wide, scalar)
    else:
        op.attributes["value"] = ir.DenseElementsAttr.get(
            array,  # pyright: ignore[reportArgumentType]
            type=element,
            shape=shape,
        )
    return True
