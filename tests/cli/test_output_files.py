"""Outputs are written whole or not at all, and never replace what is not a regular file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from convcanon.diagnostics import write_atomically


def test_writing_to_dev_null_keeps_the_device():
    write_atomically("/dev/null", "module {}\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_new_file_gets_umask_permissions_and_no_temp_is_left(tmp_path: Path):
    target = tmp_path / "out.mlir"
    write_atomically(target, "module {}\n")
    assert target.read_text() == "module {}\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]


def test_failed_write_leaves_the_old_file(tmp_path: Path):
    target = tmp_path / "out.mlir"
    target.write_text("old\n")

    class Boom(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_atomically(target, Boom("new"))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.mlir"]
