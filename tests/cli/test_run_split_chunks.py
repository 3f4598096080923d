"""`convcanon run --split-input-file`: each chunk is a module of its own, HLO or migraphx/TOSA,
split before either interpreter sees it; its results carry the chunk in their names, and an
error in a chunk names it (before, the second chunk's results overwrote the first's in
`--output`, and two migraphx chunks were one module: `Redefinition of symbol "main"`)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from cli_support import MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]

from convcanon import xdsl_io
from convcanon.migraphx import io as migraphx_io


def _constant(value: float) -> str:
    return (
        "func.func @main() -> tensor<2xf32> {\n"
        f"  %0 = stablehlo.constant dense<{value}> : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(path.read_bytes())) as archive:
        return {name: archive[name] for name in archive.files}


def test_every_chunks_results_are_kept_under_its_name(cc: Runner, tmp_path: Path) -> None:
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([_constant(1.0), _constant(2.0)]))
    out = tmp_path / "out.npz"
    result = cc("run", source, "--split-input-file", "--output", out)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "chunk1.main: ok (0 check(s), 0 failed, 1 result(s))",
        "chunk2.main: ok (0 check(s), 0 failed, 1 result(s))",
    ]
    arrays = _npz(out)
    assert sorted(arrays) == ["chunk1.main.result0", "chunk2.main.result0"]
    np.testing.assert_array_equal(arrays["chunk1.main.result0"], [1.0, 1.0])
    np.testing.assert_array_equal(arrays["chunk2.main.result0"], [2.0, 2.0])


def test_migraphx_chunks_are_split_before_they_run(cc: Runner, tmp_path: Path) -> None:
    source = tmp_path / "chunks.mlir"
    source.write_text(MIGRAPHX_EXP + "// -----\n" + MIGRAPHX_EXP.replace("exp", "neg"))
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    x = np.array([0.5, -1.0], np.float32)
    np.savez(inputs, arg0=x)
    result = cc("run", source, "--split-input-file", "--inputs", inputs, "--output", out)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "chunk1.main: ok (1 result(s))",
        "chunk2.main: ok (1 result(s))",
    ]
    arrays = _npz(out)
    np.testing.assert_allclose(arrays["chunk1.main.result0"], np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(arrays["chunk2.main.result0"], -x)


def test_an_error_in_a_migraphx_chunk_is_at_its_line_in_the_file(
    cc: Runner, tmp_path: Path
) -> None:
    source = tmp_path / "chunks.mlir"
    source.write_text(
        MIGRAPHX_EXP + "// -----\n" + MIGRAPHX_EXP.replace("migraphx.exp", "migraphx.bogus")
    )
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.zeros(2, np.float32))
    result = cc("run", source, "--split-input-file", "--inputs", inputs)
    assert result.code == 1 and result.err.startswith(f"{source}:7:23: error: "), result.err
    assert len(diagnostic_lines(result.err)[:-1]) == 1, result.err


def test_an_entry_missing_from_every_chunk_names_each_chunk(cc: Runner, tmp_path: Path) -> None:
    source = tmp_path / "chunks.mlir"
    source.write_text("// -----\n".join([_constant(1.0), _constant(2.0)]))
    result = cc("run", source, "--split-input-file", "--entry", "f0")
    assert result.code == 1
    assert diagnostic_lines(result.err)[:-1] == [
        f"{source}:1:1: error: chunk 1: no function @f0 (functions: main)",
        f"{source}:5:9: error: chunk 2: no function @f0 (functions: main)",  # after the marker
    ]


def test_a_migraphx_function_is_named_as_it_is_called(cc: Runner, tmp_path: Path) -> None:
    """The function run when none is named (the only one, here @kernel) is named in the status
    line and in the results' names, as an HLO module's is (it was always called `main`)."""
    source = tmp_path / "kernel.mlir"
    source.write_text(MIGRAPHX_EXP.replace("@main", "@kernel"))
    out = tmp_path / "out.npz"
    result = cc("run", source, "--split-input-file", "--output", out)
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == "chunk1.kernel: ok (1 result(s))"
    assert list(_npz(out)) == ["chunk1.kernel.result0"]
    alone = cc("run", source)
    assert alone.code == 0 and alone.out.splitlines()[0] == "kernel: ok (1 result(s))"


def test_a_file_whose_chunks_hold_no_op_is_nothing_to_run(cc: Runner, tmp_path: Path) -> None:
    """It was an `ok` of nothing: exit 0, no line printed, an npz with no array written."""
    for text in ("", "// only a comment\n// -----\n\n"):
        source = tmp_path / "nothing.mlir"
        source.write_text(text)
        out = tmp_path / "out.npz"
        whole = cc("run", source)
        split = cc("run", source, "--split-input-file", "--output", out)
        assert split.code == whole.code == 1, (split, whole)
        assert split.err == whole.err, (split, whole)
        assert split.err.startswith(f"{source}: error: no @main"), split
        assert not out.exists()


def test_migraphx_chunks_are_read_without_the_lines_before_them(
    cc: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each migraphx chunk was padded with the newlines of the file before it: 200 chunks of
    200 lines ran 28 s, 800 over 5 minutes. What is parsed is now the file once (per parse),
    and a bad op on a marker's line, in the last chunk, is still at its line and column."""
    handed: list[int] = []
    parse = xdsl_io.parse_in_context

    def counting(context: object, text: str, filename: str) -> object:
        handed.append(len(text))
        return parse(context, text, filename)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(migraphx_io, "parse_in_context", counting)
    monkeypatch.setattr(xdsl_io, "parse_in_context", counting)
    source = tmp_path / "chunks.mlir"
    chunks = [MIGRAPHX_EXP + "// a comment\n" * 100] * 40
    bad = MIGRAPHX_EXP.replace("migraphx.exp", "migraphx.bogus")
    text = "// -----\n".join(chunks) + "// ----- " + bad
    source.write_text(text)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.zeros(2, np.float32))
    result = cc("run", source, "--split-input-file", "--inputs", inputs)
    line = text.count("\n", 0, text.index("migraphx.bogus")) + 1
    assert result.code == 1 and result.err.startswith(f"{source}:{line}:23: error: "), result.err
    assert handed and sum(handed) <= 2 * len(text)
