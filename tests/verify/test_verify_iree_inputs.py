"""`verify --engine iree` takes what the other engines take: MHLO modules (legalized to
StableHLO, since IREE has no MHLO dialect) and a private `--entry` (IREE exports only public
functions), for HLO and for migraphx/TOSA modules; never `Dialect mhlo not found` or KeyError."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.cli import main, opt_main
from convcanon.driver import transform_text
from convcanon.hlo.context import parse_module, print_module
from convcanon.hlo.legalize import to_mhlo

from .test_verify_detects_mismatch import CONV, WRONG_PAD
from .test_verify_every_type import verify

pytest.importorskip("iree.compiler")
SEED = Path(__file__).parents[1] / "migraphx" / "fixtures" / "seed003_nhwc_conv.txt"


def _mhlo(text: str) -> str:
    module = parse_module(text, "m.mlir")
    to_mhlo(module)
    return print_module(module)


def test_mhlo_modules_run_on_iree(tmp_path: Path) -> None:
    before = _mhlo(CONV)
    assert "mhlo.convolution" in before
    after = transform_text(before, "m.mlir", "canonicalize-conv{gate=general}")
    code, out = verify(tmp_path, before, after, "--engine", "iree", "--trials", "1")
    assert code == 0, out
    # stdout and stderr together: the note that AFTER carries no locations comes first.
    assert "\nok: 1 trial(s) on engine iree" in out, out
    code, out = verify(tmp_path, before, _mhlo(WRONG_PAD), "--engine", "iree", "--trials", "1")
    assert code == 1 and "output 0 differs at index [0, 0, 0, 0]" in out, out


def test_private_hlo_entry_runs_on_iree(tmp_path: Path) -> None:
    private = CONV.replace("func.func @main", "func.func private @conv")
    code, out = verify(tmp_path, private, private, "--engine", "iree", "--entry", "conv")
    assert code == 0, out
    code, out = verify(tmp_path, private, private, "--engine", "iree")
    assert code == 1 and "error: no entry function @main (functions: conv)" in out, out


@pytest.fixture(scope="module")
def private_half_b(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The seed program and its TOSA lowering with the entry renamed to a private @kernel."""
    tmp = tmp_path_factory.mktemp("private_entry")
    paths = {k: str(tmp / f"{k}.mlir") for k in ("mx", "tosa")}
    assert main(["import-migraphx", str(SEED), "-o", paths["mx"]]) == 0
    assert opt_main([paths["mx"], "-p", "migraphx-to-tosa", "-o", paths["tosa"]]) == 0
    for path in paths.values():
        text = Path(path).read_text()
        assert "func.func @main(" in text
        Path(path).write_text(text.replace("func.func @main(", "func.func private @kernel("))
    return paths


@pytest.mark.parametrize(("before", "after"), [("mx", "tosa"), ("tosa", "tosa"), ("mx", "mx")])
def test_private_migraphx_and_tosa_entries_run_on_iree(
    private_half_b: dict[str, str], before: str, after: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [private_half_b[before], private_half_b[after], "--engine", "iree", "--entry", "kernel"]
    code = main(["verify", *argv, "--trials", "1"])
    out = "".join(capsys.readouterr())
    assert code == 0, out
    assert "ok: 1 trial(s) on engine iree" in out and "Traceback" not in out, out
