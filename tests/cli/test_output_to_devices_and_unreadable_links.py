"""`-o` that names the input is refused only where writing would replace the input file: a device
read and written (`/dev/null -o /dev/null`, as mlir-opt runs it) was refused as a usage error.
A symbolic link that cannot be read (another user's `/proc/PID/fd/N`) is `OUT: error: ...`,
where it was a PermissionError traceback (os.path.realpath lets readlink's error through)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_support import CNN, Runner  # pyright: ignore[reportMissingImports]


def test_a_device_read_and_written_is_no_input_overwritten(opt: Runner) -> None:
    result = opt(os.devnull, "-o", os.devnull)
    assert (result.code, result.err) == (0, "")


def test_a_regular_file_as_its_own_output_is_still_refused(opt: Runner, tmp_path: Path) -> None:
    module = tmp_path / "m.mlir"
    module.write_bytes(CNN.read_bytes())
    alias = tmp_path / "alias.mlir"
    alias.symlink_to(module)
    result = opt(alias, "-o", module)
    assert result.code == 2
    assert "is the input file; refusing to overwrite it" in result.err
    assert module.read_bytes() == CNN.read_bytes()


@pytest.mark.parametrize("where", ["output", "output's directory"])
def test_an_unreadable_link_is_a_located_error(
    opt: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "target").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    output = link if where == "output" else link / "out.mlir"
    real_readlink = os.readlink

    def readlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> str:
        if os.fspath(path) == str(link):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_readlink(path, *args, **kwargs)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(os, "readlink", readlink)
    result = opt(CNN, "-o", output)
    assert result.code == 1
    assert result.err == f"{output}: error: cannot write the output: Permission denied\n"
    assert not list((tmp_path / "target").iterdir())
