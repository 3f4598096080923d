"""`--emit-bytecode-version N`: MLIR bytecode for an older reader, as mlir-opt writes it, checked
against iree-opt (a real mlir-opt): the version it stamps, and that it reads the bytes back."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CNN, Runner, iree_opt  # pyright: ignore[reportMissingImports]

from convcanon.fileio.reading import MLIR_BYTECODE_MAGIC


@pytest.mark.parametrize("version", [0, 1, 3, 5, 6])
def test_each_bytecode_version_is_stamped_and_read_as_iree_opt_writes_it(
    opt: Runner, tmp_path: Path, version: int
) -> None:
    ours, theirs = tmp_path / "ours.mlirbc", tmp_path / "theirs.mlirbc"
    flags = ["--emit-bytecode", f"--emit-bytecode-version={version}"]
    done = opt(CNN, "-p", "stablehlo-canonicalize-conv", *flags, "-o", ours)
    assert done.code == 0, done.err
    iree_opt(CNN, *flags, "-o", theirs)
    written = ours.read_bytes()
    assert written.startswith(MLIR_BYTECODE_MAGIC)
    # the version is the varint after the magic: the same as upstream's for the same request
    assert written[4] == theirs.read_bytes()[4] != 0
    # upstream reads it back as the module we print as text
    (text := tmp_path / "ours.mlir").write_text(opt(CNN, "-p", "stablehlo-canonicalize-conv").out)
    assert iree_opt(ours).stdout == iree_opt(text).stdout


def test_a_version_the_writer_cannot_write_is_its_error(opt: Runner, tmp_path: Path) -> None:
    out = tmp_path / "out.mlirbc"
    done = opt(CNN, "--emit-bytecode", "--emit-bytecode-version=99", "-o", out)
    assert done.code == 1 and not out.exists()
    assert done.err.startswith(
        f"{CNN}:1:1: error: unsupported version requested 99, must be in range"
    )


def test_a_version_without_emit_bytecode_is_a_usage_error(opt: Runner) -> None:
    done = opt(CNN, "--emit-bytecode-version=1")
    assert done.code == 2 and "give both" in done.err
