"""`verify` cannot be fooled by a saturated head: classifiers with softmax heads and weights as
arguments (plain JAX and flax, NHWC and NCHW), canonicalized, then an error planted in one conv's
rewrite that keeps every type (a pad moved by a pixel, a dropped phase, a swapped kernel tap).
Before local validation and signal checks, `verify` said `ok` on five of six such models: N(0,1)
weights saturate the softmax to exact 0s and 1s. Each error is now caught by the local check at
the conv's location, and by the whole program (which draws fan-in-normalised weights when
N(0,1) ones do not move the outputs); what no input family moves is inconclusive, never ok."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from convcanon.cli import main
from convcanon.verify.local import after_pipeline

from .classifiers import PIPELINE, PLANTED, PROGRAMS

pytest.importorskip("flax")


@cache
def _program(name: str) -> tuple[str, str]:
    """BEFORE as JAX exports it (with locations) and AFTER printed with them."""
    before = PROGRAMS[name]()
    return before, after_pipeline(before, f"{name}.mlir", PIPELINE, with_locations=True)


def _verify(tmp_path: Path, capsys, before: str, after: str, *args: str) -> tuple[int, str, str]:
    (tmp_path / "before.mlir").write_text(before)
    (tmp_path / "after.mlir").write_text(after)
    code = main(["verify", str(tmp_path / "before.mlir"), str(tmp_path / "after.mlir"), *args])
    out, err = capsys.readouterr()
    return code, out, err


def _whole_verdict(out: str) -> str:
    """The whole program's summary line (the last line of stdout)."""
    return out.rstrip().splitlines()[-1] if out.strip() else ""


@pytest.mark.parametrize("program", PROGRAMS)
def test_correct_rewrites_pass_once_the_outputs_respond(tmp_path: Path, capsys, program: str):
    before, after = _program(program)
    code, out, err = _verify(tmp_path, capsys, before, after, "--trials", "1")
    assert code == 0, out + err
    local = [line for line in out.splitlines() if line.startswith("  ")]
    assert local and all(": ok: AFTER's max error" in line for line in local), out
    assert "N(0,1) inputs: output 0 does not respond" in out, out  # the saturated softmax
    assert _whole_verdict(out).startswith("ok: 1 trial(s)"), out
    assert "of the output's scale" in _whole_verdict(out)


@pytest.mark.parametrize("kind", PLANTED)
@pytest.mark.parametrize("program", PROGRAMS)
def test_each_planted_error_is_caught_locally_and_whole(
    tmp_path: Path, capsys, program: str, kind: str
):
    before, after = _program(program)
    planted = PLANTED[kind](after)
    assert planted != after
    code, out, err = _verify(tmp_path, capsys, before, planted, "--trials", "1")
    assert code == 1, out + err
    mismatches = [line for line in out.splitlines() if ": mismatch: " in line]
    assert len(mismatches) == 1, out  # one conv's rewrite was broken: that one is named
    where = mismatches[0].strip().split(": mismatch")[0]
    assert f"{where}: error: local check of this conv's rewrite" in err, err
    whole = _whole_verdict(out)
    assert not whole.startswith("ok"), out
    assert f"{tmp_path / 'after.mlir'}: error: mismatch" in err or whole.startswith(
        "inconclusive"
    ), out + err


@pytest.mark.parametrize("kind", PLANTED)
def test_each_planted_error_is_caught_on_xla(tmp_path: Path, capsys, kind: str):
    pytest.importorskip("jax")
    before, after = _program("jax-NCHW")
    planted = PLANTED[kind](after)
    code, out, err = _verify(tmp_path, capsys, before, planted, "--trials", "1", "--engine", "xla")
    assert code == 1, out + err
    assert "error: local check of this conv's rewrite: mismatch (engine xla" in err, err
    assert f"{tmp_path / 'after.mlir'}: error: mismatch (engine xla" in err, err


def test_without_locations_the_whole_program_still_catches_it(tmp_path: Path, capsys):
    """AFTER printed without locations: no conv pairs (a note says so), the whole program check
    alone, on network-like inputs, catches the moved pad."""
    before, _ = _program("jax-NHWC")
    plain = after_pipeline(before, "jax-NHWC.mlir", PIPELINE, with_locations=False)
    code, out, err = _verify(tmp_path, capsys, before, PLANTED["moved-pad"](plain), "--trials", "1")
    assert code == 1, out + err
    assert "local check not run for" in err and "local check of this conv" not in out + err, err
    assert "network-like (weights N(0,1)/sqrt(fan-in)" in err and "error: mismatch" in err, err


def test_verify_with_a_pipeline_judges_each_conv_then_the_whole(tmp_path: Path, capsys):
    before, _ = _program("flax-NHWC")
    path = tmp_path / "model.mlir"
    path.write_text(before)
    code = main(["verify", str(path), "-p", PIPELINE, "--trials", "1"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert out.startswith("local check: 2 rewritten conv(s)"), out
    assert _whole_verdict(out).startswith("ok: 1 trial(s)"), out


SATURATED = """func.func @main(%x: tensor<1x16xf32>, %w: tensor<16x10xf32>) -> tensor<1x10xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
    : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32>
  %k = stablehlo.constant dense<1.0e4> : tensor<1x10xf32>
  %l = stablehlo.multiply %d, %k : tensor<1x10xf32>
  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%l init: %c) applies stablehlo.maximum across dimensions = [1]
    : (tensor<1x10xf32>, tensor<f32>) -> tensor<1xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<1xf32>) -> tensor<1x10xf32>
  %s = stablehlo.subtract %l, %mb : tensor<1x10xf32>
  %e = stablehlo.exponential %s : tensor<1x10xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %t = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1]
    : (tensor<1x10xf32>, tensor<f32>) -> tensor<1xf32>
  %tb = stablehlo.broadcast_in_dim %t, dims = [0] : (tensor<1xf32>) -> tensor<1x10xf32>
  %p = stablehlo.divide %e, %tb : tensor<1x10xf32>
  return %p : tensor<1x10xf32>
}
"""


def test_an_output_no_input_family_moves_is_inconclusive(tmp_path: Path, capsys):
    """Logits scaled by 1e4: the softmax is one-hot under every input family."""
    code, out, err = _verify(tmp_path, capsys, SATURATED, SATURATED, "--trials", "1")
    assert code == 3, out + err
    whole = _whole_verdict(out)
    assert whole.startswith("inconclusive: 1 trial(s) on engine reference"), out
    assert "no input family moves every output" in whole and "output 0 does not respond" in whole


ILL_CONDITIONED = """func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = stablehlo.constant dense<1.0e6> : tensor<8xf32>
  %a = stablehlo.add %x, %c : tensor<8xf32>
  %y = stablehlo.subtract %a, %c : tensor<8xf32>
  return %y : tensor<8xf32>
}
"""


def test_an_ill_conditioned_program_is_named_with_both_errors(tmp_path: Path, capsys):
    """(x + 1e6) - 1e6 in f32 keeps x to 1/16: BEFORE is far from its own f64 value."""
    code, out, err = _verify(tmp_path, capsys, ILL_CONDITIONED, ILL_CONDITIONED, "--trials", "1")
    assert code == 3, out + err
    whole = _whole_verdict(out)
    assert whole.startswith("ill-conditioned: 1 trial(s)"), out
    assert "output 0: BEFORE in its own type is" in whole and ", AFTER " in whole, out
    assert "AFTER in f64 within 0 of the truth" in whole, out


def _chain(count: int) -> str:
    """`count` 3x3 convs in a chain, one a line, the kernel shared (each a stride-1 SAME conv
    whose padding the pass makes explicit)."""
    lines = [
        "func.func @main(%x: tensor<1x6x6x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32> {"
    ]
    previous = "%x"
    for k in range(count):
        lines.append(
            f"  %c{k} = stablehlo.convolution({previous}, %w) dim_numbers = [b, 0, 1, f]x"
            "[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} "
            "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
            "(tensor<1x6x6x4xf32>, tensor<3x3x4x4xf32>) -> tensor<1x6x6x4xf32>"
        )
        previous = f"%c{k}"
    lines += [f"  return {previous} : tensor<1x6x6x4xf32>", "}", ""]
    return "\n".join(lines)


def test_the_local_check_names_the_one_broken_conv_of_300(tmp_path: Path, capsys):
    before = _chain(300)
    (tmp_path / "before.mlir").write_text(before)
    after = after_pipeline(before, str(tmp_path / "before.mlir"), PIPELINE, with_locations=True)
    lines = after.splitlines(keepends=True)
    pads = [i for i, line in enumerate(lines) if "stablehlo.pad" in line]
    assert len(pads) == 300
    target = pads[137]  # conv %c137, on line 139 of BEFORE
    lines[target] = lines[target].replace(
        "low = [0, 1, 1, 0], high = [0, 1, 1, 0]", "low = [0, 0, 1, 0], high = [0, 2, 1, 0]"
    )
    code, out, err = _verify(tmp_path, capsys, before, "".join(lines), "--trials", "1")
    assert code == 1, out + err
    local = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert len(local) == 300, out
    bad = [line for line in local if ": ok: " not in line]
    assert bad == [line for line in local if line.startswith(f"{tmp_path / 'before.mlir'}:139:")]
    assert len(bad) == 1 and ": mismatch: " in bad[0], bad
    assert f"{tmp_path / 'before.mlir'}:139:11: error: local check of this conv's rewrite" in err
