"""`convcanon run`, `verify`, `import-migraphx` and `convcanon-opt -p migraphx-to-tosa` hold
declared strides to one rule: by default a contradicted intermediate is one located warning
(printed once per command, however many engines verify runs) and the value is used; with
`--strict-strides` (the pass option `strict-strides=true`) it is that same located error."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines, without_source_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main, opt_main

# a transpose declared with its input's strides, and an argument read every second element
KERNEL = """\
func.func @main(%a: !migraphx.shaped<2x3xf32, 6x2>) -> !migraphx.shaped<3x2xf32, 2x1> {
  %t = migraphx.transpose %a {permutation = [1, 0]} : <2x3xf32, 6x2> -> <3x2xf32, 6x2>
  %n = migraphx.neg %t : <3x2xf32, 6x2> -> <3x2xf32, 2x1>
  return %n : !migraphx.shaped<3x2xf32, 2x1>
}
"""
WARNING = ":2:3: warning: %t is declared with strides 6x2, but migraphx.transpose computes 2x6"
PROGRAM = (
    "a = @param:a -> float_type, {2, 3}, {6, 2}\n"
    "@1 = transpose[permutation={1, 0}](a) -> float_type, {3, 2}, {2, 6}\n"
    "@2 = @return(@1)\n"
)


def _cli(args: list[str], opt: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = (opt_main if opt else main)(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    return path


def test_run_warns_once_and_computes_with_the_ops_strides(kernel: Path, tmp_path: Path) -> None:
    flat = np.arange(11, dtype=np.float32)  # element space of <2x3, 6x2>: 1 + 6 + 4
    np.savez(tmp_path / "in.npz", arg0=flat)
    code, _, err = _cli(
        [
            "run",
            str(kernel),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--output",
            str(tmp_path / "out.npz"),
        ]
    )
    assert code == 0, err
    assert err.count("warning:") == 1 and f"{kernel}{WARNING}" in err
    logical = flat[np.arange(2)[:, None] * 6 + np.arange(3)[None, :] * 2]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["result0"], -logical.T.reshape(-1))


def test_verify_on_iree_warns_once_and_passes(kernel: Path, tmp_path: Path) -> None:
    lowered = tmp_path / "k.tosa.mlir"
    code, _, err = _cli([str(kernel), "-p", "migraphx-to-tosa", "-o", str(lowered)], opt=True)
    assert code == 0 and err.count("warning:") == 1 and WARNING in err, err
    code, out, err = _cli(["verify", str(kernel), str(lowered), "--engine", "iree"])
    assert code == 0, err
    assert "\nok: 3 trial(s)" in out and err.count("warning:") == 1 and WARNING in err


@pytest.mark.parametrize(
    "command",
    [
        ["run", "{k}", "--strict-strides"],
        ["verify", "{k}", "{k}", "--strict-strides"],
        ["verify", "{k}", "{k}", "--engine", "iree", "--strict-strides"],
    ],
)
def test_strict_strides_is_the_same_error_everywhere(kernel: Path, command: list[str]) -> None:
    code, _, err = _cli([str(kernel) if c == "{k}" else c for c in command])
    assert code == 1
    assert diagnostic_lines(err.strip())[-1] == (
        f"{kernel}:1:1: error: !migraphx.shaped layout is not representable: the smallest "
        "non-zero stride is 2 (dim 1), must be 1"
    )


def test_strict_pass_option_reports_the_contradiction(tmp_path: Path) -> None:
    path = tmp_path / "t.mlir"
    path.write_text(KERNEL.replace("6x2>", "3x1>").replace("<2x3xf32, 6x2>", "<2x3xf32, 3x1>"))
    code, out, err = _cli([str(path), "-p", "migraphx-to-tosa{strict-strides=true}"], opt=True)
    assert (code, out) == (1, "")
    assert without_source_lines(err) == (
        f"{path}:2:3: error: %t is declared with strides 3x1, but migraphx.transpose computes "
        "1x3 (strict-strides)\n"
    )


def test_import_accepts_a_gathered_parameter_and_strict_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "p.txt"
    path.write_text(PROGRAM)
    code, out, err = _cli(["import-migraphx", str(path)])
    assert code == 0 and "<2x3xf32, 6x2>" in out and "warning" not in err, err
    code, out, err = _cli(["import-migraphx", str(path), "--strict-strides"])
    assert (code, out) == (1, "")
    assert "p.txt:1:" in err and "is not representable: the smallest non-zero stride is 2" in err
