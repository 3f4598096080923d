"""The `migraphx-to-tosa` pass: each function rebuilt as TOSA with flat boundary types.

Nothing changes unless the whole module lowers: an op without a lowering is a ConvcanonError naming
the op and its location. Option `types`: `conformant` (the default) keeps every tensor inside
TOSA 1.0's profiles (see `storage_types`), `native` types values as MIGraphX does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    ModuleOp,
    TensorType,
    f32,
    i8,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from convcanon.conversion.migraphx_to_tosa import storage_types as st
from convcanon.conversion.migraphx_to_tosa.emitter import Emitter, View, unary_view
from convcanon.conversion.migraphx_to_tosa.integer_domain import float_to_integer
from convcanon.conversion.migraphx_to_tosa.lowerings import CORE_LOWERINGS, ELEMENTWISE_OPS
from convcanon.conversion.migraphx_to_tosa.norm_lowerings import NORM_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.op_lowering import Lowering, LoweringTable
from convcanon.conversion.migraphx_to_tosa.options import MigraphxToTosaOptions, Types
from convcanon.conversion.migraphx_to_tosa.pad_lowerings import PAD_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.pool_lowerings import POOL_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.quant_lowerings import QUANT_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.reduce_lowerings import REDUCE_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.shape_lowerings import SHAPE_LOWERINGS
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    flat_tosa_type,
    lowering_error,
    read_flat,
    result_type,
    write_flat,
)
from convcanon.migraphx import declared_strides
from convcanon.migraphx import ops as mx
from convcanon.migraphx.boundary_ops import AsLogicalShapeOp, AsUnderlyingShapeOp, LiteralOp
from convcanon.migraphx.shaped_type import ShapedType, is_float_type
from convcanon.pipeline import OptionValue, PassStats
from convcanon.tosa import ops as tosa
from convcanon.tosa.storage import is_foreign, is_int4

# The one table of lowerings, op class -> lowering, joined from op families that do not import
# each other. The boundary views are lowered here: they read and write the flat buffers.
LOWERINGS: LoweringTable = {
    **CORE_LOWERINGS,
    **REDUCE_LOWERINGS,
    **POOL_LOWERINGS,
    **PAD_LOWERINGS,
    **NORM_LOWERINGS,
    **SHAPE_LOWERINGS,
    **QUANT_LOWERINGS,
}
BOUNDARY_OPS: tuple[type[Operation], ...] = (AsLogicalShapeOp, AsUnderlyingShapeOp)

# Ops that only move elements: in the conformant form they move storage codes as they are.
STORAGE_OPS: frozenset[type[Operation]] = frozenset(SHAPE_LOWERINGS)

# -- functions -------------------------------------------------------------------------------------


class FunctionLowering:
    """Lowers one func.func into a new block of TOSA ops with flat boundary types."""

    def __init__(
        self,
        function: func.FuncOp,
        stats: PassStats,
        functions: Mapping[str, func.FuncOp] | None = None,
        types: Types = "conformant",
    ):
        self.function = function
        self.conformant = types == "conformant"
        self.functions = functions or {}
        self.inlining: list[str] = [function.sym_name.data]
        if not function.body.blocks:
            raise lowering_error(
                function,
                f"@{function.sym_name.data} is a declaration: migraphx-to-tosa lowers function "
                "bodies, and a body-less function has no flat-buffer meaning to give it",
            )
        old_block = function.body.blocks[0]
        in_types = [self.flat_type(a.type) for a in old_block.args]
        self.block = Block(arg_types=in_types)
        self.em = Emitter(self.block, stats)
        self.views: dict[SSAValue, View] = {}
        self.tensors: dict[SSAValue, SSAValue] = {}
        for old, new in zip(old_block.args, self.block.args, strict=True):
            flat = self.from_boundary(new, old.type)
            if isinstance(old.type, ShapedType):
                self.views[old] = read_flat(self.em, flat, old.type, function)
            else:
                self.tensors[old] = flat

    def foreign(self, ty: Attribute) -> bool:
        """Whether, in this form, values of `ty` travel as storage integers."""
        element = st.element_of(ty)
        return self.conformant and element is not None and is_foreign(element)

    def flat_type(self, ty: Attribute) -> Attribute:
        return st.storage_tensor_type(ty) if self.foreign(ty) else flat_tosa_type(ty)

    def from_boundary(self, arg: SSAValue, ty: Attribute) -> SSAValue:
        """A boundary buffer as the function body holds it (storage: one i8 per element)."""
        if not self.foreign(ty):
            return arg
        flat = st.unpack_boundary(self.em, arg, ty)
        return flat if isinstance(ty, ShapedType) else self.em.reshape(flat, _tensor_shape(ty))

    def to_boundary(self, value: SSAValue, ty: Attribute) -> SSAValue:
        if not self.foreign(ty):
            return value
        flat = self.em.reshape(value, [st.element_count(ty)])
        return st.pack_boundary(self.em, flat, ty)

    def boundary_attrs(
        self, types: list[Attribute], source: ArrayAttr[DictionaryAttr] | None
    ) -> ArrayAttr[DictionaryAttr] | None:
        """Each argument or result keeps the attributes it had (`{mhal.read_access}`), and a
        storage buffer says what it stores (`convcanon.element`, `convcanon.elements`)."""
        kept = [dict(d.data) for d in source.data] if source else [{} for _ in types]
        for attrs, ty in zip(kept, types, strict=True):
            if self.foreign(ty):
                attrs.update(st.storage_attrs(ty).data)
        if not any(kept):
            return None
        return ArrayAttr([DictionaryAttr(attrs) for attrs in kept])

    def view(self, value: SSAValue, user: Operation) -> View:
        if value in self.views:
            return self.views[value]
        raise lowering_error(user, f"operand {value.type} is not a migraphx value")

    def tensor(self, value: SSAValue, user: Operation) -> SSAValue:
        if value in self.tensors:
            return self.tensors[value]
        if value in self.views and isinstance(value.type, ShapedType):
            return write_flat(self.em, self.views[value], value.type, user)
        raise lowering_error(user, f"operand {value.type} has no lowering")

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, AsLogicalShapeOp):
            ty = result_type(op)
            self.views[op.output] = read_flat(self.em, self.tensor(op.args[0], op), ty, op)
            return
        if isinstance(op, AsUnderlyingShapeOp):
            ty = op.args[0].type
            assert isinstance(ty, ShapedType)
            flat = write_flat(self.em, self.view(op.args[0], op), ty, op)
            self.tensors[op.output] = flat
            return
        if isinstance(op, func.CallOp):
            self.inline_call(op)
            return
        lowering = LOWERINGS.get(type(op))
        if lowering is None:
            raise lowering_error(op, "has no lowering to TOSA")
        args = [self.view(v, op) for v in op.operands]
        if any(self.foreign(v.type) for v in (*op.operands, *op.results)):
            self.views[op.results[0]] = self.lower_on_storage(op, lowering, args)
        elif type(op) in ELEMENTWISE_OPS and any(
            _is_ocp_fp8(st.element_of(v.type)) for v in (*op.operands, *op.results)
        ):
            # TOSA's fp8 extensions hold these types but have casts, contractions and data
            # movement only: the op computes on f32 and rounds once
            self.views[op.results[0]] = self.lower_retyped(op, lowering, args, _ocp_fp8_on_f32)
        else:
            self.views[op.results[0]] = lowering(self, op, args)
        self.em.stats.bump("migraphx ops lowered")

    def lower_on_storage(self, op: Operation, lowering: Lowering, args: list[View]) -> View:
        """The conformant form of an op touching foreign types: data movement on the storage
        codes; any other op lowered as its copy with foreign floats retyped f32 (operands
        decoded) and int4 retyped 8-bit (the quantization ops handle int4 themselves), its
        foreign result encoded back."""
        if type(op) in STORAGE_OPS:
            return lowering(self, op, args)
        if isinstance(op, LiteralOp):
            return self.storage_literal(op)
        int4_aware = type(op) in QUANT_LOWERINGS
        target = st.element_of(op.results[0].type)
        source = st.element_of(op.operands[0].type) if op.operands else None
        if isinstance(op, mx.ConvertOp) and target is not None and is_int4(target):
            if source is not None and is_float_type(source):
                # clamped to int4's own range in i8, then stored (a carrier-typed convert
                # would clamp to i8's)
                wide = st.decode(self.em, args[0], source)
                return st.encode(self.em, float_to_integer(self.em, wide, target, i8), target)

        def computed(element: Attribute) -> Attribute:
            if not is_foreign(element) or (is_int4(element) and int4_aware):
                return element
            return st.carrier(element)

        return self.lower_retyped(op, lowering, args, computed)

    def lower_retyped(
        self,
        op: Operation,
        lowering: Lowering,
        args: list[View],
        computed: Callable[[Attribute], Attribute],
    ) -> View:
        """`op` lowered as its copy with element types mapped by `computed` (where TOSA computes
        on them): each operand converted there exactly (storage codes decoded, held types cast),
        the result converted back (rounded once)."""

        def into(view: View, element: Attribute) -> View:
            if computed(element) == element:
                return view
            if is_foreign(element):
                return st.decode(self.em, view, element)
            return unary_view(self.em, tosa.CastOp, view, computed(element))

        inputs = [
            into(view, st.element_of(v.type) or v.type)
            for view, v in zip(args, op.operands, strict=True)
        ]
        out = lowering(self, retyped(op, computed), inputs)
        element = st.element_of(op.results[0].type)
        if element is None or computed(element) == element:
            return out
        if is_foreign(element):
            return st.encode(self.em, out, element)
        return unary_view(self.em, tosa.CastOp, out, element)

    def storage_literal(self, op: LiteralOp) -> View:
        return st.storage_literal(self.em, op.value, result_type(op))

    def inline_call(self, call: func.CallOp) -> None:
        """A call of a function of this module is lowered inline: the callee's values stay
        Views, so layouts flow through the call without boundary transposes."""
        name = call.callee.root_reference.data
        callee = self.functions.get(name)
        if callee is None:
            raise lowering_error(call, f"calls @{name}, which is not a function of this module")
        if not callee.body.blocks:
            raise lowering_error(
                call, f"calls @{name}, a declaration: there is no body to lower in its place"
            )
        if name in self.inlining:
            raise lowering_error(call, f"calls @{name} recursively; recursion cannot be inlined")
        block = callee.body.blocks[0]
        for arg, value in zip(block.args, call.operands, strict=True):
            if value in self.views:
                self.views[arg] = self.views[value]
            else:
                self.tensors[arg] = self.tensor(value, call)
        self.inlining.append(name)
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                for result, value in zip(call.results, op.operands, strict=True):
                    if value in self.views:
                        self.views[result] = self.views[value]
                    else:
                        self.tensors[result] = self.tensor(value, op)
                break
            self.lower_op(op)
        self.inlining.pop()

    def run(self) -> func.FuncOp:
        old_block = self.function.body.blocks[0]
        returned: list[SSAValue] = []
        for op in old_block.ops:
            if isinstance(op, func.ReturnOp):
                returned = [self.to_boundary(self.tensor(v, op), v.type) for v in op.operands]
                break
            self.lower_op(op)
        self.block.add_op(func.ReturnOp(*returned))
        remove_dead_ops(self.block)
        out_types = [v.type for v in returned]
        source_types = self.function.function_type
        lowered = func.FuncOp(
            self.function.sym_name.data,
            (list(self.block.arg_types), out_types),
            Region(self.block),
            self.function.sym_visibility,
            arg_attrs=self.boundary_attrs(list(source_types.inputs.data), self.function.arg_attrs),
            res_attrs=self.boundary_attrs(list(source_types.outputs.data), self.function.res_attrs),
        )
        lowered.attributes.update(self.function.attributes)  # `kernel`, `arch`: as rocMLIR keeps
        if self.conformant:
            _check_conformant(self.function, lowered)
        return lowered


def _is_ocp_fp8(element: Attribute | None) -> bool:
    return isinstance(element, Float8E4M3FNType | Float8E5M2Type)


def _ocp_fp8_on_f32(element: Attribute) -> Attribute:
    return f32 if _is_ocp_fp8(element) else element


def _tensor_shape(ty: Attribute) -> list[int]:
    assert isinstance(ty, TensorType)
    return list(ty.get_shape())


def retyped(op: Operation, element_map: Callable[[Attribute], Attribute]) -> Operation:
    """A detached copy of `op` whose shaped operand and result types have their element types
    mapped (its operands are placeholders: lowerings read types and attributes, never them)."""

    def mapped(ty: Attribute) -> Attribute:
        if isinstance(ty, ShapedType):
            return ShapedType(ty.lens, ty.stride_values, element_map(ty.element_type))
        return ty

    placeholders = Block(arg_types=[mapped(v.type) for v in op.operands])
    return type(op).create(
        operands=list(placeholders.args),
        result_types=[mapped(r.type) for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        location=op.location,
    )


def _check_conformant(source: func.FuncOp, lowered: func.FuncOp) -> None:
    """The conformant form's promise: no value of a type outside the profiles anywhere."""
    for op in lowered.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for value in values:
            element = st.element_of(value.type)
            if element is not None and is_foreign(element):
                raise lowering_error(
                    source,
                    f"left a {value.type} in its types=conformant TOSA ({op.name}; a convcanon "
                    "bug)",
                )


def remove_dead_ops(block: Block) -> None:
    """Drop TOSA ops whose results are unused (folded reshapes/transposes, unused constants)."""
    for op in reversed(list(block.ops)):
        if isinstance(op, tosa.TosaOp) and not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def count_ops(module: ModuleOp) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in module.walk():
        if op.name.startswith("tosa."):
            counts[op.name] = counts.get(op.name, 0) + 1
    return counts


def migraphx_to_tosa(parsed: object, options: Mapping[str, OptionValue] | None = None) -> PassStats:
    """The pass: every func.func of the module lowered to TOSA, in place, or nothing changes."""
    module = getattr(parsed, "module", parsed)
    assert isinstance(module, ModuleOp)
    stats = PassStats()
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    by_name = {f.sym_name.data: f for f in functions}
    # bodies first: a call of a declaration is reported where it is called
    order = sorted(functions, key=lambda f: not f.body.blocks)
    chosen = MigraphxToTosaOptions.from_mapping(options or {})
    types = chosen.types
    # an unset strict-strides follows the command's policy (verify's --strict-strides)
    strict = chosen.strict_strides if declared_strides.STRICT_OPTION in (options or {}) else None
    declared_strides.reconcile_strides(module, "<input>", strict)
    done = {id(f): FunctionLowering(f, stats, by_name, types).run() for f in order}
    lowered = [done[id(f)] for f in functions]
    for old, new in zip(functions, lowered, strict=True):
        _verify_lowered(old, new)
        module.body.block.insert_op_before(new, old)
        old.detach()
        old.erase()
    for name, count in count_ops(module).items():
        stats.bump(f"{name} emitted", count)
    return stats


def _verify_lowered(source: func.FuncOp, lowered: func.FuncOp) -> None:
    """Never print TOSA that upstream MLIR would reject: a lowering bug is an error at the
    source function, not a module that fails later in iree-opt."""
    try:
        lowered.verify()
    except VerifyException as err:
        raise lowering_error(
            source, f"lowered to invalid TOSA (a convcanon bug): {str(err).splitlines()[0]}"
        ) from None
