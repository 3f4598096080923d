"""An empty path (`"$UNSET"` on a command line) is a file named `''` like any other: reading
it is `'': error: no such file`, writing it `'': error: the output path is empty`, for every
command. `run -o ''` printed its summary and `run --inputs ''` drew random inputs, both with
exit 0 (an empty path taken for none); a read of `''` said `: error: no such file`."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from convcanon.cli import main, opt_main

ADD = (
    "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
)
LINES = {
    "run ''": ["run", ""],
    "run M --inputs ''": ["run", "{m}", "--inputs", ""],
    "run M -o ''": ["run", "{m}", "-o", ""],
    "verify '' M": ["verify", "", "{m}"],
    "verify M ''": ["verify", "{m}", ""],
    "verify '' -p P": ["verify", "", "-p", "stablehlo-canonicalize-conv"],
    "explain ''": ["explain", ""],
    "graph '' -o G": ["graph", "", "-o", "{g}"],
    "import-migraphx ''": ["import-migraphx", ""],
    "convcanon-opt ''": [""],
}


@pytest.mark.parametrize("line", LINES.values(), ids=list(LINES))
def test_an_empty_path_is_an_error_that_names_it(tmp_path: Path, line: list[str]) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(ADD)
    argv = [w.format(m=module, g=tmp_path / "g.dot") for w in line]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = opt_main(argv) if line == [""] else main(argv)
    what = "the output path is empty" if line[-2:] == ["-o", ""] else "no such file"
    assert code == 1, err.getvalue()
    assert err.getvalue().splitlines()[-1] == f"'': error: {what}"
    assert module.read_text() == ADD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]
