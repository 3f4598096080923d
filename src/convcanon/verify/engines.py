"""Engines that execute a module on given inputs: our numpy reference, XLA (JAX CPU), IREE.

XLA and IREE are optional extras; asking for one that is not installed is a clear error naming the
package, not a traceback. Each engine returns the entry function's results as numpy arrays.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc

Engine = Callable[[str, str, str, Sequence[np.ndarray]], list[np.ndarray]]


def reference_engine(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Our numpy HLO interpreter."""
    from convcanon.reference.run import run_hlo_text

    feed = {f"arg{i}": x for i, x in enumerate(inputs)}

    (report,) = run_hlo_text(text, filename, entry=entry, inputs=feed)
    return report.results


def _require(module: str, engine: str, package: str) -> None:
    """Found without importing it: the XLA engine imports JAX only in its child process."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConvcanonError(
            f"engine '{engine}' needs the optional package {package}, which is not installed: "
            f"pip install 'convcanon[{engine}]'"
        )


def _make_public(func: Any) -> None:
    """A function without `sym_visibility` is public (MLIR's default; the bindings'
    `set_visibility` refuses an op that has none)."""
    attributes = func.attributes
    if "sym_visibility" in attributes:
        del attributes["sym_visibility"]


@lru_cache(maxsize=8)
def entry_as_main(text: str, filename: str, entry: str) -> str:
    """The module with `entry` renamed to a public @main (XLA runs @main only); a @main it
    already has is renamed out of the way, calls follow both renames."""
    if entry == "main":
        return text
    from jaxlib.mlir import ir

    from convcanon.hlo.context import parse_module, print_module

    module = parse_module(text, filename)
    names = {
        ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
        for op in module.body.operations
        if op.operation.name == "func.func"
    }
    with module.context:
        if "main" in names:
            spare = next(f"main_{i}" for i in range(len(names) + 1) if f"main_{i}" not in names)
            ir.SymbolTable.replace_all_symbol_uses("main", spare, module.operation)
            ir.SymbolTable.set_symbol_name(names["main"], spare)
        ir.SymbolTable.replace_all_symbol_uses(entry, "main", module.operation)
        ir.SymbolTable.set_symbol_name(names[entry], "main")
        _make_public(names[entry])
    return print_module(module, debug_info=True)


def xla_engine(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """XLA's CPU backend via JAX's client, on exactly this module, in a child process (XLA
    aborts the process on some modules MLIR verifies). Sub-byte integers go in as their own
    types and come back in the byte the interpreter keeps them in (`as_declared`)."""
    _require("jax", "xla", "jax")
    from convcanon.verify.engine_process import run_xla

    results = run_xla(
        entry_as_main(text, filename, entry), as_declared(text, filename, entry, inputs), filename
    )
    return [_in_a_byte(r) for r in results]


def as_declared(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """`inputs` with each sub-byte integer argument (kept in a byte) cast to its declared type:
    XLA refused the module's i4 arguments given int8 buffers (RuntimeProgramInputMismatch), and
    IREE its si8 buffer views (IREE packs them, see `iree_buffers`)."""
    from convcanon.verify.signature import module_signature

    if re.search(r"[x<]u?i[24]>", text) is None:  # no sub-byte tensor: nothing to read
        return list(inputs)
    args = module_signature(text, filename, entry).args
    return [x.astype(tt.declared_dtype) for x, tt in zip(inputs, args, strict=True)]


def _in_a_byte(result: np.ndarray) -> np.ndarray:
    """A sub-byte integer result in the byte the interpreter keeps it in, so both engines'
    results compare; others unchanged."""
    from convcanon.verify.judge import is_narrow_int

    if not is_narrow_int(result.dtype):
        return result
    return result.astype(np.uint8 if result.dtype.name.startswith("uint") else np.int8)


def iree_engine(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """iree-base-compiler (StableHLO input, llvm-cpu) then iree-base-runtime (local-task, in a
    child process); MHLO is legalized to StableHLO first."""
    _require("iree.compiler", "iree", "iree-base-compiler")
    _require("iree.runtime", "iree", "iree-base-runtime")
    from convcanon.verify.engine_process import run_iree

    source = iree_input_text(text, filename, entry)
    vmfb = _iree_compile(source, filename, source == text)  # an lru_cache hit is not `text`
    return run_iree(vmfb, entry, as_declared(text, filename, entry, inputs), filename, "local-task")


@lru_cache(maxsize=8)
def iree_input_text(text: str, filename: str, entry: str) -> str:
    """What IREE's StableHLO input accepts: MHLO legalized to StableHLO (IREE has no MHLO
    dialect), and `entry` public (IREE exports only public functions)."""
    from jaxlib.mlir import ir

    from convcanon.hlo.context import parse_module, print_module
    from convcanon.hlo.legalize import to_stablehlo

    module = parse_module(text, filename)
    changed = False
    for op in module.body.operations:
        attributes = op.operation.attributes
        if (
            op.operation.name == "func.func"
            and ir.StringAttr(attributes["sym_name"]).value == entry
            and "sym_visibility" in attributes
        ):
            _make_public(op.operation)
            changed = True
    if "mhlo." in text:
        try:
            to_stablehlo(module)
        except ir.MLIRError as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else "failed"
            raise ConvcanonError(
                f"cannot legalize MHLO to StableHLO for IREE: {first}", SourceLoc(filename)
            ) from None
        changed = True
    return print_module(module, debug_info=True) if changed else text


@lru_cache(maxsize=8)
def _iree_compile(text: str, filename: str, is_the_file: bool) -> bytes:
    """Compile once per module text: trials reuse the flatbuffer (compiling takes seconds).
    IREE reads the text from its stdin; its messages are placed in the user's file by
    `placement` (where the text is the file's own, `<stdin>:L:C` is the file's line and
    column; in a reprinted file ops keep their places in it, `-:L:C`)."""
    import iree.compiler

    from convcanon.verify.placement import engine_output_placed, place_error

    try:
        with engine_output_placed(filename, is_the_file):
            vmfb = iree.compiler.compile_str(
                text,
                input_type="stablehlo",
                target_backends=["llvm-cpu"],
                # IREE demotes f64 to f32 by default, which changes the signature the inputs meet
                extra_args=[
                    "--iree-llvmcpu-target-cpu=host",
                    "--iree-input-demote-f64-to-f32=false",
                ],
            )
    except iree.compiler.CompilerToolError as err:
        lines = [ln for ln in str(err).splitlines() if "error:" in ln]
        message = lines[0].strip() if lines else "compilation failed"
        error = ConvcanonError(f"IREE rejected the module: {message}")
        raise place_error(error, filename, is_the_file) from None
    assert isinstance(vmfb, bytes)  # compile_str returns the flatbuffer when no output file
    return vmfb


def migraphx_reference_engine(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Half B's numpy interpreter (migraphx and TOSA ops), flat buffers in and out."""
    from convcanon.reference.migraphx_interp import run_module_text

    return run_module_text(text, filename, entry, {f"arg{i}": x for i, x in enumerate(inputs)})[1]


def tosa_iree_engine(
    text: str, filename: str, entry: str, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """IREE (llvm-cpu) on a TOSA module; a migraphx module is lowered by migraphx-to-tosa first."""
    _require("iree.compiler", "iree", "iree-base-compiler")
    _require("iree.runtime", "iree", "iree-base-runtime")
    from convcanon.tosa.storage import pack_inputs, unpack_outputs
    from convcanon.verify.engine_process import run_iree
    from convcanon.verify.iree_tosa import compile_tosa_text, entry_storage

    vmfb = compile_tosa_text(_tosa_text(text, filename, entry), filename)
    ins, outs = entry_storage(vmfb, entry)
    return unpack_outputs(
        run_iree(vmfb, entry, pack_inputs(inputs, ins), filename, "local-sync"), outs
    )


@lru_cache(maxsize=8)
def _tosa_text(text: str, filename: str, entry: str) -> str:
    """The module as TOSA, with `entry` public: IREE drops private functions, so a private
    entry (`--entry NAME`) would leave nothing to run."""
    from xdsl.dialects import func

    from convcanon.migraphx.io import print_file
    from convcanon.verify.half_b import has_migraphx_ops, lowered_text
    from convcanon.xdsl_io import parse_file_text

    module = parse_file_text(text, filename)  # its own: it is changed
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry and op.body.blocks:
            op.sym_visibility = None
    return lowered_text(module) if has_migraphx_ops(module) else print_file(module)


HALF_B_ENGINES: dict[str, Engine] = {
    "reference": migraphx_reference_engine,
    "iree": tosa_iree_engine,
}

ENGINES: dict[str, Engine] = {
    "reference": reference_engine,
    "xla": xla_engine,
    "iree": iree_engine,
}
