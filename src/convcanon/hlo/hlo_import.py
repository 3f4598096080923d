"""XLA HLO in (`convcanon-opt --input-hlo`): HloModuleProto or HLO text -> StableHLO text.

Production compilers of this kind consume HLO, so we accept it and convert with JAX's own converter
(`jax.extend.mlir.hlo_to_stablehlo`). XLA's parser aborts the process on some bad inputs (a
`Check failed` on `parameter(7)` of a 2-parameter computation, an `LLVM ERROR` on
`get-tuple-element` of a non-tuple), so the conversion runs in a child process: a native abort
there becomes a diagnostic here. Only that child imports JAX. A child per chunk of a split file
(`--split-input-file`) paid JAX's start-up (seconds) for each, hours for a file of a few thousand
small modules: one child converts the chunks in turn and answers each as it finishes, so when
XLA aborts on one, the answers before it stand, that chunk gets the abort as its error, and a
new child takes the rest.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable, Sequence

from jaxlib.mlir import ir

from convcanon.child_process import (
    child_env,
    die_with_parent,
    how_it_ended,
    native_failure_message,
    python_argv,
)
from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.reading import read_input_bytes
from convcanon.hlo.context import downcast, error_from_mlir, make_context, print_module


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


# an instruction's definition: `[ROOT] [%]name = ...` at the start of a line
_INSTRUCTION_DEF = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?([\w.\-]+)[ \t]*=", re.MULTILINE)


def instruction_positions(text: str) -> dict[str, tuple[int, int]]:
    """(line, col) of each instruction HLO text defines, by name, in one pass; a name defined
    twice is left out (which definition an op came from is not known)."""
    found: dict[str, tuple[int, int]] = {}
    twice: set[str] = set()
    line, counted = 1, 0
    for match in _INSTRUCTION_DEF.finditer(text):
        start = match.start(1)
        line += text.count("\n", counted, start)
        counted = start
        name = match[1]
        if name in found:
            twice.add(name)
        found[name] = (line, start - text.rfind("\n", 0, start))
    for name in twice:
        del found[name]
    return found


def _instruction_loc(positions: dict[str, tuple[int, int]], name: str) -> SourceLoc | None:
    where = positions.get(name)
    return SourceLoc("", *where) if where else None


def check_convolution_windows(module: object, positions: dict[str, tuple[int, int]]) -> None:
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
                    _instruction_loc(positions, name),
                )


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while shift < 64:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("varint over 64 bits")


def _encoded_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_FIXED_SIZE = {1: 8, 5: 4}  # protobuf wire types 1 (64-bit) and 5 (32-bit)


def _edit_field(message: bytes, number: int, edit: Callable[[bytes], bytes] | None) -> bytes:
    """A protobuf `message` with every length-delimited field `number` replaced by `edit` of
    its payload, or dropped when `edit` is None; every other field is kept byte for byte."""
    out = bytearray()
    pos = 0
    while pos < len(message):
        start = pos
        key, pos = _varint(message, pos)
        wire = key & 7
        if wire == 0:
            _, pos = _varint(message, pos)
        elif wire in _FIXED_SIZE:
            pos += _FIXED_SIZE[wire]
        elif wire == 2:
            key_end = pos
            size, pos = _varint(message, pos)
            body, pos = pos, pos + size
            if key >> 3 == number:
                if edit is not None:
                    payload = edit(message[body:pos])
                    out += message[start:key_end] + _encoded_varint(len(payload)) + payload
                continue
        else:
            raise ValueError(f"protobuf wire type {wire}")
        if pos > len(message):
            raise ValueError("truncated field")
        out += message[start:pos]
    return bytes(out)


# xla/service/hlo.proto: HloModuleProto.computations = 3, HloComputationProto.instructions = 2,
# HloInstructionProto.name = 1 and .metadata = 7, OpMetadata.op_name = 2 (protobuf field numbers
# never change meaning).
_COMPUTATIONS, _INSTRUCTIONS, _NAME, _METADATA, _OP_NAME = 3, 2, 1, 7, 2
# between a metadata op_name and its instruction's name: no HLO name holds it
_TAG = "\x00"


def _last_payload(message: bytes, number: int) -> bytes:
    """The payload of the last length-delimited field `number` of `message` (protobuf's rule
    for a repeated scalar), b"" when it has none."""
    found = [b""]

    def keep(payload: bytes) -> bytes:
        found[0] = payload
        return payload

    _edit_field(message, number, keep)
    return found[0]


def with_instruction_names(proto: bytes) -> bytes | None:
    """The HloModuleProto with each metadata op_name followed by `_TAG` and its instruction's
    name. XLA's converter names an op after its op_name when it has one, else after its
    instruction: tagged, one conversion says both (see `_split_tag`). None when no instruction
    has an op_name."""

    def instruction(data: bytes) -> bytes:
        tag = _TAG.encode() + _last_payload(data, _NAME)

        def metadata(fields: bytes) -> bytes:
            return _edit_field(fields, _OP_NAME, lambda op_name: op_name and op_name + tag)

        return _edit_field(data, _METADATA, metadata)

    def computation(data: bytes) -> bytes:
        return _edit_field(data, _INSTRUCTIONS, instruction)

    try:
        tagged = _edit_field(proto, _COMPUTATIONS, computation)
    except ValueError:  # XLA read the proto already: only a wire type it never writes
        return None
    return tagged if tagged != proto else None


def _ops_in_order(module: ir.Module) -> list[ir.Operation]:
    """Every op of `module` in pre-order (the order they print in), the module first."""
    found: list[ir.Operation] = []
    pending = [module.operation]
    while pending:
        op = pending.pop()
        found.append(op)
        nested = [inner.operation for r in op.regions for b in r.blocks for inner in b.operations]
        pending += reversed(nested)
    return found


def _instruction_name(location: ir.Location) -> str | None:
    """The instruction a converted op came from: XLA's converter names the op after it when
    the instruction has no op_name (`loc("c")`), after the op_name `with_instruction_names`
    tagged with it when it has one."""
    tagged = _split_tag(location)[1]
    if tagged is not None:
        return tagged
    location = downcast(location)
    if isinstance(location, ir.NameLoc) and isinstance(location.child_loc, ir.UnknownLoc):
        return location.name_str
    return None


def _split_tag(location: ir.Location) -> tuple[ir.Location, str | None]:
    """A converted op's location as XLA writes it from the instruction's metadata (its
    op_name's `NameLoc` alone, over a stack frame, or fused with a source line), and the
    instruction's name that `with_instruction_names` tagged the op_name with (None: untagged)."""
    location = downcast(location)
    context = location.context
    if isinstance(location, ir.NameLoc) and _TAG in location.name_str:
        op_name, _, instruction = location.name_str.rpartition(_TAG)
        return ir.Location.name(op_name, location.child_loc, context), instruction
    if isinstance(location, ir.FusedLoc):
        parts = [p for p in location.locations if isinstance(p, ir.Location)]
        if parts:
            first, instruction = _split_tag(parts[0])
            if instruction is not None:
                return ir.Location.fused([first, *parts[1:]], context=context), instruction
    return location, None


def _as_jax_writes_it(location: ir.Location) -> ir.Location:
    """XLA's converter writes metadata as `fused[name(op_name), file:line:col]`; JAX writes
    `name(op_name, file:line:col)`: the same facts in JAX's shape."""
    location = downcast(location)
    if isinstance(location, ir.FusedLoc):
        parts = list(location.locations)
        if (
            len(parts) == 2
            and isinstance(parts[0], ir.NameLoc)
            and isinstance(parts[0].child_loc, ir.UnknownLoc)
            and isinstance(parts[1], ir.FileLineColLoc)
        ):
            return ir.Location.name(parts[0].name_str, parts[1])
    return location


def place_at_instructions(
    module: ir.Module, positions: dict[str, tuple[int, int]], filename: str
) -> None:
    """Give each op of `module` (converted from `with_instruction_names`' proto: its locations
    name instructions) its instruction's place in the HLO file (`file:line:col`; line 0 for a
    proto, which has no lines) fused after the location its metadata gives it."""
    with module.context:
        for op in _ops_in_order(module):
            origin, name = _split_tag(op.location)
            if name is None:  # no op_name: the location names the instruction, or nothing
                origin, name = None, _instruction_name(op.location)
            line, col = positions.get(name, (0, 0)) if name else (0, 0)
            here = ir.Location.file(filename, line, col)
            origin = _as_jax_writes_it(origin) if origin is not None else None
            if origin is not None and _instruction_name(origin) is None:
                op.location = ir.Location.fused([origin, here])
            elif name and not line:  # no metadata and no line: the instruction's name says which
                op.location = ir.Location.fused([ir.Location.name(name), here])
            else:
                op.location = here
            for region in op.regions:  # a function's arguments are its parameter instructions
                for block in region.blocks:
                    for argument in block.arguments:
                        name = _instruction_name(argument.location)
                        where = positions.get(name or "")
                        if where is not None:
                            argument.set_location(ir.Location.file(filename, *where))
                        elif name is not None:  # its op_name's tag off: the name alone
                            argument.set_location(ir.Location.name(name))


def hlo_to_bytecode(data: bytes, filename: str) -> bytes:
    """HloModuleProto (or HLO text) -> StableHLO bytecode, each op located at its instruction
    in `filename`. May abort: run it in a child."""
    try:
        from jax._src.lib import hlo  # pyright: ignore
        from jax.extend.mlir import hlo_to_stablehlo
    except ImportError:
        raise ConvcanonError("--input-hlo needs JAX (pip install 'convcanon[xla]')") from None
    text: str | None = None
    if is_hlo_text(data):
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
    positions = instruction_positions(text) if text is not None else {}
    check_convolution_windows(module, positions)

    def converted(proto: bytes) -> ir.Module:
        try:
            bytecode = hlo_to_stablehlo(proto)
        except Exception as err:  # the converter reports malformed protos as generic errors
            raise ConvcanonError(f"{refused}: {_first_line(err)}") from None
        try:
            return ir.Module.parse(bytecode, context)
        except ir.MLIRError as err:  # StableHLO's verifier checks what XLA's HLO reader does not
            raise _converted_error(err, positions) from None

    context = make_context()
    located = converted(with_instruction_names(data) or data)  # each op names its instruction
    place_at_instructions(located, positions, _location_name(filename))
    out = io.BytesIO()
    located.operation.write_bytecode(out)
    return out.getvalue()


def _location_name(filename: str) -> str:
    """`filename` as an MLIR location can hold it (UTF-8); "-", which names the input file
    too, when it cannot."""
    try:
        filename.encode()
    except UnicodeEncodeError:
        return "-"
    return filename


def _converted_error(err: ir.MLIRError, positions: dict[str, tuple[int, int]]) -> ConvcanonError:
    """One line at the HLO instruction the converted op came from (its name is the op's
    location: the module was converted without metadata)."""
    error = error_from_mlir(err, "", "the converted module does not verify")
    diagnostics = list(err.error_diagnostics)
    name = _instruction_name(diagnostics[0].location) if diagnostics else None
    if name is None:
        return ConvcanonError(error.folded_message())
    return ConvcanonError(
        f"instruction %{name}: {error.folded_message()}", _instruction_loc(positions, name)
    )


def hlo_bytes_to_bytecode_isolated(data: bytes, filename: str) -> bytes:
    """Convert in a child process; a crash or abort there is `filename: error: ...` here."""
    (converted,) = convert_chunks([(1, data)], filename, split=False)
    if isinstance(converted, ConvcanonError):
        raise converted
    return converted


def hlo_bytes_to_module(data: bytes, filename: str, context: ir.Context) -> ir.Module:
    """Convert an HloModuleProto (or HLO text) to a StableHLO module in `context`."""
    return converted_module(hlo_bytes_to_bytecode_isolated(data, filename), filename, context)


def converted_module(bytecode: bytes, filename: str, context: ir.Context) -> ir.Module:
    """The bytecode a child converted, read in `context`."""
    try:
        return ir.Module.parse(bytecode, context)
    except ir.MLIRError as err:  # the child parsed it: only a jaxlib that differs from its own
        raise error_from_mlir(err, filename, "the converted module does not parse") from None


def converted_text(bytecode: bytes, filename: str) -> str:
    """The bytecode a child converted as StableHLO text, its locations printed."""
    return print_module(converted_module(bytecode, filename, make_context()), debug_info=True)


def hlo_file_to_stablehlo_text(path: str) -> str:
    """Read an HLO file (proto or text, `-` is stdin), bounded, and return StableHLO text whose
    locations place each op at its HLO instruction (and carry the instruction's metadata), to
    be read back under the file's name."""
    filename, data = read_input_bytes(path)
    return hlo_to_stablehlo_text(data, filename)


def hlo_to_stablehlo_text(data: bytes, filename: str) -> str:
    """HLO (proto or text) as StableHLO text located at its instructions in `filename`."""
    return converted_text(hlo_bytes_to_bytecode_isolated(data, filename), filename)


def is_hlo_text(data: bytes) -> bool:
    """Whether `data` is HLO text (a proto is binary), as XLA's readers tell them apart."""
    return data.lstrip().startswith(b"HloModule")


# -- the child: a whole file, or the chunks of a split one, converted in turn --------------------

Chunk = tuple[int, bytes]  # (the file's line it starts at, its HLO: text or a proto)
HLO_READER_TIMEOUT = 300.0  # seconds a child may take; XLA reads a large HLO module in a few
_CHILD = "from convcanon.hlo.hlo_import import child_main; child_main()"


def convert_chunks(
    chunks: Sequence[Chunk], filename: str, split: bool = True
) -> list[bytes | ConvcanonError]:
    """Each chunk as StableHLO bytecode located at its lines in `filename`, or its error; an
    abort or a hang in XLA is at the chunk's `HloModule` line when the file was `split`."""
    results: list[bytes | ConvcanonError] = []
    while len(results) < len(chunks):
        results += _convert_in_child(chunks[len(results) :], filename, split)
    return results


def _convert_in_child(
    chunks: Sequence[Chunk], filename: str, split: bool
) -> list[bytes | ConvcanonError]:
    """The answers of one child: for every chunk, or up to the one it stopped on (its error)."""
    payload = b"".join(b"%d %d\n" % (line, len(data)) + data for line, data in chunks)
    try:
        child = subprocess.run(
            [*python_argv(_CHILD), filename],
            input=payload,
            capture_output=True,
            env=child_env(),
            timeout=HLO_READER_TIMEOUT,
        )
        out, ended = child.stdout, f"{how_it_ended(child.returncode)}"
        ended += f": {native_failure_message(child.stderr.decode(errors='replace'))}"
    except subprocess.TimeoutExpired as err:  # killed; the answers it gave stand
        out, ended = err.stdout or b"", f"did not finish in {HLO_READER_TIMEOUT:g} s"
    answers = _frames(out, filename)
    if len(answers) < len(chunks):  # the child stopped on this chunk
        line, data = chunks[len(answers)]
        where = _module_start(line, data, filename) if split else SourceLoc(filename)
        answers.append(ConvcanonError(f"XLA's HLO reader {ended}", where))
    return answers


def _module_start(line: int, data: bytes, filename: str) -> SourceLoc:
    """Where a chunk's module starts (its `HloModule`), past the blanks after the marker."""
    blanks = data[: len(data) - len(data.lstrip())]
    return SourceLoc(filename, line + blanks.count(b"\n"), len(blanks) - blanks.rfind(b"\n"))


def _frames(out: bytes, filename: str) -> list[bytes | ConvcanonError]:
    """The child's framed answers: `ok N` and N bytes of bytecode, or `error LINE COL N` and N
    bytes of message; a frame cut short (the child died writing it) is not an answer."""
    answers: list[bytes | ConvcanonError] = []
    at = 0
    while (end := out.find(b"\n", at)) >= 0:
        kind, *numbers = out[at:end].split() or [b""]
        if kind not in (b"ok", b"error") or not all(n.isdigit() for n in numbers) or not numbers:
            break  # not a frame (a library wrote to stdout): what follows is not answers
        size = int(numbers[-1])
        body = out[end + 1 : end + 1 + size]
        if len(body) < size:
            break
        if kind == b"ok":
            answers.append(body)
        else:
            line, col = int(numbers[0]), int(numbers[1])
            where = SourceLoc(filename, line, col) if line else SourceLoc(filename)
            answers.append(ConvcanonError(body.decode(errors="replace"), where))
        at = end + 1 + size
    return answers


def _chunks_read(data: bytes) -> list[Chunk]:
    """The parent's frames: `LINE N` and N bytes of HLO each."""
    chunks: list[Chunk] = []
    at = 0
    while (end := data.find(b"\n", at)) >= 0:
        line, size = map(int, data[at:end].split())
        chunks.append((line, data[end + 1 : end + 1 + size]))
        at = end + 1 + size
    return chunks


def child_main() -> None:
    """The child: the parent's frames on stdin, the file's name as its argument; an answer a
    chunk on stdout, flushed as each is done."""
    die_with_parent()
    filename = sys.argv[1]
    out = sys.stdout.buffer
    for line, data in _chunks_read(sys.stdin.buffer.read()):
        try:  # XLA numbers lines from the text's start: the lines before the chunk lead it
            bytecode = hlo_to_bytecode(b"\n" * (line - 1) + data, filename)
        except ConvcanonError as err:
            message = err.folded_message().encode()
            at = (err.loc.line, err.loc.col) if err.loc and err.loc.line else (0, 0)
            out.write(b"error %d %d %d\n" % (*at, len(message)) + message)
        else:
            out.write(b"ok %d\n" % len(bytecode) + bytecode)
        out.flush()
