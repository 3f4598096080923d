"""`convcanon` called in this process, its exit status and what it wrote to each stream."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from convcanon.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `convcanon ARGV...`."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def verify_tells_apart(before: str | Path, wrong: str | Path, engine: str) -> str:
    """Check that `verify` on `engine` says ok of `before` against itself and a mismatch of
    `wrong` (a rewrite that is not one); returns the mismatch's stderr for further checks."""
    code, out, err = cli("verify", str(before), str(before), "--engine", engine)
    assert code == 0 and out.startswith(f"ok: 3 trial(s) on engine {engine}"), (out, err)
    code, out, err = cli("verify", str(before), str(wrong), "--engine", engine)
    assert code == 1 and f"error: mismatch (engine {engine}" in err, (out, err)
    return err
