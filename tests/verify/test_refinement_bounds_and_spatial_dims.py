"""Shape refinement as jax refines an exported module: a symbolic *spatial* dim, whose SAME
padding jax computes in helper functions called with different constants, refines and computes
what `Exported.call` computes; a batch size the module's dims cannot hold (over int64 for a type,
over int32 where the module reads a dim as a value, as jax's dimension variables do) is refused
before a type is built, located, never wrapped into some other size."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.refine import INT32_MAX, INT64_MAX, check_batch_sizes, refine_at_batch

from .test_verify_every_type import verify

pytest.importorskip("jax")

from _polymorphic import assert_close, export_program  # noqa: E402  # pyright: ignore[reportMissingImports]

DYNAMIC_ADD = (
    "func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<?xf32>\n"
    "  return %0 : tensor<?xf32>\n}\n"
)


def _spatial_export(stride: int) -> Any:
    """`jax.export` of a 3x3 SAME conv over a (1, h, h, 3) input, h symbolic."""
    import jax
    import jax.numpy as jnp
    from jax import export, lax

    def conv(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(
            x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    (h,) = export.symbolic_shape("h")
    x = jax.ShapeDtypeStruct((1, h, h, 3), jnp.float32)
    return export.export(jax.jit(conv))(x, jax.ShapeDtypeStruct((3, 3, 3, 4), jnp.float32))


@pytest.fixture(scope="module")
def spatial() -> dict[int, Any]:
    return {stride: _spatial_export(stride) for stride in (1, 2)}


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("h", [1, 2, 5])
def test_a_symbolic_spatial_dim_refines_as_jax_calls_it(
    spatial: dict[int, Any], stride: int, h: int
):
    from convcanon.verify.xla_engine import run_stablehlo_text

    exported = spatial[stride]
    rng = np.random.default_rng(h)
    args = [
        rng.standard_normal((1, h, h, 3), np.float32),
        rng.standard_normal((3, 3, 3, 4), np.float32),
    ]
    refined = refine_at_batch(exported.mlir_module(), "spatial.mlir", h)
    assert "?" not in refined and "func.call" not in refined and " call @" not in refined
    (got,) = run_stablehlo_text(refined, args)
    assert_close(got, np.asarray(exported.call(*args)))


def test_verify_takes_a_symbolic_spatial_dim(spatial: dict[int, Any], tmp_path: Path):
    text = spatial[2].mlir_module()
    code, out = verify(tmp_path, text, text, "--trials", "1")
    assert code == 0, out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("batch ")] == [
        "batch 1", "batch 2", "batch 5"
    ], out  # fmt: skip


def test_a_failed_refinement_is_located_with_its_whole_message():
    text = (
        "func.func @main(%a: tensor<?xf32>) -> tensor<4xf32> {\n"
        "  %0 = stablehlo.reshape %a : (tensor<?xf32>) -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n"
    )
    with pytest.raises(ConvcanonError) as raised:
        refine_at_batch(text, "m.mlir", 3)
    assert raised.value.render() == (
        "m.mlir:2:8: error: shape refinement failed: number of output "
        "elements (4) doesn't match expected number of elements (3)"
    )


@functools.cache
def _strided_text() -> str:
    return export_program("strided").mlir_module()


_BOUNDARIES = [INT32_MAX, 1 << 32, INT64_MAX, 10**23]


@given(base=st.sampled_from(_BOUNDARIES), delta=st.integers(-2, 2))
@settings(max_examples=60, deadline=None)
def test_batch_sizes_across_the_int32_and_int64_boundaries(base: int, delta: int):
    """A module that reads its batch as an i32 (jax's `get_dimension_size`) holds up to 2^31-1;
    one that only types it, up to 2^63-1. Past that: refused, naming the bound; below: refined."""
    batch = base + delta
    reads_i32 = _strided_text()
    for text, bound in ((reads_i32, INT32_MAX), (DYNAMIC_ADD, INT64_MAX)):
        if batch > bound:
            with pytest.raises(ConvcanonError) as raised:
                check_batch_sizes(text, "m.mlir", [1, batch])
            assert raised.value.message.startswith(f"batch size {batch}: dim {batch} does not fit")
            named = INT64_MAX if batch > INT64_MAX else bound
            assert f"{named})" in raised.value.message and raised.value.loc is not None
        else:
            check_batch_sizes(text, "m.mlir", [1, batch])
            if text is DYNAMIC_ADD:
                assert f"tensor<{batch}xf32>" in refine_at_batch(text, "m.mlir", batch)


@pytest.mark.parametrize("batch", ["9223372036854775808", "100000000000000000000000", "4294967297"])
def test_verify_refuses_a_batch_size_the_module_cannot_hold(batch: str, tmp_path: Path):
    text = export_program("strided").mlir_module()
    code, out = verify(tmp_path, text, text, "--batch-sizes", f"1,{batch}")
    assert code == 1 and "Traceback" not in out, out
    assert f"error: batch size {batch}: dim {batch} does not fit" in out, out
    assert "batch 1:" not in out  # refused before any size runs


def test_repeated_batch_sizes_run_once(tmp_path: Path):
    code, out = verify(
        tmp_path,
        DYNAMIC_ADD,
        DYNAMIC_ADD,
        "--batch-sizes",
        ",".join(["1"] * 2000 + ["2", "1"]),
        "--trials",
        "1",
    )
    assert code == 0, out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("batch ")] == [
        "batch 1",
        "batch 2",
    ]
