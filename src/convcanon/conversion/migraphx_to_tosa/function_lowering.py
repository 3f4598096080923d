"""The `migraphx-to-tosa` pass: each function rebuilt as TOSA with flat boundary types.

Nothing changes unless the whole module lowers: an op without a lowering is a ConvcanonError naming
the op and its location.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from convcanon.conversion.migraphx_to_tosa.emitter import Emitter, View
from convcanon.conversion.migraphx_to_tosa.lowerings import LOWERINGS
from convcanon.conversion.migraphx_to_tosa.type_conversion import (
    flat_tosa_type,
    lowering_error,
    read_flat,
    result_type,
    write_flat,
)
from convcanon.migraphx import ops as mx
from convcanon.migraphx.shaped_type import ShapedType
from convcanon.pipeline import OptionValue, PassStats
from convcanon.tosa import ops as tosa

# -- functions -------------------------------------------------------------------------------------


class FunctionLowering:
    """Lowers one func.func into a new block of TOSA ops with flat boundary types."""

    def __init__(
        self,
        function: func.FuncOp,
        stats: PassStats,
        functions: Mapping[str, func.FuncOp] | None = None,
    ):
        self.function = function
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
            if isinstance(old.type, ShapedType):
                self.views[old] = read_flat(self.em, new, old.type)
            else:
                self.tensors[old] = new

    @staticmethod
    def flat_type(ty: Attribute) -> Attribute:
        return flat_tosa_type(ty)

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
        if isinstance(op, mx.AsLogicalShapeOp):
            ty = result_type(op)
            self.views[op.output] = read_flat(self.em, self.tensor(op.args[0], op), ty)
            return
        if isinstance(op, mx.AsUnderlyingShapeOp):
            ty = op.args[0].type
            assert isinstance(ty, ShapedType)
            flat = write_flat(self.em, self.view(op.args[0], op), ty, op)
            self.tensors[op.output] = flat
            return
        if isinstance(op, func.CallOp):
            self.inline_call(op)
            return
        lowering = LOWERINGS.get(op.name)
        if lowering is None:
            raise lowering_error(op, "has no lowering to TOSA")
        args = [self.view(v, op) for v in op.operands]
        self.views[op.results[0]] = lowering(self, op, args)
        self.em.stats.bump("migraphx ops lowered")

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
                returned = [self.tensor(v, op) for v in op.operands]
                break
            self.lower_op(op)
        self.block.add_op(func.ReturnOp(*returned))
        remove_dead_ops(self.block)
        out_types = [v.type for v in returned]
        lowered = func.FuncOp(
            self.function.sym_name.data,
            (list(self.block.arg_types), out_types),
            Region(self.block),
            self.function.sym_visibility,
        )
        return lowered


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
    done = {id(f): FunctionLowering(f, stats, by_name).run() for f in order}
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
