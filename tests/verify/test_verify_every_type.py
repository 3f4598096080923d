"""`verify` catches wrong answers in every float type, and only those.

One strided conv in each type is BEFORE. Wrong AFTERs: every output negated, the window shifted by
one row, one polyphase partial dropped, one output element 10% larger. Right AFTERs: our
canonicalization (four phase convs summed: extra roundings in narrow types) and the same sum
associated the other way round. In f8 a 10% change is less than one rounding step of the type, so
only the f64 evaluation of AFTER can see it: the test would fail if verify judged in the type alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convcanon.cli import main
from convcanon.driver import transform_text

from .test_verify_detects_mismatch import CONV

TYPES = ["f64", "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2"]

NEGATED = CONV.replace(
    "  return %0 : tensor<1x5x5x4xf32>",
    "  %n = stablehlo.negate %0 : tensor<1x5x5x4xf32>\n  return %n : tensor<1x5x5x4xf32>",
)

# the window one row lower: same shapes, other input rows
SHIFTED = CONV.replace("pad = [[1, 1], [1, 1]]", "pad = [[0, 2], [1, 1]]")

# output element [0, 2, 3, 1] times 1.1 (a mask of ones with 1.1 there)
TEN_PERCENT = CONV.replace(
    "  return %0 : tensor<1x5x5x4xf32>",
    """  %tenth = stablehlo.constant dense<0.1> : tensor<1x1x1x1xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %one = stablehlo.constant dense<1.0> : tensor<1x5x5x4xf32>
  %spot = stablehlo.pad %tenth, %zero, low = [0, 2, 3, 1], high = [0, 2, 1, 2],
    interior = [0, 0, 0, 0] : (tensor<1x1x1x1xf32>, tensor<f32>) -> tensor<1x5x5x4xf32>
  %mask = stablehlo.add %one, %spot : tensor<1x5x5x4xf32>
  %r = stablehlo.multiply %0, %mask : tensor<1x5x5x4xf32>
  return %r : tensor<1x5x5x4xf32>""",
)


def typed(text: str, element: str) -> str:
    return text.replace("f32", element)


def canonical(element: str) -> str:
    # merge-phases=exact: the wrong AFTERs drop and reorder phases, which an image stem (3
    # features) zero-extended into one conv would not have
    return transform_text(
        typed(CONV, element),
        "conv.mlir",
        "stablehlo-canonicalize-conv{gate=general merge-phases=exact engine=xla-cpu}",
    )


def _phase_sum(text: str) -> tuple[list[str], str]:
    """The canonical module's chain of adds `a = p0 + p1; b = a + p2; c = b + p3` (in f32 for
    narrow types, converted once at the end)."""
    adds = re.findall(r"^\s*(%\d+) = stablehlo\.add (%\d+), (%\d+) : (\S+)$", text, re.M)
    assert len(adds) == 3, text  # four phases: the rewrite this test is about
    (a, p0, p1, ty), (b, _, p2, _), (c, _, p3, _) = adds
    return [a, b, c, p0, p1, p2, p3], ty


def dropped_phase(element: str) -> str:
    """Canonical output using the sum of three of its four phases."""
    text = canonical(element)
    (_, b, c, *_), _ = _phase_sum(text)
    head, _, rest = text.partition(f"{c} = stablehlo.add")
    line, _, tail = rest.partition("\n")
    return head + f"{c} = stablehlo.add" + line + "\n" + re.sub(rf"{c}\b", b, tail)


def reassociated(element: str) -> str:
    """Canonical output with its phases summed as (p0 + p1) + (p2 + p3)."""
    text = canonical(element)
    (a, b, c, _, _, p2, p3), ty = _phase_sum(text)
    text = re.sub(rf"^\s*{b} = stablehlo\.add .*\n", "", text, flags=re.M)
    pair = f"    {b} = stablehlo.add {p2}, {p3} : {ty}\n    {c} = stablehlo.add {a}, {b} : {ty}"
    return re.sub(rf"^\s*{c} = stablehlo\.add .*$", pair, text, flags=re.M)


WRONG = {
    "sign flip": lambda t: typed(NEGATED, t),
    "window shifted by one": lambda t: typed(SHIFTED, t),
    "dropped phase": dropped_phase,
    "one element 10% off": lambda t: typed(TEN_PERCENT, t),
}
RIGHT = {"canonicalized": canonical, "reassociated phase sum": reassociated}


def verify(tmp_path: Path, before: str, after: str, *args: str) -> tuple[int, str]:
    (tmp_path / "before.mlir").write_text(before)
    (tmp_path / "after.mlir").write_text(after)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["verify", str(tmp_path / "before.mlir"), str(tmp_path / "after.mlir"), *args])
    return code, out.getvalue()


@pytest.mark.parametrize("element", TYPES)
@pytest.mark.parametrize("wrong", list(WRONG))
def test_wrong_answers_fail_in_every_type(element: str, wrong: str, tmp_path: Path) -> None:
    code, out = verify(tmp_path, typed(CONV, element), WRONG[wrong](element))
    assert code == 1, out
    assert "mismatch (engine reference" in out and "output 0 differs at index" in out, out


@pytest.mark.parametrize("element", TYPES)
@pytest.mark.parametrize("right", list(RIGHT))
def test_exact_reassociations_pass_in_every_type(element: str, right: str, tmp_path: Path) -> None:
    for seed in ("0", "1", "2"):
        code, out = verify(tmp_path, typed(CONV, element), RIGHT[right](element), "--seed", seed)
        assert code == 0 and re.search(r"^ok: ", out, re.M), out  # exact: not `approximate`
        assert "float element(s) judged against BEFORE evaluated in f64" in out, out


SUM3 = """func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>, %z: tensor<64xf32>)
    -> tensor<64xf32> {
  %a = stablehlo.add %x, %y : tensor<64xf32>
  %b = stablehlo.add %a, %z : tensor<64xf32>
  return %b : tensor<64xf32>
}
"""
SUM3_OTHER_WAY = SUM3.replace("add %x, %y", "add %y, %z").replace("add %a, %z", "add %x, %a")


@pytest.mark.parametrize("element", TYPES)
def test_sum_reassociated_in_its_own_type_passes(element: str, tmp_path: Path) -> None:
    """(x + y) + z against x + (y + z), each add rounding in the type: different roundings, both
    as close to the truth."""
    for seed in ("0", "1", "2"):
        code, out = verify(
            tmp_path, typed(SUM3, element), typed(SUM3_OTHER_WAY, element), "--seed", seed
        )
        assert code == 0, out


@pytest.mark.parametrize("engine", ["xla", "iree"])
@pytest.mark.parametrize("element", ["f16", "bf16", "f8E4M3FN"])
def test_real_engines_judge_narrow_types(engine: str, element: str, tmp_path: Path) -> None:
    """On XLA and IREE (which accumulate f16/bf16/f8 convs differently from our interpreter and
    from each other) the canonicalized conv passes and a dropped phase fails (f32 runs on both
    engines in the U-Net decoder and mismatch tests)."""
    pytest.importorskip("jax" if engine == "xla" else "iree.compiler")
    before = typed(CONV, element)
    args = ["--engine", engine, "--trials", "1"]
    code, out = verify(tmp_path, before, canonical(element), *args)
    assert code == 0 and re.search(r"^ok: ", out, re.M), out
    code, out = verify(tmp_path, before, dropped_phase(element), *args)
    assert code == 1 and "output 0 differs at index" in out, out
