"""Run the entry functions of an HLO module with `hlo_interp`: the report of each, its `check`
ops counted and any failure located. `convcanon run` (`convcanon.reference.command`) and the
reference engine of `convcanon verify` both call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.npz import holds_raw_bits, input_header
from convcanon.records import NamedTuple


@dataclass
class FunctionReport:
    name: str
    results: list[np.ndarray]
    checks: int
    failures: list[str]


def run_hlo_text(
    text: str,
    filename: str,
    *,
    entry: str | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
    memory_limit: int | None = None,
    line_offset: int = 0,
    max_loop_iterations: int | None = None,
) -> list[FunctionReport]:
    """Parse and run one HLO module; returns a report per entry function that ran."""
    from jaxlib.mlir import ir

    from convcanon.hlo.context import source_loc
    from convcanon.hlo.resources import inline_dense_resources
    from convcanon.ir_kind import with_input_kind_hint
    from convcanon.reference import hlo_interp
    from convcanon.reference.kernels.blas import blas_threads
    from convcanon.reference.parsed import read_only_module

    try:
        text = inline_dense_resources(text, filename)  # the interpreter reads `dense` literals
        module = read_only_module(text, filename)
    except ConvcanonError as err:
        if err.loc is not None and err.loc.line:
            err.loc = SourceLoc(err.loc.file, err.loc.line + line_offset, err.loc.col)
        err.message = with_input_kind_hint(err.message, text, "hlo")
        raise
    env = hlo_interp.Env(memory_limit or hlo_interp.DEFAULT_MEMORY_LIMIT)
    env.max_loop_iterations = max_loop_iterations or hlo_interp.DEFAULT_MAX_LOOP_ITERATIONS
    env.ordered = "check.expect_" in text  # conformance tests: the reference's rounding order
    interp = hlo_interp.Interpreter(module, filename, line_offset, env)
    names = _entries(interp, entry, filename)
    reports = []

    for name in names:
        func = interp.functions[name]
        if not func.regions[0].blocks:
            where = interp.loc(func)
            raise ConvcanonError(f"@{name} is a declaration: it has no body to run", where)
        refuse_tuples(name, func, interp.loc(func))
        block_args = func.regions[0].blocks[0].arguments
        arg_types = [hlo_interp.tensor_type(a.type, interp.loc(func)) for a in block_args]
        places = _Places(
            interp.loc(func), [source_loc(a.location, filename, line_offset) for a in block_args]
        )
        args = _bind_inputs(name, arg_types, inputs or {}, places, len(names) > 1)
        before = len(env.checks)
        with ir.Location.unknown(module.context), blas_threads():
            results = interp.call(name, args)
        ran = env.checks[before:]
        failures = [f"{c.loc}: error: {c.detail}" for c in ran if not c.ok]
        reports.append(FunctionReport(name, results, len(ran), failures))
    return reports


def _entries(interp: object, entry: str | None, filename: str) -> list[str]:
    from convcanon.reference.hlo_interp import Interpreter

    assert isinstance(interp, Interpreter)
    if entry is not None:
        if entry not in interp.functions:
            known = ", ".join(sorted(interp.functions)) or "none"
            raise ConvcanonError(f"no function @{entry} (functions: {known})", SourceLoc(filename))
        return [entry]
    if "main" in interp.functions:
        return ["main"]
    names = [
        name
        for name, func in interp.functions.items()
        if "sym_visibility" not in func.attributes and not list(func.regions[0].blocks[0].arguments)
    ]
    if not names:
        raise ConvcanonError(
            "no @main and no public function without arguments to run (use --entry)",
            SourceLoc(filename),
        )
    return names


def refuse_tuples(name: str, function: Any, loc: SourceLoc) -> None:
    """An entry that takes or returns a tuple is refused at the entry: inputs (npz arrays,
    random draws) and results (compared, summarised, written to npz) are tensors. A tuple
    argument ended in a KeyError traceback, a tuple result in an AttributeError (verify) or
    printed as one stacked array (run)."""
    from jaxlib.mlir import ir

    signature = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    for what, types in (("argument", signature.inputs), ("result", signature.results)):
        for index, t in enumerate(types):
            if isinstance(t, ir.TupleType):
                raise ConvcanonError(
                    f"@{name} {what} {index} is a tuple ({t}): entries are run on tensor"
                    " arguments and results only",
                    loc,
                )


class _Places(NamedTuple):
    """Where an input that does not fit the entry is reported: the entry, and each argument."""

    entry: SourceLoc
    args: list[SourceLoc]


def _bind_inputs(
    name: str,
    arg_types: list,
    inputs: Mapping[str, np.ndarray],
    places: _Places,
    several: bool,
) -> list[np.ndarray]:
    """Match npz arrays arg0..argN to the entry's arguments: names, then every shape and dtype
    (from the npz headers), are checked before any array is inflated. A wrong set of names is
    an error at the entry, a wrong array at the argument it was given for."""
    from convcanon.reference.hlo_interp import normalize

    where = places.entry
    if several and inputs:
        raise ConvcanonError("--inputs needs a single entry function (use --entry)", where)
    check_input_names(f"@{name} takes {len(arg_types)} argument(s)", len(arg_types), inputs, where)
    for i, tt in enumerate(arg_types):
        shape, dtype = input_header(inputs, f"arg{i}")
        viewable = holds_raw_bits(dtype, tt.dtype)
        if shape != tt.shape or (dtype != tt.dtype and not viewable):
            raise ConvcanonError(
                f"input arg{i} is {dtype}{list(shape)} but @{name} expects "
                f"{tt.element}{list(tt.shape)}",
                places.args[i] if places.args[i].line else where,
            )
    args = []
    for i, tt in enumerate(arg_types):
        value = inputs[f"arg{i}"]
        if value.dtype != tt.dtype:
            value = value.view(tt.dtype)
        args.append(normalize(value, tt))
    return args


def check_input_names(
    takes: str, count: int, inputs: Mapping[str, np.ndarray], where: SourceLoc
) -> None:
    """The inputs must be exactly arg0..arg{count-1}; `takes` opens the message."""
    expected = {f"arg{i}" for i in range(count)}
    missing = sorted(expected - set(inputs), key=lambda k: int(k[3:]))
    extra = sorted(set(inputs) - expected)
    if missing:
        raise ConvcanonError(f"{takes}; missing input(s) {', '.join(missing)}", where)
    if extra:
        raise ConvcanonError(f"{takes}; unexpected input(s) {', '.join(extra)}", where)
