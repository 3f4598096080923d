"""XLA HLO in (`convcanon-opt --input-hlo`): HloModuleProto or HLO text -> StableHLO text.

Production compilers of this kind consume HLO, so we accept it and convert with JAX's own converter
(`jax.extend.mlir.hlo_to_stablehlo`). XLA's parser aborts the process on some bad inputs (a
`Check failed` on `parameter(7)` of a 2-parameter computation, an `LLVM ERROR` on
`get-tuple-element` of a non-tuple), so the conversion runs in a child process: a native abort
there becomes a diagnostic here. Only that child imports JAX.
"""

from __future__ import annotations

import re
import subprocess
import sys

from jaxlib.mlir import ir

from convcanon.child_process import (
    child_env,
    die_with_parent,
    how_it_ended,
    native_failure_message,
    python_argv,
)
from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio import read_input_bytes
from convcanon.hlo.context import make_context, print_module


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _hlo_text_to_proto(text: str) -> bytes:
    try:
        from jax._src.lib import hlo  # pyright: ignore  # JAX's own HLO text parser
    except ImportError:
        raise ConvcanonError(
            "HLO text needs a JAX that can parse it (jax._src.lib.hlo.hlo_module_from_text);"
            " pass a serialized HloModuleProto (.pb) instead"
        ) from None
    try:
        return hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as err:  # XLA raises its own status errors; all mean "bad HLO text"
        # XLA's parser says where: "...:\nwas parsing 5:19: error: <why>\n<the line>\n ^"
        located = re.search(r"^was parsing (\d+):(\d+): error: (.*)$", str(err), re.MULTILINE)
        if located is None:
            raise ConvcanonError(f"cannot parse HLO text: {_first_line(err)}") from None
        line, col = int(located[1]), int(located[2])
        where = SourceLoc("", line, col)
        raise ConvcanonError(f"cannot parse HLO text: {located[3]}", where) from None


_WINDOW_SIZE = re.compile(r"\bwindow=\{(?:[^}]*\s)?size=(\d+(?:x\d+)*)")
_DIM_LABELS = re.compile(r"\bdim_labels=\w+_(\w+)->")
_SHAPE_DIMS = re.compile(r"=\s*\w+\[([\d,]*)\]")


def _instruction_loc(text: str | None, name: str) -> SourceLoc | None:
    """Where HLO text defines instruction `name` (None for a proto, or when not found)."""
    if text is None:
        return None
    pattern = rf"^[ \t]*(?:ROOT[ \t]+)?%?({re.escape(name)})[ \t]*="
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        return None
    line = text.count("\n", 0, match.start(1)) + 1
    return SourceLoc("", line, match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1) + 1)


def check_convolution_windows(module: object, text: str | None) -> None:
    """Refuse a convolution whose `window={size=...}` is not its kernel's spatial shape.

    XLA's shape inference refuses such HLO, but its text parser and the StableHLO converter do
    not run it, and StableHLO has no window size: the converter would silently drop it.
    """
    for computation in module.computations():  # pyright: ignore[reportAttributeAccessIssue]
        for instruction in computation.instructions():
            if instruction.opcode.name != "kConvolution":
                continue
            printed = instruction.to_string()
            name = instruction.name
            labels = _DIM_LABELS.search(printed)
            kernel = _SHAPE_DIMS.search(instruction.operands()[1].to_string())
            if labels is None or kernel is None:
                continue  # the converter refuses these itself
            dims = [int(d) for d in kernel[1].split(",") if d]
            spatial = sorted((c, i) for i, c in enumerate(labels[1]) if c.isdigit())
            expected = [dims[i] for _, i in spatial if i < len(dims)]
            window = _WINDOW_SIZE.search(printed)
            size = [int(d) for d in window[1].split("x")] if window else []
            if size != expected:
                written = f"window={{size={window[1]}}}" if window else "no window size"
                shape = "x".join(map(str, expected)) or "none"
                raise ConvcanonError(
                    f"convolution %{name}: {written} does not match its kernel's spatial "
                    f"dims ({shape}); XLA's shape check refuses it",
                    _instruction_loc(text, name),
                )


def hlo_to_bytecode(data: bytes) -> bytes:
    """HloModuleProto (or HLO text) -> StableHLO bytecode. May abort: run it in a child."""
    try:
        from jax._src.lib import hlo  # pyright: ignore
        from jax.extend.mlir import hlo_to_stablehlo
    except ImportError:
        raise ConvcanonError("--input-hlo needs JAX (pip install 'convcanon[xla]')") from None
    text: str | None = None
    if data.lstrip().startswith(b"HloModule"):
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise ConvcanonError("HLO text is not UTF-8") from None
        data = _hlo_text_to_proto(text)
    # past XLA's text parser, a failure is of the module it read, not of a proto's bytes
    refused = "not a valid serialized HloModuleProto" if text is None else "XLA cannot read the HLO"
    try:
        module = hlo.HloModule.from_serialized_hlo_module_proto(data)
    except Exception as err:  # XLA reports malformed protos as generic errors
        raise ConvcanonError(f"{refused}: {_first_line(err)}") from None
    check_convolution_windows(module, text)
    try:
        return hlo_to_stablehlo(data)
    except Exception as err:  # the converter reports malformed protos as generic errors
        raise ConvcanonError(f"{refused}: {_first_line(err)}") from None


_CHILD_LOC = "@at "  # the child's error line: `@at LINE:COL message` when it has a position


def child_main() -> None:
    """The child: HLO on stdin, bytecode on stdout; bad input is one line on stderr, exit 1."""
    die_with_parent()
    data = sys.stdin.buffer.read()
    try:
        bytecode = hlo_to_bytecode(data)
    except ConvcanonError as err:
        where = f"{_CHILD_LOC}{err.loc.line}:{err.loc.col} " if err.loc and err.loc.line else ""
        sys.stderr.write(where + err.message + "\n")
        sys.exit(1)
    sys.stdout.buffer.write(bytecode)
    sys.stdout.flush()


HLO_READER_TIMEOUT = 300.0  # seconds; XLA reads a large HLO module in a few


def hlo_bytes_to_bytecode_isolated(data: bytes, filename: str) -> bytes:
    """Convert in a child process; a crash or abort there is `filename: error: ...` here."""
    try:
        child = subprocess.run(
            python_argv("from convcanon.hlo.hlo_import import child_main; child_main()"),
            input=data,
            capture_output=True,
            env=child_env(),
            timeout=HLO_READER_TIMEOUT,
        )
    except subprocess.TimeoutExpired:  # the child is killed; a native hang is ours to bound
        raise ConvcanonError(
            f"XLA's HLO reader did not finish in {HLO_READER_TIMEOUT:g} s", SourceLoc(filename)
        ) from None
    stderr = child.stderr.decode(errors="replace")
    if child.returncode == 0:
        return child.stdout
    if child.returncode == 1:
        lines = [line for line in stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else "cannot convert the HLO"
        located = re.fullmatch(rf"{_CHILD_LOC}(\d+):(\d+) (.*)", message)
        if located is None:
            raise ConvcanonError(message, SourceLoc(filename))
        line, col = int(located[1]), int(located[2])
        raise ConvcanonError(located[3], SourceLoc(filename, line, col))
    raise ConvcanonError(
        f"XLA's HLO reader {how_it_ended(child.returncode)}: {native_failure_message(stderr)}",
        SourceLoc(filename),
    )


def hlo_bytes_to_module(data: bytes, filename: str, context: ir.Context) -> ir.Module:
    """Convert an HloModuleProto (or HLO text) to a StableHLO module in `context`."""
    bytecode = hlo_bytes_to_bytecode_isolated(data, filename)
    try:
        return ir.Module.parse(bytecode, context)
    except ir.MLIRError as err:  # StableHLO's verifier checks what XLA's HLO reader does not
        raise _converted_error(err, data, filename) from None


def _converted_error(err: ir.MLIRError, data: bytes, filename: str) -> ConvcanonError:
    """One line at the HLO instruction the converted op came from (its name is the op's
    location), when the HLO is text."""
    from convcanon.hlo.context import error_from_mlir

    error = error_from_mlir(err, filename, "the converted module does not verify")
    diagnostics = list(err.error_diagnostics)
    named = re.match(r'loc\("([^"]+)"', str(diagnostics[0].location)) if diagnostics else None
    if named is None:
        return ConvcanonError(error.message, SourceLoc(filename))
    text = data.decode(errors="replace") if data.lstrip().startswith(b"HloModule") else None
    where = _instruction_loc(text, named[1])
    loc = SourceLoc(filename, where.line, where.col) if where else SourceLoc(filename)
    return ConvcanonError(f"instruction %{named[1]}: {error.message}", loc)


def hlo_file_to_stablehlo_text(path: str) -> str:
    """Read an HLO file (proto or text, `-` is stdin), bounded, and return StableHLO text."""
    filename, data = read_input_bytes(path)
    return print_module(hlo_bytes_to_module(data, filename, make_context()))
