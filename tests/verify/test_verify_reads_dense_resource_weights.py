"""`convcanon verify --engine xla` checks a module whose weights are `dense_resource` blobs (the
README's "From PyTorch" path): XLA, and the f64 copy verify judges against, read the blob's values;
a blob that does not fit its tensor or a missing blob is a located error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main, opt_main
from convcanon.verify.widen import widen_text

from .resource_modules import add_constant_pair, blob_hex, resource_section

WEIGHTS = np.array([1.0, 2.0], np.float32)
RESOURCE, _ = add_constant_pair(WEIGHTS, "f32")


def _nchw_conv_with_resource_weight() -> str:
    """An NCHW/OIHW strided, padded conv exported by JAX, its weight made a dense_resource blob."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    weight = np.random.default_rng(7).standard_normal((4, 3, 3, 3)).astype(np.float32)

    def conv(x: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(
            x,
            jnp.asarray(weight),
            (2, 2),
            [(1, 1), (1, 1)],
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )

    exported = jax.export.export(jax.jit(conv))(jax.ShapeDtypeStruct((1, 3, 9, 9), jnp.float32))
    text = exported.mlir_module()
    literal = f'dense<"0x{weight.tobytes().hex().upper()}">'
    assert text.count(literal) == 1, "the weight is not one hex literal in JAX's export"
    text = text.replace(literal, "dense_resource<conv_weight>")
    return text + resource_section({"conv_weight": blob_hex(weight)})


def test_a_pytorch_style_conv_canonicalized_verifies_on_xla(tmp_path: Path, capsys) -> None:
    before, after = tmp_path / "before.mlir", tmp_path / "after.mlir"
    before.write_text(_nchw_conv_with_resource_weight())
    pipeline = "stablehlo-canonicalize-conv{gate=general}"
    assert opt_main([str(before), "-p", pipeline, "-o", str(after)]) == 0
    rewritten = after.read_text()
    assert "dense_resource<conv_weight>" in rewritten  # the pass kept the weight a blob
    assert "stablehlo.transpose" in rewritten or "stablehlo.pad" in rewritten  # really rewritten
    capsys.readouterr()
    code = main(["verify", str(before), str(after), "--engine", "xla", "--trials", "3"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert out.rstrip().splitlines()[-1].startswith("ok: 3 trial(s) on engine xla;"), out


def test_the_f64_copy_reads_a_resource_weight() -> None:
    widened = widen_text(RESOURCE, "m.mlir")
    assert widened.text is not None, widened.reason
    assert "dense_resource" not in widened.text and "dialect_resources" not in widened.text
    constant = next(ln for ln in widened.text.splitlines() if "stablehlo.constant" in ln)
    assert "tensor<2xf64>" in constant and "1.000000e+00, 2.000000e+00" in constant, constant


HOSTILE = {
    "short blob": (
        RESOURCE.replace(blob_hex(WEIGHTS), blob_hex(WEIGHTS[:1])),
        "2:27: error: dense_resource<weight>: the blob holds 4 bytes, tensor<2xf32> needs 8",
    ),
    "missing blob": (
        RESOURCE.replace("dense_resource<weight>", "dense_resource<other>"),
        "2:27: error: dense_resource<other>: the file has no such blob",
    ),
    "truncated section": (  # MLIR's own parser would crash on it (SIGSEGV)
        RESOURCE[: RESOURCE.index(blob_hex(WEIGHTS)) + 5],
        "10:15: error: dialect_resources section: a string is not closed before the end of"
        " the file",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_resource_is_a_located_error(case: str, tmp_path: Path, capsys) -> None:
    text, expected = HOSTILE[case]
    module = tmp_path / "m.mlir"
    module.write_text(text)
    code = main(["verify", str(module), str(module), "--engine", "xla"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    (message,) = diagnostic_lines(err.strip())
    assert message == f"{module}:{expected}", message
