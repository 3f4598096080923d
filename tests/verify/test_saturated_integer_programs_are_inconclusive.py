"""An output that is not a float says nothing about a rewrite when it does not change: verify
skipped the signal check for a program with no float input (an i8 conv clipped to a constant)
and for one with no float output (a float conv compared with 1e6: all false), and said ok of
a rewrite whose pad was moved by one pixel (XLA and the reference alike). Now the inputs are
drawn again, an output that does not change is no signal, and the verdict is inconclusive
(exit 3), as it is for a saturated float program; integer and argmax outputs that respond are
still judged, and the moved pad is a mismatch there.

Beside a float output that responds, an integer one was not checked at all (a scaling near 1
moves no integer, so it counted as moved): a model returning logits and a saturating f32->i8
convert, a pinned argmax or an always-false comparison of a conv said ok of the moved pad
under it. Its integer outputs are now drawn again too."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.driver import transform_text

from .cli_calls import cli, verify_tells_apart

pytest.importorskip("jax")

PAD = "low = [0, 1, 1, 0], high = [0, 2, 2, 0]"
MOVED = "low = [0, 2, 1, 0], high = [0, 1, 2, 0]"  # the window one row lower


def _exported(kind: str) -> str:
    """A strided conv, then: i8 x i8 -> i32 times 1000 (plus 1e6 when saturated) clipped to
    [0, 6]; or in f32, compared with 1e6, or its argmax. A `mixed-` kind also returns float
    logits of the input alone, first, and an f32->i8 convert of the conv (saturated with
    1e6 added; one that responds, without), a pinned argmax, or the comparison."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    element = jnp.int8 if kind.startswith("int") else jnp.float32
    head = kind.removeprefix("mixed-")

    def net(x: jax.Array, w: jax.Array) -> jax.Array | tuple[jax.Array, jax.Array]:
        dims = ("NHWC", "HWIO", "NHWC")
        wide = jnp.int32 if element == jnp.int8 else None
        y = lax.conv_general_dilated(
            x, w, (2, 2), [(1, 1), (1, 1)], None, None, dims, preferred_element_type=wide
        )
        if head == "comparison":
            out = y > 1e6
        elif head == "argmax":
            out = jnp.argmax(y.reshape(-1))
        elif head == "pinned-argmax":
            out = jnp.argmax(y + jnp.array([0.0, 0.0, 1e6, 0.0]), axis=-1)
        elif head.startswith("convert"):
            out = (y * 4 + (1e6 if head == "convert-saturated" else 0)).astype(jnp.int8)
        else:
            out = jnp.clip(y * 1000 + (1_000_000 if head == "int-saturated" else 0), 0, 6)
        return (jnp.tanh(x).mean(axis=(1, 2)), out) if kind.startswith("mixed-") else out

    specs = [
        jax.ShapeDtypeStruct((1, 9, 9, 3), element),
        jax.ShapeDtypeStruct((3, 3, 3, 4), element),
    ]
    return jax.jit(net).lower(*specs).as_text()


def _pair(tmp_path: Path, kind: str) -> tuple[str, str]:
    before, broken = tmp_path / "before.mlir", tmp_path / "broken.mlir"
    text = _exported(kind)
    before.write_text(text)
    canonical = transform_text(text, str(before), "stablehlo-canonicalize-conv")
    assert isinstance(canonical, str) and PAD in canonical, canonical
    broken.write_text(canonical.replace(PAD, MOVED))
    return str(before), str(broken)


@pytest.mark.parametrize("kind", ["int-saturated", "comparison"])
@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_a_moved_pad_under_an_output_that_never_changes_is_inconclusive(kind, engine, tmp_path):
    before, broken = _pair(tmp_path, kind)
    code, out, err = cli("verify", before, broken, "--engine", engine)
    assert code == 3 and out.startswith(f"inconclusive: 3 trial(s) on engine {engine}"), (out, err)
    assert (
        "output 0 does not respond (0% of its elements move when the inputs are drawn again" in out
    )


@pytest.mark.parametrize("kind", ["int", "argmax"])
def test_an_output_that_responds_still_judges(kind, tmp_path):
    before, broken = _pair(tmp_path, kind)
    verify_tells_apart(before, broken, "xla")


@pytest.mark.parametrize(
    "kind", ["mixed-convert-saturated", "mixed-pinned-argmax", "mixed-comparison"]
)
@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_a_moved_pad_under_an_integer_output_beside_a_float_one_is_inconclusive(
    kind, engine, tmp_path
):
    before, broken = _pair(tmp_path, kind)
    code, out, err = cli("verify", before, broken, "--engine", engine)
    assert code == 3 and out.startswith(f"inconclusive: 3 trial(s) on engine {engine}"), (out, err)
    assert (
        "output 1 does not respond (0% of its elements move when the inputs are drawn again" in out
    )
    assert "output 0 does not respond" not in out, out


@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_an_integer_output_beside_a_float_one_that_responds_still_judges(engine, tmp_path):
    before, broken = _pair(tmp_path, "mixed-convert")
    err = verify_tells_apart(before, broken, engine)
    assert "output 1 differs" in err, err
