"""An integer program whose output is clipped to a constant says nothing about a rewrite: with
no float input to scale, verify skipped the signal check and said ok of a rewrite whose pad was
moved by one pixel (XLA and the reference alike). Now the inputs are drawn again, an output
that does not change is no signal, and the verdict is inconclusive (exit 3), as it is for a
saturated float program; an integer conv whose output responds is still ok."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.driver import transform_text

from .cli_calls import cli

pytest.importorskip("jax")

PAD = "low = [0, 1, 1, 0], high = [0, 2, 2, 0]"
MOVED = "low = [0, 2, 1, 0], high = [0, 1, 2, 0]"  # the window one row lower


def _exported(offset: int) -> str:
    """i8 x i8 -> i32 strided conv, times 1000 plus `offset`, clipped to [0, 6]."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def net(x: jax.Array, w: jax.Array) -> jax.Array:
        dims = ("NHWC", "HWIO", "NHWC")
        y = lax.conv_general_dilated(
            x, w, (2, 2), [(1, 1), (1, 1)], None, None, dims, preferred_element_type=jnp.int32
        )
        return jnp.clip(y * 1000 + offset, 0, 6)

    specs = [
        jax.ShapeDtypeStruct((1, 9, 9, 3), jnp.int8),
        jax.ShapeDtypeStruct((3, 3, 3, 4), jnp.int8),
    ]
    return jax.jit(net).lower(*specs).as_text()


def _pair(tmp_path: Path, offset: int) -> tuple[str, str]:
    before, broken = tmp_path / "before.mlir", tmp_path / "broken.mlir"
    text = _exported(offset)
    before.write_text(text)
    canonical = transform_text(text, str(before), "stablehlo-canonicalize-conv")
    assert isinstance(canonical, str) and PAD in canonical, canonical
    broken.write_text(canonical.replace(PAD, MOVED))
    return str(before), str(broken)


@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_a_moved_pad_under_a_saturated_integer_output_is_inconclusive(engine, tmp_path):
    before, broken = _pair(tmp_path, 1_000_000)  # every output clipped to 6
    code, out, err = cli("verify", before, broken, "--engine", engine)
    assert code == 3 and out.startswith(f"inconclusive: 3 trial(s) on engine {engine}"), (out, err)
    assert (
        "output 0 does not respond (0% of its elements move when the inputs are drawn again" in out
    )


def test_an_integer_output_that_responds_still_judges(tmp_path):
    before, broken = _pair(tmp_path, 0)  # 0 or 6 by the conv's sign
    code, out, err = cli("verify", before, before, "--engine", "xla")
    assert code == 0 and out.startswith("ok: 3 trial(s) on engine xla"), (out, err)
    code, out, err = cli("verify", before, broken, "--engine", "xla")
    assert code == 1 and "error: mismatch (engine xla" in err, (out, err)
