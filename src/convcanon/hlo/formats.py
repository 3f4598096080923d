"""The binary interchange formats of an HLO module, in and out: MLIR bytecode (any producer), the
StableHLO portable artifact (VHLO bytecode, what jax.export and `stablehlo-translate
--serialize` write) and XLA's HLO (text or HloModuleProto).

Reading binary input runs in a child process (`read_child`, started by `convcanon.fileio`): MLIR's
bytecode reader and StableHLO's deserializer read hostile bytes, and a native abort there must
be a diagnostic, not the end of the command. Writing HLO runs XLA's converter, which aborts on
some modules it accepts, in a child too (`hlo_child`).
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.module_input import run_in_child
from convcanon.hlo.context import ir, print_module, source_loc
from convcanon.hlo.io import HloFile, reading_context

# A portable artifact's bytecode names its producer `StableHLO_vX.Y.Z` after the magic and the
# bytecode version (one varint byte in every version so far).
_ARTIFACT_PRODUCER = re.compile(rb"ML\xefR[\x00-\x7f]StableHLO_v(\d+\.\d+\.\d+)\x00")
_VERSION = re.compile(r"\d+\.\d+\.\d+")


def artifact_version(data: bytes) -> str | None:
    """The StableHLO version a portable artifact was written for, or None for other bytecode."""
    match = _ARTIFACT_PRODUCER.match(data)
    return match[1].decode() if match else None


@contextmanager
def _collected(context: ir.Context, filename: str) -> Iterator[list[ConvcanonError]]:
    """MLIR diagnostics emitted inside, as located errors (not printed to stderr)."""
    found: list[ConvcanonError] = []

    def handle(diagnostic: ir.Diagnostic) -> bool:
        message = str(diagnostic.message).split(" that was explicitly marked illegal", 1)[0]
        message = message.split(" (see current operation:", 1)[0].strip().splitlines()[0]
        found.append(ConvcanonError(message, source_loc(diagnostic.location, filename)))
        return True

    handler = context.attach_diagnostic_handler(handle)
    try:
        yield found
    finally:
        handler.detach()  # pyright: ignore[reportAttributeAccessIssue]


def bytecode_to_module(data: bytes, filename: str, context: ir.Context) -> ir.Module:
    """An MLIR bytecode file (a portable artifact is deserialized to StableHLO) as a module."""
    version = artifact_version(data)
    with _collected(context, filename) as errors:
        try:
            if version is not None:
                from jaxlib.mlir.dialects import stablehlo

                return stablehlo.deserialize_portable_artifact(context, data)
            return ir.Module.parse(data, context)
        except (ir.MLIRError, ValueError) as err:
            what = f"StableHLO {version} portable artifact" if version else "MLIR bytecode"
            reported = list(getattr(err, "error_diagnostics", ()))
            if reported:
                detail = str(reported[0].message).strip().splitlines()[0]
            elif errors:
                detail = errors[0].message
            else:
                detail = str(err).strip().splitlines()[0] if str(err).strip() else "no reason given"
            raise ConvcanonError(f"cannot read the {what}: {detail}", SourceLoc(filename)) from None


def read_child() -> None:
    """The child that reads binary input: bytecode on stdin, the file's name and `text` or
    `bytecode` as its arguments; on stdout the module as text (with its locations), or for
    `bytecode` an artifact deserialized to plain bytecode (nothing for other bytecode, which
    read without failing). Bad input is one line on stderr, exit 1."""
    from convcanon.child_process import die_with_parent

    die_with_parent()
    data = sys.stdin.buffer.read()
    try:
        module = bytecode_to_module(data, sys.argv[1], reading_context())
        if sys.argv[2] == "text":
            out = print_module(module, debug_info=True).encode()
        else:
            sys.stderr.write(NESTS_TOO_DEEP + "\n")  # the message if the check kills this child
            sys.stderr.flush()
            written = bytecode_on_a_small_stack(module)
            if written is None:
                raise ConvcanonError("MLIR's bytecode writer failed", SourceLoc(sys.argv[1]))
            out = written if artifact_version(data) else b""
    except ConvcanonError as err:
        sys.stderr.write(err.folded_message() + "\n")
        sys.exit(1)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()


NESTS_TOO_DEEP = (
    "a type, attribute, location or region of the module nests deeper than this command handles"
)
SMALL_STACK_SHARE = 8  # the nesting check's stack is this process's stack divided by this


def bytecode_on_a_small_stack(module: ir.Module) -> bytes | None:
    """`module_bytecode`, written on a thread with an eighth of this process's stack: the check
    that a module read from bytecode nests no deeper than the command can print or write.

    MLIR's printer and bytecode writer recurse once per level of a type, attribute, location
    or region, and bytecode holds a 20k-deep nest in a few hundred KB, where the command
    would die of a stack overflow. The writer walks all that the printer prints, with smaller
    frames: on an eighth of the stack it stops at 1k-6k levels, the printer on the whole one
    at 8k-20k (bench/RESULTS_reader.md), so what this lets through is at least 2.5x within
    what the command's printer and writer take; real modules nest a few dozen levels. A print
    did this check before, at the cost of the whole module printed (~0.7 s at 100k ops)."""
    import resource
    import threading

    limit = resource.getrlimit(resource.RLIMIT_STACK)[0]
    whole = DEFAULT_STACK if limit == resource.RLIM_INFINITY else min(limit, DEFAULT_STACK)
    written: list[bytes] = []
    previous = threading.stack_size(max(whole // SMALL_STACK_SHARE, 1 << 16))
    try:
        writer = threading.Thread(target=lambda: written.append(module_bytecode(module)))
        writer.start()
    finally:
        threading.stack_size(previous)
    writer.join()
    return written[0] if written else None  # None: the writer raised (its thread printed why)


DEFAULT_STACK = 8 << 20  # Linux's default stack: of a process's main thread and of a thread


def module_bytecode(module: ir.Module, version: int | None = None, filename: str = "-") -> bytes:
    """The module as MLIR bytecode, as `mlir-opt --emit-bytecode` writes it: in the current
    bytecode version, or `version` (`--emit-bytecode-version`; the writer refuses one it
    cannot write, or one too old for the module, as mlir-opt reports it)."""
    buffer = io.BytesIO()
    if version is None:
        module.operation.write_bytecode(buffer)
        return buffer.getvalue()
    with _collected(module.context, filename) as errors:
        try:
            module.operation.write_bytecode(buffer, desired_version=version)
        except ValueError as err:
            raise (errors[0] if errors else ConvcanonError(str(err), SourceLoc(filename))) from None
    return buffer.getvalue()


def check_target_version(target: str) -> str:
    """`X.Y.Z` between StableHLO's minimum and current versions (a usage error otherwise)."""
    from jaxlib.mlir.dialects import stablehlo

    from convcanon.diagnostics import UsageError

    low, high = stablehlo.get_minimum_version(), stablehlo.get_current_version()
    key = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
    if not _VERSION.fullmatch(target) or not key(low) <= key(target) <= key(high):
        raise UsageError(
            f"--target-version must be a StableHLO version X.Y.Z from {low} to {high}"
            f" (this jaxlib's), not {target!r}"
        )
    return target


def portable_artifact(module: ir.Module, target: str, filename: str) -> bytes:
    """The module as a StableHLO portable artifact for `target`. A module that version cannot
    express (an op, type or attribute added after it) is an error, never another program.
    Serializing rewrites the module to VHLO in place: it is the last use of `module`."""
    from jaxlib.mlir.dialects import stablehlo

    others = _other_dialect_ops(module)
    foreign = [op for op in others if not op.name.startswith("sdy.")]
    if foreign:  # the serializer would keep them as they are: an artifact no consumer can read
        kinds = ", ".join(sorted({op.name for op in foreign}))
        raise ConvcanonError(
            f"a StableHLO portable artifact holds StableHLO ops (and Shardy's sdy ones); this"
            f" module also has {kinds}",
            source_loc(foreign[0].location, filename),
        )
    with _collected(module.context, filename) as errors, module.context:
        try:
            return stablehlo.serialize_portable_artifact(
                module, target, allow_other_dialects=bool(others)
            )
        except ValueError:
            first = errors[0] if errors else ConvcanonError("no reason given", SourceLoc(filename))
            raise ConvcanonError(
                f"StableHLO {target} cannot express this module: it uses an op, type or"
                f" attribute added after {target} ({first.message})",
                first.loc,
            ) from None


def _other_dialect_ops(module: ir.Module) -> list[ir.Operation]:
    """The ops of dialects besides builtin, func and StableHLO, in pre-order (Shardy's `sdy`
    ones are kept in an artifact, as jax.export keeps them)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.partition(".")[0] not in ("builtin", "func", "stablehlo"):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


HLO_WRITER_TIMEOUT = 300.0  # seconds; it writes a module this command read and checked


def emit(hlo_file: HloFile, kind: str, target: str = "") -> bytes:
    """The module in a binary output format: `bytecode`, `artifact` (for StableHLO `target`),
    `hlo-text` or `hlo-proto` (XLA's converter, in a child process)."""
    if kind == "bytecode":
        return module_bytecode(hlo_file.module, int(target) if target else None, hlo_file.filename)
    if kind == "artifact":
        return portable_artifact(hlo_file.module, target, hlo_file.filename)
    call = "from convcanon.hlo.formats import hlo_child; hlo_child()"
    bytecode = module_bytecode(hlo_file.module)
    return run_in_child(
        call,
        kind.removeprefix("hlo-"),
        bytecode,
        hlo_file.filename,
        "XLA's HLO writer",
        HLO_WRITER_TIMEOUT,
    )


def hlo_child() -> None:
    """The child that writes HLO: MLIR bytecode on stdin, `text` or `proto` as its argument,
    XLA's HLO on stdout; a module XLA refuses is one line on stderr, exit 1."""
    from convcanon.child_process import die_with_parent

    die_with_parent()
    data = sys.stdin.buffer.read()
    try:
        from jaxlib import _jax  # pyright: ignore[reportAttributeAccessIssue]

        computation = _jax.mlir.mlir_module_to_xla_computation(data)
        if sys.argv[2] == "text":
            out = computation.as_hlo_text().encode()
        else:
            out = computation.as_serialized_hlo_module_proto()
    except Exception as err:  # XLA reports a module it cannot convert as a runtime error
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        sys.stderr.write(message + "\n")
        sys.exit(1)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
