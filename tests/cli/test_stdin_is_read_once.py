"""Two inputs of one command are never both stdin, whatever it is called: `-` or a name of
descriptor 0 (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`). `cat m.mlir | convcanon run -
--inputs /dev/stdin` said `/dev/stdin: error: not an .npz archive (no zip header)` and `verify
- /dev/stdin` `no entry function @main (functions: none)`: the second read found nothing."""

from __future__ import annotations

import pytest
from cli_support import Runner  # pyright: ignore[reportMissingImports]

STDIN = ["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]


@pytest.mark.parametrize("second", STDIN[1:])
@pytest.mark.parametrize("first", STDIN)
def test_run_reads_stdin_once(cc: Runner, first: str, second: str) -> None:
    result = cc("run", first, "--inputs", second)
    assert result.code == 2, result
    assert result.err.strip() == (
        "error: FILE and --inputs cannot both be stdin (-): stdin is read once"
    )


@pytest.mark.parametrize("second", STDIN[1:])
@pytest.mark.parametrize("first", STDIN)
def test_verify_reads_stdin_once(cc: Runner, first: str, second: str) -> None:
    result = cc("verify", first, second)
    assert result.code == 2, result
    assert result.err.strip() == (
        "error: BEFORE and AFTER cannot both be stdin (-): stdin is read once"
    )
