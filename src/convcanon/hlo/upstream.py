"""MLIR's own passes that jaxlib registers (`canonicalize`, `cse`, `symbol-dce`, `inline`, ...),
run in a `convcanon-opt` pipeline beside ours through jaxlib's `PassManager`.

jaxlib registers MLIR's Transforms passes (and a few of its own); the bindings cannot list them,
so `--list-passes` shows those of `pipeline.UPSTREAM_PASSES` this jaxlib accepts, and any other
name its pipeline parser takes runs all the same. That parser reports a bad option value on the
process's stderr, not in the exception: it is caught there and put in the usage error.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping

from jaxlib.mlir import passmanager

from convcanon.diagnostics import UsageError
from convcanon.hlo.context import error_from_mlir, ir, make_context
from convcanon.hlo.io import HloFile
from convcanon.ir_kind import VERIFY_EACH
from convcanon.options import OptionValue


@contextlib.contextmanager
def _stderr_captured() -> Iterator[list[str]]:
    """What native code writes to file descriptor 2 meanwhile, as text (LLVM's option parser
    writes there)."""
    captured: list[str] = []
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode(errors="replace"))


def pass_manager(item: str, context: ir.Context) -> passmanager.PassManager:
    """jaxlib's pass manager for one pipeline item (`cse`, `canonicalize{max-iterations=2}`,
    `func.func(cse)`); an item it does not know is a usage error with its parser's words."""
    with context, _stderr_captured() as native:
        try:
            return passmanager.PassManager.parse(f"builtin.module({item})")
        except ValueError as err:
            error = err
    words = " ".join(" ".join([native[0], str(error)]).split())
    words = words.replace("MLIR Textual PassPipeline Parser:1:1: error: ", "").lstrip(": ")
    raise UsageError(f"pass '{item}': {words}")


def textual(item: str) -> str:
    """The item as the pass manager prints it: every option with its value."""
    printed = str(pass_manager(item, make_context()))
    return printed.removeprefix("builtin.module(").removesuffix(")")


def accepted(names: Iterable[str]) -> dict[str, str]:
    """Those of `names` this jaxlib registers, each as the pass manager prints it."""
    found = {}
    for name in names:
        with contextlib.suppress(UsageError):
            found[name] = textual(name)
    return found


def run_upstream(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> None:
    """Run one pipeline item of upstream passes on the module; its diagnostics are ours."""
    module = hlo_file.module
    manager = pass_manager(str(options["pipeline"]), module.context)
    manager.enable_verifier(VERIFY_EACH.get())
    try:
        manager.run(module.operation)
    except ir.MLIRError as err:
        raise error_from_mlir(err, hlo_file.filename, "pass failed") from None
