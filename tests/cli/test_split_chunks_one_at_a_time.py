"""`--split-input-file` holds one chunk's module at a time and reads each chunk once: memory is
that of the largest chunk and time linear in the file (2,000 empty chunks took 975 MiB, each
chunk parsed after as many newlines as the file had lines before it). Every position in a chunk
is still its line in the whole file."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from cli_support import MIGRAPHX_EXP, Runner, iree_opt  # pyright: ignore[reportMissingImports]
from fuzz.test_bad_input_table import _conv_hlo  # pyright: ignore[reportMissingImports]

from convcanon import driver, xdsl_io
from convcanon.hlo import io as hlo_io
from convcanon.hlo.context import ir
from convcanon.migraphx import io as migraphx_io

EMPTY = "func.func @f() {\n  return\n}\n"
# a conv whose padding the pass cannot write: its element type has no zero (EUET001)
F8_CONV = _conv_hlo("pad = [[1, 1], [1, 1]]", out="1x8x8x4").replace("xf32>", "xf8E8M0FNU>")


@pytest.fixture
def as_the_script_runs() -> Iterator[None]:
    """convcanon-opt's script: the collector off, finished modules kept for the exit."""
    enabled = gc.isenabled()
    gc.disable()
    driver.keep_modules_until_exit()
    try:
        yield
    finally:
        driver._kept_modules = None  # pyright: ignore[reportPrivateUsage]
        if enabled:
            gc.enable()


@pytest.mark.usefixtures("as_the_script_runs")
def test_a_split_file_holds_no_chunk_context_after_its_chunk(tmp_path: Path) -> None:
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([EMPTY] * 60))
    before = ir.Context._get_live_count()
    assert driver.run_opt(str(source), "", str(tmp_path / "out.mlir"), split_marker="// -----") == 0
    assert ir.Context._get_live_count() - before == 0


def _parsed_lengths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each text the HLO parser is handed, from now on."""
    handed: list[int] = []
    parse = hlo_io.parse_module

    def counting(text: str, filename: str) -> ir.Module:
        handed.append(len(text))
        return parse(text, filename)

    monkeypatch.setattr(hlo_io, "parse_module", counting)
    return handed


@pytest.mark.parametrize("chunks", [10, 200])
def test_each_chunk_is_parsed_once_and_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: int
) -> None:
    """What the parser is handed, over all chunks, is the file once, at any chunk count."""
    handed = _parsed_lengths(monkeypatch)
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([EMPTY] * chunks))
    assert driver.run_opt(str(source), "", str(tmp_path / "out.mlir"), split_marker="// -----") == 0
    # a later chunk starts after its marker, on the marker's line: the file once, less markers
    markers = (chunks - 1) * len("// -----")
    assert len(handed) == chunks and sum(handed) == len(source.read_text()) - markers


def test_a_line_of_many_chunks_is_parsed_once_at_the_files_columns(
    opt: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk that starts inside a line is placed at its column, not indented by the line
    before it: 6,000 chunks on one line (114 KB) were handed to the parser as 340 MB of spaces
    (12 s, 470 MB; 20,000 took 106 s and gigabytes). An error in the last one is at its
    column, as iree-opt reports it."""
    handed = _parsed_lengths(monkeypatch)
    source = tmp_path / "line.mlir"
    text = " ".join(["module {} // -----"] * 6000) + " %x = \n"
    source.write_text(text)
    ours = opt(source, "--split-input-file")
    assert len(handed) == 6001 and sum(handed) <= len(text)
    theirs = iree_opt(source, "--split-input-file", check=False)
    assert theirs.returncode == ours.code == 1
    located = theirs.stderr.split(" error: ")[0]
    assert located == f"{source}:1:{len(text) - 1}:"  # the line's end, after the last marker
    assert ours.err.startswith(located + " error: ")


def test_positions_in_a_later_chunk_are_the_files(opt: Runner, tmp_path: Path) -> None:
    """A reader's check (nesting), the pass's error at an op, and printed locations all count
    the lines of the chunks before (chunk 3 starts at line 9)."""
    nested = "func.func @f() {\n" + "[" * 300 + "\n}\n"
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([EMPTY, EMPTY, nested]))
    result = opt(source, "--split-input-file")
    assert (
        without_source_lines(result.err)
        == f"{source}:10:300: error: input nests deeper than 256 levels of brackets\n"
    )

    source.write_text("// -----\n".join([EMPTY, EMPTY, F8_CONV]))
    result = opt(source, "--split-input-file", "-p", "stablehlo-canonicalize-conv{gate=general}")
    assert result.err.startswith(f"{source}:10:8: error: EUET001: "), result.err

    source.write_text("// -----\n".join([EMPTY, EMPTY, EMPTY]))
    result = opt(source, "--split-input-file", "--mlir-print-debuginfo")
    assert result.code == 0, result.err
    returns = re.findall(rf'#loc2 = loc\("{source}":(\d+):(\d+)\)', result.out)
    assert returns == [("2", "3"), ("6", "3"), ("10", "3")]
    modules = re.findall(rf'#loc = loc\("{source}":(\d+):(\d+)\)', result.out)
    # the first chunk's implicit module has no line; a later one's is just after its marker
    assert modules == [("0", "0"), ("4", "9"), ("8", "9")]


MX_OWN_RESULT = MIGRAPHX_EXP.replace("migraphx.exp %x", "migraphx.exp %0")


def test_migraphx_chunks_are_parsed_alone_and_placed_in_the_file(
    opt: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xDSL's positions too: a parse error, a verifier's error at an op and the pass's errors in a
    later chunk are at their file lines, and no chunk is padded with the lines before it."""
    handed: list[str] = []
    parse = migraphx_io.parse_in_context

    def counting(context: object, text: str, filename: str) -> object:
        handed.append(text)
        return parse(context, text, filename)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(migraphx_io, "parse_in_context", counting)
    monkeypatch.setattr(xdsl_io, "parse_in_context", counting)
    source = tmp_path / "mx.mlir"
    chunks = [MIGRAPHX_EXP, MIGRAPHX_EXP, MX_OWN_RESULT]
    source.write_text("// -----\n".join(chunks))
    result = opt(source, "--split-input-file", "-p", "migraphx-to-tosa")
    assert result.err.startswith(f"{source}:12:3: error: 'migraphx.exp' op operand #0"), result.err
    # a later chunk starts with the rest of its marker's line, placed at its column
    assert handed == [chunks[0], *("\n" + chunk for chunk in chunks[1:])]
    source.write_text("// -----\n".join([MIGRAPHX_EXP, MIGRAPHX_EXP.replace("%x :", "%x ::")]))
    result = opt(source, "--split-input-file", "-p", "migraphx-to-tosa")
    assert result.err.startswith(f"{source}:7:"), result.err
