"""Python API of half B: import a MIGraphX program, lower it to TOSA, print either module.

The same code paths as `convcanon import-migraphx` and `convcanon-opt -p migraphx-to-tosa`, for
callers who already hold the program text: bad input is a `ConvcanonError` carrying
`file:line:col`, an argument of the wrong type a `TypeError` naming the expected one, never a
traceback from inside xDSL.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from convcanon.diagnostics import check_argument
from convcanon.options import keyword_options
from convcanon.pipeline import PASSES, PassStats


def import_program(text: str, *, filename: str = "<program>", name: str = "main") -> ModuleOp:
    """A printed MIGraphX program as a module with one `func.func @name` whose
    arguments and results are `!migraphx.shaped` flat buffers, params in order of appearance.

    Raises ConvcanonError naming `filename`, the program line and column on bad input.
    """
    from convcanon.migraphx.importer import import_program as translate

    for argument, value in (("text", text), ("filename", filename), ("name", name)):
        check_argument("import_program", argument, value, str)
    return translate(text, filename, name)


def lower_to_tosa(module: ModuleOp, *, stats: PassStats | None = None, **options: Any) -> ModuleOp:
    """`module` lowered by `migraphx-to-tosa` (flat `tensor<NxT>` boundary, TOSA 1.0 inside).

    `module` itself is left untouched (a clone is lowered), so it can still be run or printed.
    Pass `stats` to collect the pass's counters (ops lowered, TOSA ops emitted). Options are the
    pass options (`types="native"`), checked as the pipeline checks them (`UsageError`). Raises
    ConvcanonError, located at the op when its source location is known, if any op cannot lower.
    """
    from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa

    check_argument("lower_to_tosa", "module", module, ModuleOp)
    check_argument("lower_to_tosa", "stats", stats, (PassStats, type(None)))
    info = PASSES["migraphx-to-tosa"]
    resolved = keyword_options(info.name, info.options, options)
    lowered = module.clone()
    counters = migraphx_to_tosa(lowered, resolved)
    if stats is not None:
        for key, value in counters.counters.items():
            stats.bump(key, value)
    return lowered


def print_module(module: ModuleOp) -> str:
    """The module as MLIR text, exactly as `convcanon-opt` prints it (parses back identically;
    TOSA output is accepted by iree-opt and IREE's compiler)."""
    from convcanon.migraphx.io import print_file

    check_argument("print_module", "module", module, ModuleOp)
    return print_file(module)


def parse_module(text: str, *, filename: str = "<module>") -> ModuleOp:
    """Parse and verify migraphx/TOSA MLIR text (ConvcanonError at `file:line:col` if bad)."""
    from convcanon.xdsl_io import parse_file_text

    check_argument("parse_module", "text", text, str)
    check_argument("parse_module", "filename", filename, str)
    return parse_file_text(text, filename)
