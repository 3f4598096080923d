"""f32 U-Net-decoder-like transposed convs from JAX (lhs-dilated, strided, a skip concat) and
their canonicalization: exact in f64, so `verify` must pass them on every seed, on our reference
interpreter and on XLA (the old fixed tolerance flagged such rewrites about one run in seven)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convcanon.driver import transform_text

from .test_verify_every_type import verify

jax = pytest.importorskip("jax")


def _decoder_text() -> str:
    import jax.numpy as jnp

    dims = ("NHWC", "HWIO", "NHWC")

    def decoder(x, skip, w1, w2, w3):
        y = jax.lax.conv_transpose(x, w1, (2, 2), "SAME", dimension_numbers=dims)
        y = jax.nn.relu(jnp.concatenate([y, skip], axis=-1))
        y = jax.nn.relu(jax.lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=dims))
        return jax.lax.conv_transpose(y, w3, (2, 2), ((1, 2), (1, 2)), dimension_numbers=dims)

    shapes = [(2, 8, 8, 32), (2, 16, 16, 16), (3, 3, 32, 16), (3, 3, 32, 16), (4, 4, 16, 8)]
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return jax.jit(decoder).lower(*args).as_text()


@pytest.fixture(scope="module")
def decoder() -> tuple[str, str]:
    before = _decoder_text()
    after = transform_text(before, "decoder.mlir", "stablehlo-canonicalize-conv{gate=general}")
    assert after.count("stablehlo.convolution") > before.count("stablehlo.convolution")
    return before, after


@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_canonicalized_decoder_passes_on_every_seed(
    decoder: tuple[str, str], engine: str, tmp_path: Path
) -> None:
    before, after = decoder
    for seed in range(4):
        code, out = verify(
            tmp_path, before, after, "--engine", engine, "--seed", str(seed), "--trials", "2"
        )
        assert code == 0, out
        assert "judged against BEFORE evaluated in f64" in out and "inputs N(0,1)" in out, out


def test_decoder_with_one_phase_counted_twice_fails(
    decoder: tuple[str, str], tmp_path: Path
) -> None:
    """The last phase sum `a + b` becomes `a + a`: one phase dropped, another doubled (in the
    unmerged form, where phases are placed by interior pads and summed)."""
    before, _ = decoder
    options = "stablehlo-canonicalize-conv{gate=general merge-phases=none}"
    after = transform_text(before, "decoder.mlir", options)
    last_add = after.rindex("stablehlo.add ")
    operands = after[last_add:].split("\n", 1)[0].split()[1:3]  # "%a," "%b"
    first = operands[0].rstrip(",")
    wrong = (
        after[:last_add]
        + f"stablehlo.add {first}, {first}"
        + after[last_add:].split(operands[1], 1)[1]
    )
    code, out = verify(tmp_path, before, wrong, "--trials", "1")
    assert code == 1 and "output 0 differs at index" in out, out


def test_decoder_with_one_phase_interleaved_twice_fails(
    decoder: tuple[str, str], tmp_path: Path
) -> None:
    """Merged, phases are interleaved by a concatenate: the last one `concatenate a, b` becomes
    `concatenate a, a`: one phase dropped, another placed twice."""
    before, after = decoder
    last = after.rindex("stablehlo.concatenate ")
    line = after[last:].split("\n", 1)[0]
    first, second = (v.strip() for v in line.split(",")[:2])
    first = first.removeprefix("stablehlo.concatenate ")
    wrong = after[:last] + line.replace(second, first, 1) + after[last + len(line) :]
    assert wrong != after
    code, out = verify(tmp_path, before, wrong, "--trials", "1")
    assert code == 1 and "output 0 differs at index" in out, out
