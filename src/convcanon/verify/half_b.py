"""What `convcanon verify` needs from a migraphx or TOSA module (half B, xDSL).

Both kinds of module take and return flat buffers at the boundary (a shaped argument is its
`flat_size()` elements, a TOSA argument its tensor shape), so a migraphx program and its TOSA
lowering take the same random inputs and their outputs compare element for element.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Attribute, BlockArgument

from convcanon.diagnostics import ConvcanonError, SourceLoc

if TYPE_CHECKING:
    from convcanon.reference.migraphx_interp import FlatArg


def parse(text: str, filename: str) -> ModuleOp:
    """The module of `text`, shared with the command's other readers (`reference.parsed`):
    not to be changed."""
    from convcanon.reference.parsed import read_only_xdsl_module

    return read_only_xdsl_module(text, filename)


def entry_function(module: ModuleOp, filename: str, entry: str | None) -> func.FuncOp:
    """`entry`, else @main, else the only public function (`signature.chosen_entry`)."""
    from convcanon.verify.signature import chosen_entry

    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    by_name = {f.sym_name.data: f for f in functions}
    public = [
        f.sym_name.data
        for f in functions
        if f.sym_visibility is None or f.sym_visibility.data == "public"
    ]
    chosen = by_name[chosen_entry(entry, list(by_name), public, SourceLoc(filename))]
    if not chosen.body.blocks:
        from convcanon.migraphx.io import op_location

        raise ConvcanonError(
            f"@{chosen.sym_name.data} is a declaration: it has no body to run",
            op_location(chosen) or SourceLoc(filename),
        )
    return chosen


def check_memory(
    function: func.FuncOp, args: list[FlatArg], filename: str, limit: int | None = None
) -> None:
    """Refuse, before verify allocates its random input buffers, an argument over the
    interpreter's memory limit (a hostile `tensor<99999999999x4xf32>` must not eat the machine),
    or arguments over it together (`inputs.check_drawn_bytes`); `limit`: `run --memory-limit`."""
    from convcanon.migraphx.io import op_location
    from convcanon.reference.migraphx_interp import DEFAULT_MEMORY_LIMIT
    from convcanon.verify.inputs import InputsTooLarge, check_drawn_bytes

    limit = limit or DEFAULT_MEMORY_LIMIT
    for index, arg in enumerate(args):
        needed = math.prod(arg.shape) * arg.dtype.itemsize
        if needed > limit:
            raise InputsTooLarge(
                f"@{function.sym_name.data} argument {index} (flat buffer {arg.element}"
                f"{list(arg.shape)}) needs {needed} bytes, over the memory limit of "
                f"{limit}",
                op_location(function) or SourceLoc(filename),
            )
    where = op_location(function) or SourceLoc(filename)
    check_drawn_bytes(args, function.sym_name.data, limit, where)


def _elements(ty: Attribute) -> int:
    from convcanon.migraphx.shaped_type import ShapedType

    if isinstance(ty, ShapedType):
        return math.prod(ty.lens)
    if isinstance(ty, TensorType):
        return math.prod(ty.get_shape())
    return 1


_CONTRACTIONS = ("convolution", "dot", "conv2d", "conv3d", "depthwise_conv2d", "matmul")
_REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "softmax")


def longest_reduction(module: ModuleOp) -> int:
    """Max number of terms summed into one output element (bounds the float tolerance): the
    whole rhs for a contraction (an over-estimate), input/output size for a reduction."""
    longest = 1
    for op in module.walk():
        kind = op.name.split(".", 1)[-1]
        if kind in _CONTRACTIONS and len(op.operands) > 1:
            longest = max(longest, _elements(op.operands[1].type))
        elif kind in _REDUCTIONS and op.operands and op.results:
            inputs, outputs = _elements(op.operands[0].type), _elements(op.results[0].type)
            longest = max(longest, inputs // max(1, outputs))
    return longest


_INTEGER_DIVISIONS = ("migraphx.div", "tosa.intdiv")


def integer_divisor_args(function: func.FuncOp) -> list[int]:
    """Arguments that are directly the divisor of an integer division. Division by zero is
    undefined in MIGraphX and TOSA (engines disagree), so verify never draws a zero for them."""
    if not function.body.blocks:
        return []
    args = list(function.body.blocks[0].args)
    found: set[int] = set()
    for op in function.walk():
        if op.name in _INTEGER_DIVISIONS and len(op.operands) == 2:
            divisor = op.operands[1]
            element = getattr(divisor.type, "element_type", None)
            if isinstance(element, IntegerType) and isinstance(divisor, BlockArgument):
                if divisor in args:
                    found.add(args.index(divisor))
    return sorted(found)


def has_migraphx_ops(module: ModuleOp) -> bool:
    return any(op.name.startswith("migraphx.") for op in module.walk())


def lowered_text(module: ModuleOp) -> str:
    """The module lowered by `migraphx-to-tosa` (in place: callers pass a module of their own)."""
    from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
    from convcanon.migraphx.io import print_file

    migraphx_to_tosa(module, {})
    return print_file(module)


_NARROW_FLOAT = re.compile(
    r"(?<=[x<:\s,(])(?:f16|bf16|f32|f8E4M3FN|f8E5M2|f8E4M3FNUZ|f8E5M2FNUZ)(?=[>,\s)}\]])"
)


def widened_text(text: str, filename: str) -> tuple[str | None, str]:
    """A migraphx module with its floats in f64 (the migraphx reference computes f64 exactly),
    or None and why not: TOSA (its reference accumulates contractions in f32), hex literals."""
    module = parse(text, filename)
    if any(op.name.startswith("tosa.") for op in module.walk()):
        return None, "the TOSA reference accumulates in f32"
    if not has_migraphx_ops(module):
        return None, "no migraphx ops"
    if re.search(r"dense<\s*\"?0x", text):
        return None, "hex-encoded literals"
    if re.search(r"=\s*0x[0-9a-fA-F]+\s*:\s*f32", text):  # an f64 copy would read other bits
        return None, "a hex float attribute (a NaN or infinite pad value)"
    if re.search(r"f4E2M1FN|f8E8M0FNU", text):  # not widened: an f64 copy would drop their
        return None, "fp4/e8m0 values (an f64 copy would not round to them)"
    wide = _NARROW_FLOAT.sub("f64", text)
    if wide == text:
        return text, ""
    try:
        parse(wide, filename)
    except ConvcanonError as err:
        return None, f"the f64 copy does not parse: {err.message}"
    return wide, ""
