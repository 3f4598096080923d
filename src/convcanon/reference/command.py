"""`convcanon run`: interpret a module with numpy, check its `check` ops, write its results.

HLO files go to `hlo_interp` (through `convcanon.reference.run`); files with migraphx/TOSA ops go
to half B's interpreter (`convcanon.reference.migraphx_interp:run_module_text`), imported only
when needed. Each module is parsed once: its random inputs, the check of its inputs and its run
share the parse.
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Callable, Mapping

import numpy as np

from convcanon.diagnostics import ConvcanonError, SourceLoc
from convcanon.fileio.limits import parse_byte_size
from convcanon.fileio.module_input import read_mlir_input
from convcanon.fileio.npz import holds_raw_bits, input_header, open_npz
from convcanon.fileio.output_file import check_output_path, is_stdout, write_output
from convcanon.fileio.reading import refuse_stdin_twice
from convcanon.ir_kind import holds_no_op
from convcanon.reference.parsed import each_text_parsed_once
from convcanon.reference.run import check_input_names, run_hlo_text
from convcanon.reference.summary import print_results

# (text, filename, entry, memory limit) -> the entry's arguments, drawn within the limit
Draw = Callable[[str, str, str | None, int], Mapping[str, np.ndarray]]


def parse_memory_limit(text: str | int) -> int:
    """`4GiB`, `512MiB`, `1000000` (bytes) -> bytes; anything else is a usage error."""
    return parse_byte_size(text, "memory limit")


def save_outputs(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})  # pyright: ignore[reportArgumentType]
    write_output(path, buffer.getvalue())


def run_command(
    input: str,
    inputs: str | None = None,
    output: str | None = None,
    entry: str | None = None,
    split_marker: str = "",
    memory_limit: str | int = "4GiB",
    max_loop_iterations: int | None = None,
    draw: Draw | None = None,
) -> int:
    """Run every entry function; exit 0 only if every check held (only then write outputs).

    With a `split_marker` each chunk between its lines is a module of its own (HLO or migraphx/TOSA,
    split before either interpreter sees it), its results named `chunkK.FUNCTION.resultI`; every
    bad chunk's error is reported, at its line in the file. Without `inputs`, `draw(text,
    filename, entry, memory limit)` gives each module's arguments, if given."""
    limit = parse_memory_limit(memory_limit)
    check_output_path(input, output)
    if inputs is not None:
        check_output_path(inputs, output)
    refuse_stdin_twice({"FILE": input, "--inputs": inputs})
    filename, text = read_mlir_input(input)
    feed: Mapping[str, np.ndarray] = open_npz(inputs) if inputs is not None else {}
    job = _Job(filename, entry, feed, limit, max_loop_iterations, output)
    job.draw = None if inputs is not None else draw
    if not split_marker:
        job.run(text)
    else:
        from convcanon.driver import ChunkErrors
        from convcanon.fileio.split_input import chunk_column, split_input_file

        errors: list[ConvcanonError] = []
        ran = False
        chunks = split_input_file(text, split_marker, filename)
        for index, (offset, chunk) in enumerate(chunks, 1):
            if holds_no_op(chunk):  # blank, or only comments: no module to run
                continue
            ran = True
            try:
                job.run(chunk, offset, f"chunk{index}")
            except ConvcanonError as err:
                if err.loc is None or (err.loc.file == filename and not err.loc.line):
                    # where the chunk starts: just after its marker, as mlir-opt places it
                    err.loc = SourceLoc(filename, offset + 1, chunk_column(chunk))
                    err.message = f"chunk {index}: {err.message}"
                errors.append(err)
        if errors:
            raise ChunkErrors(errors)
        if not ran:  # no chunk holds an op: what the file says run whole (nothing to run)
            job.run(text)
    if job.failed:
        if output is not None:
            print(f"results not written to {output}: a check failed", file=sys.stderr)
        print(f"{filename}: error: {job.failed} function(s) failed a check", file=sys.stderr)
        return 1
    if output is not None:  # '' too: the writer refuses it, as every command's does
        save_outputs(output, job.outputs)
    return 0


class _Job:
    """One `convcanon run`: what every file or chunk it runs shares, and what they add up to."""

    def __init__(
        self,
        filename: str,
        entry: str | None,
        feed: Mapping[str, np.ndarray],
        limit: int,
        max_loop_iterations: int | None,
        output: str | None,
    ) -> None:
        self.filename, self.entry, self.feed, self.limit = filename, entry, feed, limit
        self.max_loop_iterations = max_loop_iterations
        self.writes_output = output is not None
        # `-o -` (or /dev/stdout): the npz is stdout, the status lines go to stderr
        self.output_is_stdout = is_stdout(output)
        self.outputs: dict[str, np.ndarray] = {}
        self.failed = 0  # functions that failed a check
        self.draw: Draw | None = None

    def run(self, text: str, offset: int = 0, chunk: str = "") -> None:
        """Run a file, or the chunk `chunk` that has `offset` lines of the file before it:
        print each function's report and keep its results under their names."""
        from convcanon.diagnostics import text_starts_at_line
        from convcanon.fileio.split_input import chunk_column
        from convcanon.ir_kind import sniff_framework

        # positions in a chunk are its file's (it was padded with the newlines before it:
        # quadratic in a file of many chunks)
        placed = text_starts_at_line(offset + 1, chunk_column(text))
        if sniff_framework(text) == "xdsl":
            with placed, each_text_parsed_once():
                feed = (
                    self.draw(text, self.filename, self.entry, self.limit)
                    if self.draw
                    else self.feed
                )
                name, results = _run_xdsl(text, self.filename, self.entry, feed, self.limit)
            self._report(f"{name}: ok ({len(results)} result(s))", results, chunk)
            self._name(results, f"{chunk}.{name}." if chunk else "")
            return
        with placed, each_text_parsed_once():
            feed = (
                self.draw(text, self.filename, self.entry, self.limit) if self.draw else self.feed
            )
            reports = run_hlo_text(
                _refined_to_inputs(text, self.filename, self.entry, feed),
                self.filename,
                entry=self.entry,
                inputs=feed,
                memory_limit=self.limit,
                max_loop_iterations=self.max_loop_iterations,
            )
        for report in reports:
            status = "ok" if not report.failures else "FAILED"
            self._report(
                f"{report.name}: {status} ({report.checks} check(s), "
                f"{len(report.failures)} failed, {len(report.results)} result(s))",
                report.results,
                chunk,
            )
            for failure in report.failures:
                print(failure, file=sys.stderr)
            self.failed += bool(report.failures)
            if chunk:
                self._name(report.results, f"{chunk}.{report.name}.")
            else:
                self._name(report.results, "" if len(reports) == 1 else f"{report.name}.")

    def _report(self, line: str, results: list[np.ndarray], chunk: str = "") -> None:
        status = sys.stderr if self.output_is_stdout else sys.stdout
        print(f"{chunk}.{line}" if chunk else line, file=status)
        if not self.writes_output:
            print_results(results)

    def _name(self, results: list[np.ndarray], prefix: str) -> None:
        for i, value in enumerate(results):
            self.outputs[f"{prefix}result{i}"] = value


def _refined_to_inputs(
    text: str, filename: str, entry: str | None, feed: Mapping[str, np.ndarray]
) -> str:
    """A shape-polymorphic module (`tensor<?x...>` arguments) refined to its inputs' shapes,
    read from the npz headers; a static module as it is."""
    from convcanon.refine import dynamic_arguments, refine_text

    dynamic = dynamic_arguments(text, filename, entry)
    if not dynamic:
        return text
    where = SourceLoc(filename)
    takes = f"@{entry or 'main'} takes ({', '.join(dynamic)})"
    if not feed:
        raise ConvcanonError(
            f"{takes}, dynamic shapes: give --inputs, whose shapes the module is refined to", where
        )
    check_input_names(f"{takes}", len(dynamic), feed, where)
    shapes = [input_header(feed, f"arg{i}")[0] for i in range(len(dynamic))]
    try:
        return refine_text(text, filename, shapes, entry)
    except ConvcanonError as err:
        given = ", ".join(f"arg{i} {list(shape)}" for i, shape in enumerate(shapes))
        err.message = f"refined to the shapes of --inputs ({given}): {err.message}"
        raise


def _run_xdsl(
    text: str, filename: str, entry: str | None, feed: Mapping[str, np.ndarray], limit: int
) -> tuple[str, list[np.ndarray]]:
    """The function's name (`entry`, or the one the interpreter chose) and its results."""
    try:
        module = importlib.import_module("convcanon.reference.migraphx_interp")
    except ModuleNotFoundError:
        raise ConvcanonError(
            "this file has migraphx/TOSA ops, and the migraphx interpreter is not installed",
            SourceLoc(filename),
        ) from None
    if feed:
        _check_flat_headers(text, filename, entry, feed)
    return module.run_module_text(text, filename, entry, feed, limit)


def _check_flat_headers(
    text: str, filename: str, entry: str | None, feed: Mapping[str, np.ndarray]
) -> None:
    """Each npz header against its migraphx/TOSA flat buffer, before anything is inflated.

    Wrong names are left to the interpreter, which names them before reading any array.
    """
    from xdsl.dialects import func

    from convcanon.migraphx.io import op_location
    from convcanon.reference.migraphx_interp import default_entry, flat_args
    from convcanon.reference.parsed import read_only_xdsl_module

    functions = {
        op.sym_name.data: op
        for op in read_only_xdsl_module(text, filename).ops
        if isinstance(op, func.FuncOp)
    }
    if entry is None:  # the interpreter's choice
        entry = default_entry(list(functions))
    function = functions.get(entry or "")
    if function is None or not function.body.blocks:
        return  # the interpreter says what is wrong
    args = flat_args(function)
    if set(feed) != {f"arg{i}" for i in range(len(args))}:
        return
    for i, arg in enumerate(args):
        shape, dtype = input_header(feed, f"arg{i}")
        nibbles = arg.dtype.name in ("int4", "uint4") and dtype.kind in "iu"
        viewable = holds_raw_bits(dtype, arg.dtype)
        if shape != arg.shape or (dtype != arg.dtype and not viewable and not nibbles):
            raise ConvcanonError(
                f"input arg{i} is {dtype}{list(shape)} but @{function.sym_name.data} expects "
                f"the flat buffer {arg.dtype}{list(arg.shape)}",
                op_location(function) or SourceLoc(filename),
            )
