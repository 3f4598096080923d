"""MLIR's own passes that jaxlib registers (`canonicalize`, `cse`, `symbol-dce`, `inline`, ...),
and StableHLO's, CHLO's and MHLO's (`chlo-legalize-to-stablehlo`, `stablehlo-legalize-to-hlo`),
run in a `convcanon-opt` pipeline beside ours through jaxlib's `PassManager`.

The bindings cannot list the registered passes, so `--list-passes` shows those of
`pipeline.UPSTREAM_PASSES` this jaxlib accepts, and any other name its pipeline parser takes
runs all the same. That parser reports a bad option value on the
process's stderr, not in the exception: it is caught there and put in the usage error.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping

from jaxlib.mlir import passmanager

from convcanon.diagnostics import UsageError
from convcanon.hlo.context import error_from_mlir, ir, make_context, register_hlo_passes
from convcanon.hlo.inline import inline_module
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
    `func.func(cse)`, StableHLO's and MHLO's passes); a pass restricted to an op nested in the
    module (`chlo-legalize-to-stablehlo`, on functions) runs on each such op, as mlir-opt's
    implicit nesting runs it. An item jaxlib does not know is a usage error with its parser's
    words."""
    register_hlo_passes()
    with context:
        with _stderr_captured() as native:
            try:
                return _checked(item, passmanager.PassManager.parse(f"builtin.module({item})"))
            except ValueError as err:
                error = err
        message = str(error)
        anchor = _nested_anchor(item, message)
        if anchor is not None:  # nested as mlir-opt nests it: its complaint is no longer true
            message = _NEST_ADVICE.sub("", message)
            with _stderr_captured(), contextlib.suppress(ValueError):  # the same words again
                nested = f"builtin.module({anchor}({item}))"
                return _checked(item, passmanager.PassManager.parse(nested))
    words = " ".join(" ".join([_LLVM_PROGRAM.sub("", native[0]), message]).split())
    words = words.replace("MLIR Textual PassPipeline Parser:1:1: error: ", "").lstrip(": ")
    raise UsageError(f"pass '{item}': {words}")


# LLVM's option parser starts its complaint with the program's name, which is "xla: " once
# XLA has parsed its flags in this process (after a `verify` or a `from_jax`), else empty.
_LLVM_PROGRAM = re.compile(r"^[^\s:]*: (?=for the )", re.MULTILINE)


# `target=X.Y.Z` of vhlo-to-version and stablehlo-compatibility-expander: StableHLO checks the
# form, then reads each number as an int64 and aborts the process (`LLVM ERROR: failed to parse
# version number`) on one past it.
_VERSION_OPTION = re.compile(r"\btarget=(\d+)\.(\d+)\.(\d+)(?![\w.])")


def _checked(item: str, manager: passmanager.PassManager) -> passmanager.PassManager:
    """The manager, unless an option value would abort the process when its pass runs: refused
    as LLVM's option parser refuses an integer out of range."""
    for found in _VERSION_OPTION.finditer(str(manager)):
        past = [number for number in found.groups() if int(number) >= 1 << 63]
        if past:
            raise UsageError(
                f"pass '{item}': {found[0]}: version number {past[0]} does not fit in int64"
            )
    return manager


_NEST_ADVICE = re.compile(
    r"Can't add pass '[^'\n]*' restricted to '[^'\n]*' on a PassManager intended to run on"
    r" '[^'\n]*', did you intend to nest\?"
)


def _nested_anchor(item: str, error: str) -> str | None:
    """The op a single pass (not a nested pipeline) is restricted to, when the pass manager
    refused it on the module for that reason."""
    if "(" in item.partition("{")[0]:
        return None
    found = re.search(r"restricted to '([\w.$-]+)' on a PassManager intended to run on", error)
    return None if found is None or found[1] == "builtin.module" else found[1]


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


_INLINE_DEFAULTS = {"inlining-threshold": "4294967295", "op-pipelines": ""}


def run_inline(hlo_file: HloFile, options: Mapping[str, OptionValue]) -> None:
    """`inline`, as MLIR's inliner pass runs it (jaxlib's inlines nothing: see
    `convcanon.hlo.inline`): the calls inlined, the private functions left unused erased, then
    its `default-pipeline` (`canonicalize`) run on every function. Its options are read as
    jaxlib's pass parses them; a threshold or per-op pipelines other than the defaults are
    refused, since this inliner has neither."""
    printed = str(options["pipeline"])
    settings = dict(re.findall(r"([\w-]+)=((?:\{[^{}]*\}|[^\s{}])*)", printed.partition("{")[2]))
    for name, default in _INLINE_DEFAULTS.items():
        if settings.get(name, default) != default:
            raise UsageError(f"inline: {name}={settings[name]} is not supported (only {default!r})")
    module = hlo_file.module
    default = settings.get("default-pipeline", "canonicalize")
    manager = None
    if default:
        with module.context:
            manager = passmanager.PassManager.parse(f"func.func({default})")
        manager.enable_verifier(VERIFY_EACH.get())

    def optimized(function: ir.Operation) -> None:
        if manager is not None:
            try:
                manager.run(function)
            except ir.MLIRError as err:
                raise error_from_mlir(err, hlo_file.filename, "pass failed") from None

    with module.context, ir.Location.unknown():
        inline_module(module, hlo_file.filename, optimized)
