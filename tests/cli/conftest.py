"""Run `convcanon-opt` / `convcanon` in-process (no interpreter start-up per call) and the shared
inputs of the CLI tests."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from cli_support import CNN, Result, Runner  # pyright: ignore[reportMissingImports]

from convcanon.cli import main, opt_main


def _call(entry: Callable[[Sequence[str]], int], args: Sequence[object]) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry([str(a) for a in args])
    assert "Traceback" not in err.getvalue()
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def opt() -> Runner:
    """`opt(*argv)`: convcanon-opt's exit code, stdout and stderr."""
    return lambda *args: _call(opt_main, args)


@pytest.fixture
def cc() -> Runner:
    """`cc(*argv)`: the convcanon command's exit code, stdout and stderr."""
    return lambda *args: _call(main, args)


@pytest.fixture(scope="session")
def mhlo_cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example CNN legalized to MHLO."""
    from convcanon.hlo import legalize
    from convcanon.hlo.context import make_context, parse_module

    module = parse_module(CNN.read_text(), str(CNN), make_context())
    legalize.to_mhlo(module)
    path = tmp_path_factory.mktemp("mhlo") / "cnn.mhlo.mlir"
    path.write_text(str(module))
    return path
