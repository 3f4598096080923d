"""`convcanon` called in this process, its exit status and what it wrote to each stream."""

from __future__ import annotations

import contextlib
import io

from convcanon.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `convcanon ARGV...`."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
