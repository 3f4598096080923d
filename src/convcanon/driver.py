"""The `convcanon-opt` driver: read, parse, run the pipeline, print, write atomically.

The two halves use different IR frameworks (jaxlib's MLIR for HLO, xDSL for migraphx/TOSA); a
`Framework` adapter hides which one a file needs. Nothing is written unless every pass succeeded.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

from convcanon.diagnostics import ConvcanonError, SourceLoc, UsageError, text_starts_at_line
from convcanon.fileio.module_input import ModuleFromBytecode, read_mlir_input
from convcanon.fileio.output_file import check_output_path, write_output
from convcanon.fileio.reading import decoded, read_input_bytes
from convcanon.fileio.split_input import SPLIT_MARKER, chunk_column
from convcanon.ir_kind import (
    NO_IMPLICIT_MODULE,
    PLAIN_ASM,
    VERIFY_ROUNDTRIP,
    AsmFlags,
    holds_no_op,
    sniff_framework,
    with_input_kind_hint,
)
from convcanon.pass_instruments import PassInstruments, dump_pass_pipeline
from convcanon.pipeline import PassInvocation, PassStats, parse_pipeline
from convcanon.records import NamedTuple


class PrintOptions(NamedTuple):
    """mlir-opt's printer flags; None keeps what the input had (locations, generic form)."""

    debug_info: bool | None = None  # --mlir-print-debuginfo
    generic: bool | None = None  # --mlir-print-op-generic
    elide_elements: int | None = None  # --mlir-elide-elementsattrs-if-larger
    asm: AsmFlags = PLAIN_ASM  # the rest of MLIR's printer flags

    @property
    def default(self) -> bool:
        return self == AS_PARSED

    def mlir_only(self) -> list[str]:
        """The flags asked for that only MLIR's printer (HLO modules) has."""
        elided = ["--mlir-elide-elementsattrs-if-larger"] if self.elide_elements is not None else []
        return elided + self.asm.asked()


AS_PARSED = PrintOptions()  # locations and generic form as the input had them


class OutputFormat(NamedTuple):
    """What convcanon-opt writes: `text` (MLIR), `bytecode` (`--emit-bytecode`), `artifact` (a
    StableHLO portable artifact for `target`, `--target-version`), `hlo-text` or `hlo-proto`
    (`--emit-hlo`)."""

    kind: str = "text"
    target: str = ""  # the version written: an artifact's StableHLO, bytecode's (or current)

    @property
    def flag(self) -> str:
        return {"bytecode": "--emit-bytecode", "artifact": "--target-version"}.get(
            self.kind, "--emit-hlo"
        )


TEXT = OutputFormat()


def output_format(
    bytecode: bool, target_version: str | None, hlo: str | None, bytecode_version: int | None = None
) -> OutputFormat:
    """The format convcanon-opt's flags ask for (argparse keeps them exclusive)."""
    if bytecode_version is not None:
        if not bytecode:
            raise UsageError(
                "--emit-bytecode-version is the version --emit-bytecode writes: give both"
            )
        return OutputFormat("bytecode", str(bytecode_version))
    if target_version is not None:
        from convcanon.hlo.formats import check_target_version

        return OutputFormat("artifact", check_target_version(target_version))
    if hlo is not None:
        return OutputFormat(f"hlo-{hlo}")
    return OutputFormat("bytecode") if bytecode else TEXT


class FrameworkAdapter(NamedTuple):
    """How one IR framework parses and prints a file (`module:function` entry points)."""

    parse: str  # (text, filename) -> module; raises ConvcanonError
    print: str  # (module) -> str
    print_with: str  # (module, options: PrintOptions) -> str
    scope: str = ""  # () -> the context manager a whole job runs in, if any
    framework: str = ""  # its name in FRAMEWORKS, for the hint a refused file gets
    roundtrip: str = ""  # (module) -> None, `--verify-roundtrip`'s check, if it has one
    single_root: str = ""  # (module) -> None, `--no-implicit-module`'s check, if it has one

    def _load(self, entry: str) -> Callable[..., Any]:
        module_name, _, attr = entry.partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def parse_text(self, text: str, filename: str) -> Any:
        try:
            return self._load(self.parse)(text, filename)
        except ConvcanonError as err:
            err.message = with_input_kind_hint(err.message, text, self.framework)
            raise

    def check_parsed(self, module: Any) -> None:
        """The checks of a parsed input that `--no-implicit-module` and `--verify-roundtrip`
        ask for; HLO modules only: xDSL, which reads migraphx/TOSA modules, cannot tell a
        module it made from one the text wrote, nor a location given as unknown from none."""
        for asked, entry, flag in (
            (NO_IMPLICIT_MODULE.get(), self.single_root, "--no-implicit-module"),
            (VERIFY_ROUNDTRIP.get(), self.roundtrip, "--verify-roundtrip"),
        ):
            if asked and not entry:
                raise UsageError(f"{flag} checks HLO modules only")
            if asked:
                self._load(entry)(module)

    def job(self) -> contextlib.AbstractContextManager[Any]:
        return self._load(self.scope)() if self.scope else contextlib.nullcontext()

    def print_module(self, module: Any, options: PrintOptions = AS_PARSED) -> str:
        if options.default:
            return self._load(self.print)(module)
        return self._load(self.print_with)(module, options)


def print_hlo(module: Any, options: PrintOptions) -> str:
    """MLIR's printer with mlir-opt's flags."""
    from convcanon.hlo.io import print_file

    return print_file(
        module,
        debug_info=options.debug_info,
        generic=options.generic,
        large_elements_limit=options.elide_elements,
        flags=options.asm,
    )


def print_xdsl(module: Any, options: PrintOptions) -> str:
    """xDSL's printer with mlir-opt's flags (the custom form is `migraphx.io.print_file`)."""
    import io

    if unsupported := options.mlir_only():
        raise UsageError(
            f"{', '.join(unsupported)} prints HLO modules only: xDSL's printer, which prints"
            " migraphx/TOSA modules, has no such option"
        )

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(
        stream=stream,
        print_generic_format=bool(options.generic),
        print_debuginfo=bool(options.debug_info),
    ).print_op(module)
    text = stream.getvalue()
    return text if text.endswith("\n") else text + "\n"


FRAMEWORKS: Mapping[str, FrameworkAdapter] = {
    "hlo": FrameworkAdapter(
        "convcanon.hlo.io:parse_file_text",
        "convcanon.hlo.io:print_file",
        "convcanon.driver:print_hlo",
        "convcanon.hlo.context:generic_op_classes",
        framework="hlo",
        roundtrip="convcanon.hlo.io:verify_roundtrip",
        single_root="convcanon.hlo.io:check_single_root",
    ),
    "xdsl": FrameworkAdapter(
        "convcanon.xdsl_io:parse_file_text",
        "convcanon.migraphx.io:print_file",
        "convcanon.driver:print_xdsl",
        framework="xdsl",
    ),
}


def choose_framework(passes: list[PassInvocation], text: str) -> str:
    frameworks = {p.info.framework for p in passes}
    if len(frameworks) > 1:
        raise UsageError("a pipeline cannot mix HLO passes and migraphx passes")
    return frameworks.pop() if frameworks else sniff_framework(text)


class PipelineStats:
    """Counters per pass instance (a pass that runs twice has two entries), summed over every
    `--split-input-file` chunk, printed like `mlir-opt -mlir-pass-statistics`."""

    def __init__(self, passes: list[PassInvocation]) -> None:
        self.names = [p.info.name for p in passes]
        self.runs: list[PassStats | None] = [None] * len(passes)

    def add(self, index: int, stats: PassStats) -> None:
        total = self.runs[index]
        if total is None:
            total = self.runs[index] = PassStats()
        for key, value in stats.counters.items():
            total.bump(key, value)

    def render(self) -> str:
        rule = "===" + "-" * 73 + "==="
        lines = [rule, "... Pass statistics report ...".center(len(rule)).rstrip(), rule]
        repeated = {n for n in self.names if self.names.count(n) > 1}
        for index, (name, stats) in enumerate(zip(self.names, self.runs, strict=True)):
            if stats is None:
                continue
            lines.append(f"{name} (pass {index + 1} of the pipeline)" if name in repeated else name)
            lines += [f"  (S) {value:8d} {key}" for key, value in sorted(stats.counters.items())]
        return "\n".join(lines) + "\n"


def run_pipeline(
    module: Any,
    passes: list[PassInvocation],
    stats: PipelineStats | None = None,
    instruments: PassInstruments | None = None,
    printer: Callable[[Any], str] = str,
) -> None:
    """Run each pass on `module`; `instruments` (with `printer` for its IR dumps) watch them."""
    for index, invocation in enumerate(passes):
        run = functools.partial(invocation.info.load(), module, invocation.options)
        if instruments is None:
            result = run()
        else:
            result = instruments.run_pass(index, invocation, module, printer, run)
        if stats is not None and isinstance(result, PassStats):
            stats.add(index, result)


# Modules whose freeing is left to the end of the process (see `keep_modules_until_exit`).
_kept_modules: list[Any] | None = None


def keep_modules_until_exit() -> None:
    """Let finished modules live until the process ends, for a command that ends it without the
    interpreter's teardown: freeing a 100k-op module costs ~35 ms that the exit does for free."""
    global _kept_modules
    _kept_modules = []


def transform_text(
    text: str,
    filename: str,
    pipeline: str,
    stats: PipelineStats | None = None,
    print_options: PrintOptions = AS_PARSED,
    chunk_line: int | None = None,
    instruments: PassInstruments | None = None,
    output_format: OutputFormat = TEXT,
) -> str | bytes:
    """Parse, run `pipeline`, print: the whole job on one file, or on the `--split-input-file`
    chunk that starts at `chunk_line` of its file (a chunk's module is never kept: memory
    stays that of the largest chunk)."""
    passes = parse_pipeline(pipeline)
    framework = choose_framework(passes, text)
    if framework == "xdsl" and isinstance(text, ModuleFromBytecode):
        raise ConvcanonError(
            "this is MLIR bytecode; migraphx/TOSA passes read MLIR text", SourceLoc(filename)
        )
    adapter = FRAMEWORKS[framework]
    # a chunk is parsed alone; its positions are its file's (both frameworks read the variable)
    placed = (
        text_starts_at_line(chunk_line, chunk_column(text))
        if chunk_line
        else contextlib.nullcontext()
    )
    watch = instruments or PassInstruments()
    with adapter.job(), placed:
        with watch.parsing():
            module = adapter.parse_text(text, filename)
        adapter.check_parsed(module)
        printer = functools.partial(adapter.print_module, options=print_options)
        run_pipeline(module, passes, stats, instruments, printer)
        with watch.output():
            if output_format.kind == "text":
                printed = adapter.print_module(module, print_options)
            elif framework == "hlo":
                from convcanon.hlo.formats import emit

                printed = emit(module, output_format.kind, output_format.target)
            else:
                raise ConvcanonError(
                    f"{output_format.flag} writes StableHLO/MHLO modules; this one holds"
                    " migraphx/TOSA ops, which are written as text",
                    SourceLoc(filename),
                )
        if _kept_modules is not None and chunk_line is None:
            _kept_modules.append(module)
        return printed


class ChunkErrors(ConvcanonError):
    """The errors of every bad `--split-input-file` chunk, reported together like mlir-opt."""

    def __init__(self, errors: list[ConvcanonError]) -> None:
        super().__init__(errors[0].message, errors[0].loc, errors[0].code)
        self.errors = errors

    def render(self) -> str:
        return "\n".join(err.render() for err in self.errors)


# One chunk's job: (text, where it starts in the file, or None for the whole file) -> output.
ChunkJob = Callable[[str, int | None], str | bytes]
Chunk = tuple[int, str]  # (the file's line it starts at, its text)


def run_opt(
    input_path: str,
    pipeline: str,
    output_path: str,
    *,
    stats: bool = False,
    split_marker: str = "",
    output_marker: str = SPLIT_MARKER,
    input_hlo: bool = False,
    print_options: PrintOptions = AS_PARSED,
    instruments: PassInstruments | None = None,
    output_format: OutputFormat = TEXT,
    verify_diagnostics: str | None = None,
) -> int:
    """convcanon-opt: read, run the pipeline, write; with a `split_marker`, each chunk between
    its lines on its own, the outputs joined by `output_marker` lines; with `verify_diagnostics`
    (`all` or `only-expected`), the diagnostics are checked against the input's `expected-*`
    comments instead of reported."""
    passes = parse_pipeline(pipeline)  # usage errors before reading anything
    if split_marker and output_format.kind != "text":
        raise UsageError(f"{output_format.flag} writes one module: not with --split-input-file")
    if instruments is not None and instruments.dump_pipeline:
        sys.stderr.write(dump_pass_pipeline(passes) + "\n\n")
    check_output_path(input_path, output_path)
    filename, text, print_options, hlo_chunks = _read_opt_input(
        input_path, input_hlo, bool(split_marker), print_options
    )
    # bytecode stays bytecode (checked in a child); it has no `// -----` to split at
    split_marker = "" if isinstance(text, ModuleFromBytecode) else split_marker
    collected = PipelineStats(passes)
    chunks = _chunks(text, split_marker, filename)
    converted = _hlo_chunks_as_stablehlo(chunks, filename) if hlo_chunks else {}

    def job(chunk: str, line: int | None) -> str | bytes:
        """One chunk (`line`: where it starts in the file, so each location is its line in the
        whole file), or the whole file (None). A chunk of HLO text was converted on its own, as
        xla-translate splits its input before translating; its ops are located in the file."""
        if hlo_chunks:
            chunk, line = _converted_chunk(converted, line or 1, chunk), None
        printed = transform_text(
            chunk, filename, pipeline, collected, print_options, line, instruments, output_format
        )
        return printed if isinstance(printed, bytes) else _as_mlir_opt_ends(printed, print_options)

    joined = Joined(output_marker, bool(split_marker))
    try:
        result = _opt_result(text, chunks, filename, job, joined, verify_diagnostics)
    except ConvcanonError as err:
        if instruments is not None and instruments.timing:  # mlir-opt's, also on a failure
            err.trailer = instruments.report()
        raise
    if stats:
        sys.stderr.write(collected.render())
    if instruments is not None and instruments.timing:
        sys.stderr.write(instruments.report())
    write_output(output_path, result)
    return 0


def _opt_result(
    text: str,
    chunks: list[tuple[int, str]],
    filename: str,
    job: ChunkJob,
    joined: Joined,
    verify_diagnostics: str | None,
) -> str | bytes:
    """What convcanon-opt writes: the diagnostics checked against the input's expectations, the
    chunks' outputs joined, or the whole file's."""
    if verify_diagnostics:
        only_expected = verify_diagnostics == "only-expected"
        return _verified(chunks, filename, job, joined, only_expected)
    if joined.split:
        return _each_chunk(chunks, job, joined)
    return job(text, None)


def _converted_chunk(converted: Mapping[Chunk, str | ConvcanonError], line: int, hlo: str) -> str:
    """The StableHLO text of the HLO chunk, or its conversion's error raised."""
    stablehlo = converted[line, hlo]
    if isinstance(stablehlo, ConvcanonError):
        raise stablehlo
    return stablehlo


def _as_mlir_opt_ends(printed: str, options: PrintOptions) -> str:
    """A module's text as mlir-opt writes it: the printer's text and one more newline. MLIR's
    printer ends a module with a newline (its location aliases follow it) unless it prints in
    local scope, and `printed`, like every text we print, already ends in one."""
    return printed if options.asm.local_scope else printed + "\n"


def _read_opt_input(
    path: str, input_hlo: bool, split: bool, print_options: PrintOptions
) -> tuple[str, str, PrintOptions, bool]:
    """(filename, module, print options, whether the module is HLO text left to convert chunk
    by chunk): MLIR text, MLIR bytecode left as bytecode, or XLA HLO as StableHLO text, whose
    locations are the HLO's, printed only if asked."""
    if not input_hlo:
        filename, text = read_mlir_input(path, as_text=False)
        return filename, text, print_options, False
    from convcanon.hlo.hlo_import import hlo_to_stablehlo_text, is_hlo_text

    if print_options.debug_info is None:
        print_options = print_options._replace(debug_info=False)
    filename, data = read_input_bytes(path)
    if split and is_hlo_text(data):
        return path, decoded(filename, data), print_options, True
    return path, hlo_to_stablehlo_text(data, filename), print_options, False


def _hlo_chunks_as_stablehlo(
    chunks: list[Chunk], filename: str
) -> dict[Chunk, str | ConvcanonError]:
    """Each chunk of HLO text, by its line and text (two markers on a line start two chunks
    there), as StableHLO text located at its lines
    in `filename`, or its error; all converted by one child. A chunk of only blanks and comments
    (after a trailing marker) is an empty module, as in mlir-opt."""
    from convcanon.hlo.hlo_import import convert_chunks, converted_text

    modules = [(line, chunk) for line, chunk in chunks if not holds_no_op(chunk)]
    texts: dict[Chunk, str | ConvcanonError] = {chunk: chunk[1] for chunk in chunks}
    encoded = [(line, chunk.encode()) for line, chunk in modules]
    for chunk, result in zip(modules, convert_chunks(encoded, filename), strict=True):
        texts[chunk] = (
            result if isinstance(result, ConvcanonError) else converted_text(result, filename)
        )
    return texts


def _chunks(text: str, marker: str, filename: str) -> list[tuple[int, str]]:
    """(first line, text) of each chunk between `marker`s, or of the whole file when there is no
    marker."""
    if not marker:
        return [(1, text)]
    from convcanon.fileio.split_input import split_input_file

    return [(offset + 1, chunk) for offset, chunk in split_input_file(text, marker, filename)]


class Joined(NamedTuple):
    """How split chunks' outputs are joined: a line of `marker` between them (an empty line
    when the marker is empty), as mlir-opt's `--output-split-marker`."""

    marker: str
    split: bool  # whether the input was split at all

    def join(self, texts: list[str]) -> str:
        return f"{self.marker}\n".join(texts)


def _each_chunk(chunks: list[tuple[int, str]], job: ChunkJob, joined: Joined) -> str:
    """Every chunk's output, joined as mlir-opt joins them; every bad chunk's error is raised
    together, as mlir-opt reports them all."""
    texts: list[str] = []
    errors: list[ConvcanonError] = []
    for line, chunk in chunks:
        try:
            printed = job(chunk, line)
            texts.append(printed if isinstance(printed, str) else printed.decode())
        except ConvcanonError as err:
            errors.append(err)
    if errors:
        raise ChunkErrors(errors)
    return joined.join(texts)


def _verified(
    chunks: list[tuple[int, str]],
    filename: str,
    job: ChunkJob,
    joined: Joined,
    only_expected: bool,
) -> str | bytes:
    """The output under `--verify-diagnostics`: each chunk's diagnostics checked against its
    `expected-*` comments, every mismatch raised."""
    from convcanon.diagnostic_verifier import verify_chunks

    outputs = verify_chunks(
        chunks,
        filename,
        lambda chunk, line: job(chunk, line if joined.split else None),
        only_expected,
    )
    return outputs[0] if len(outputs) == 1 else joined.join(list(map(str, outputs)))
