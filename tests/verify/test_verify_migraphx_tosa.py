"""`convcanon verify` on half B's modules: a migraphx program and its TOSA lowering agree on the
reference interpreter and (migraphx reference vs IREE) on `--engine iree`; an AFTER that writes its
result in the wrong layout fails, naming the first wrong flat index."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.cli import main, opt_main

SEED = Path(__file__).parents[1] / "migraphx" / "fixtures" / "seed003_nhwc_conv.txt"
NHWC, NCHW = "8x1x4x2", "8x4x2x1"


def _wrong_layout(text: str) -> str:
    """The exp result and the function result written NCHW instead of NHWC: same flat size,
    equal at flat index 0, different from index 1 on ((c1,h0,w0) vs (c0,h0,w1))."""
    lines = []
    for line in text.splitlines(keepends=True):
        if any(name in line for name in ("func.func", "migraphx.exp", "func.return")):
            head, _, tail = line.rpartition(NHWC)
            line = head + NCHW + tail
        lines.append(line)
    return "".join(lines)


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The seed imported, lowered, and a wrong-layout variant of both."""
    tmp = tmp_path_factory.mktemp("verify_half_b")
    paths = {k: str(tmp / f"{k}.mlir") for k in ("seed", "seed_tosa", "wrong", "wrong_tosa")}
    assert main(["import-migraphx", str(SEED), "-o", paths["seed"]]) == 0
    Path(paths["wrong"]).write_text(_wrong_layout(Path(paths["seed"]).read_text()))
    for source, target in (("seed", "seed_tosa"), ("wrong", "wrong_tosa")):
        assert opt_main([paths[source], "-p", "migraphx-to-tosa", "-o", paths[target]]) == 0
    return paths


def _verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("engine", ["reference", "iree"])
def test_seed_and_its_lowering_agree(
    programs: dict[str, str], engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(capsys, programs["seed"], programs["seed_tosa"], "--engine", engine)
    assert code == 0, out
    assert f"ok: 3 trial(s) on engine {engine}" in out
    assert "judged against BEFORE evaluated in f64 (migraphx reference)" in out, out
    if engine == "iree":
        assert "before is a migraphx module: it runs on the reference interpreter" in out


@pytest.mark.parametrize(
    ("engine", "after"),
    [("reference", "wrong"), ("reference", "wrong_tosa"), ("iree", "wrong_tosa")],
)
def test_wrong_layout_after_fails_at_its_first_wrong_index(
    programs: dict[str, str], engine: str, after: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(capsys, programs["seed"], programs[after], "--engine", engine)
    assert code == 1
    assert "output 0 differs at index [1]" in out
    assert "Traceback" not in out


def test_two_migraphx_modules_both_lower_to_iree(
    programs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(capsys, programs["seed"], programs["wrong"], "--engine", "iree")
    assert code == 1
    assert "output 0 differs at index [1]" in out
    assert "reference interpreter" not in out


def test_xla_engine_and_mixed_halves_are_clear_errors(
    programs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(capsys, programs["seed"], programs["seed_tosa"], "--engine", "xla")
    assert code == 1
    assert "engine 'xla' runs StableHLO; migraphx/TOSA modules run on reference or iree" in out
    hlo = Path(programs["seed"]).with_name("hlo.mlir")
    hlo.write_text(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.negate %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
    )
    code, out = _verify(capsys, str(hlo), programs["seed"])
    assert code == 1
    assert "cannot compare a StableHLO/MHLO module with a migraphx/TOSA module" in out


def test_tosa_before_is_its_own_truth_and_says_why(
    programs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(capsys, programs["seed_tosa"], programs["seed_tosa"])
    assert code == 0, out
    assert "against BEFORE itself (no f64 copy: the TOSA reference accumulates in f32)" in out
