"""Parse and print half-B files: builtin, func, arith, migraphx and the TOSA ops we emit.

`parse_file_text` and `print_file` are the `convcanon-opt` framework adapter for half B (see
convcanon.driver). The context that loads both dialects lives here, above them, so neither
dialect imports the other.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import ModuleOp

from convcanon.fileio.text_checks import check_unicode
from convcanon.ir_kind import UNREGISTERED_DIALECTS, holds_no_op
from convcanon.migraphx.io import parse_in_context, print_file

__all__ = ["make_context", "parse_file_text", "print_file"]


def make_context() -> Context:
    """builtin, func, arith, migraphx and the TOSA ops we emit."""
    from convcanon.migraphx.dialect import Migraphx
    from convcanon.tosa.ops import TOSA
    from convcanon.tosa.quant_ops import TOSA_QUANT_OPS

    ctx = Context(allow_unregistered=UNREGISTERED_DIALECTS.get())
    for dialect in (builtin.Builtin, func.Func, arith.Arith, Migraphx, TOSA):
        ctx.load_dialect(dialect)
    for op in TOSA_QUANT_OPS:
        if ctx.get_optional_op(op.name) is None:  # the TOSA dialect may define it already
            ctx.load_op(op)
    return ctx


def parse_file_text(text: str, filename: str) -> ModuleOp:
    """Parse and verify a half-B module; any failure is a ConvcanonError at its location."""
    check_unicode(text, filename)
    if holds_no_op(text):
        return ModuleOp([])
    return parse_in_context(make_context(), text, filename)
