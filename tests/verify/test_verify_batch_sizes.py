"""`verify` on shape-polymorphic modules: both refined with StableHLO's own shape refinement at
each batch size (default 1, 2, 5; `--batch-sizes`), then compared at each on the chosen engine.

Refinement is checked against JAX itself: the refined module run on XLA gives what
`Exported.call` (which refines the same module its own way) gives, and leaves no dynamic op.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.driver import transform_text
from convcanon.refine import dynamic_arguments, refine_at_batch, refine_text

from .test_verify_every_type import verify

pytest.importorskip("jax")

from _polymorphic import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    DYNAMIC_OPS,
    DYNAMIC_OPS_ANYWHERE,
    PROGRAMS,
    assert_close,
    export_program,
    inputs_at,
    strided_convs,
)

CANON = "stablehlo-canonicalize-conv{gate=general}"


@pytest.fixture(scope="module")
def exported() -> dict[str, Any]:
    return {name: export_program(name) for name in PROGRAMS}


def _pair(exported: dict[str, Any], name: str) -> tuple[str, str]:
    before = exported[name].mlir_module()
    return before, transform_text(before, f"{name}.mlir", CANON)


def test_the_fixture_has_the_dynamic_idiom(exported: dict[str, Any]) -> None:
    """jax.export writes `lax.slice`/reshape on a symbolic batch with these ops: the refinement
    tests below see them for real."""
    text = exported["sliced"].mlir_module()
    assert all(op in text for op in DYNAMIC_OPS), text
    assert "jax.global_constant" in text and "@shape_assertion" in text


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_refinement_folds_every_dynamic_op(exported: dict[str, Any], name: str, batch: int):
    text = exported[name].mlir_module()
    assert dynamic_arguments(text, f"{name}.mlir")
    refined = refine_at_batch(text, f"{name}.mlir", batch)
    left = [op for op in (*DYNAMIC_OPS_ANYWHERE, "@shape_assertion") if op in refined]
    assert not left, refined
    assert dynamic_arguments(refined, "refined.mlir") == []
    assert f"tensor<{batch}x" in refined


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_canonical_module_refined_has_no_dynamic_op(
    exported: dict[str, Any], name: str, batch: int
):
    """Whatever dynamic ops the rewrite adds over the batch fold away at a concrete size."""
    _, after = _pair(exported, name)
    refined = refine_at_batch(after, f"{name}.after.mlir", batch)
    assert not [op for op in (*DYNAMIC_OPS_ANYWHERE, "@shape_assertion") if op in refined]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(list(PROGRAMS)), batch=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_refined_module_computes_what_jax_computes(
    exported: dict[str, Any], name: str, batch: int, seed: int
):
    from convcanon.verify.xla_engine import run_stablehlo_text

    args = inputs_at(name, batch, seed)
    refined = refine_at_batch(exported[name].mlir_module(), f"{name}.mlir", batch)
    (got,) = run_stablehlo_text(refined, args)
    want = np.asarray(exported[name].call(*args))
    assert_close(got, want)


@pytest.mark.parametrize("engine", ["reference", "xla", "iree"])
def test_verify_compares_at_each_default_batch_size(
    exported: dict[str, Any], engine: str, tmp_path: Path
):
    before, after = _pair(exported, "strided")
    code, out = verify(tmp_path, before, after, "--engine", engine, "--trials", "1")
    assert code == 0, out
    assert "shape-polymorphic: @main takes (tensor<?x16x16x3xf32>" in out, out
    lines = [line for line in out.splitlines() if line.startswith("batch ")]
    assert [line.split(":")[0] for line in lines] == ["batch 1", "batch 2", "batch 5"], out
    for line, batch in zip(lines, (1, 2, 5), strict=True):
        elements = batch * 3 * 3 * 4  # the output is b x 3 x 3 x 4
        assert f"ok: 1 trial(s) on engine {engine}; {elements} float element(s)" in line, line


@pytest.mark.parametrize("name", ["transposed", "sliced"])
def test_verify_batch_sizes_option(exported: dict[str, Any], name: str, tmp_path: Path):
    before, after = _pair(exported, name)
    code, out = verify(tmp_path, before, after, "--batch-sizes", "3,4", "--trials", "2")
    assert code == 0, out
    batches = [line.split(":")[0] for line in out.splitlines() if line.startswith("batch ")]
    assert batches == ["batch 3", "batch 4"], out


def test_a_wrong_after_fails_at_the_first_batch_size(exported: dict[str, Any], tmp_path: Path):
    """AFTER's conv pads one row more above, one less below: same shapes, a wrong answer."""
    before, _ = _pair(exported, "sliced")
    assert before.count("pad = [[1, 1], [1, 1]]") == 1
    after = before.replace("pad = [[1, 1], [1, 1]]", "pad = [[2, 0], [1, 1]]")
    code, out = verify(tmp_path, before, after, "--batch-sizes", "2,5")
    assert code == 1, out
    assert "error: batch size 2: mismatch (engine reference" in out, out


def test_a_static_module_is_verified_as_before(tmp_path: Path):
    import jax
    import jax.numpy as jnp

    fn, shapes = PROGRAMS["strided"]
    args = [
        jax.ShapeDtypeStruct(tuple(2 if d == "b" else d for d in s), jnp.float32) for s in shapes
    ]
    before = jax.jit(fn).lower(*args).as_text()
    after = transform_text(before, "static.mlir", CANON)
    code, out = verify(tmp_path, before, after, "--trials", "1")
    assert code == 0, out
    assert "shape-polymorphic" not in out and not out.startswith("batch"), out
    assert "ok: 1 trial(s) on engine reference; 72 float element(s)" in out, out


def test_a_batch_size_the_module_refuses_is_its_own_error(exported: dict[str, Any], tmp_path: Path):
    """jax.export's shape assertion `b >= 1` is kept by refinement: batch 0 never gets that far,
    --batch-sizes refuses it; `refine_text` given a zero batch reports the assertion."""
    before, after = _pair(exported, "strided")
    code, out = verify(tmp_path, before, after, "--batch-sizes", "0,2")
    assert code == 2 and "must be integers >= 1" in out, out
    shapes = [(0, 16, 16, 3), None, None]
    with pytest.raises(ConvcanonError, match="Expected value >= 1 for dimension variable 'b'"):
        refine_text(before, "strided.mlir", shapes)


def test_a_shape_that_does_not_fit_is_refused(exported: dict[str, Any]):
    text = exported["transposed"].mlir_module()
    with pytest.raises(
        ConvcanonError, match=r"argument 0 is tensor<\?x5x5x4xf32>: shape \[2, 5, 6, 4\]"
    ):
        refine_text(text, "transposed.mlir", [(2, 5, 6, 4), None])


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_canonical_polymorphic_module_has_no_strided_conv(exported: dict[str, Any], name: str):
    # EXPECTED TO FAIL until half A rewrites convs over a dynamic batch (issue 18 item 1): the
    # pass leaves them alone today ("dynamic shape" rejection). Remove the mark when it lands.
    _, after = _pair(exported, name)
    assert strided_convs(after) == []


def test_an_mhlo_polymorphic_pair_is_refined_too(exported: dict[str, Any], tmp_path: Path):
    """MHLO is legalized to StableHLO for refinement (StableHLO's passes refine StableHLO)."""
    from convcanon.hlo import legalize
    from convcanon.hlo.context import parse_module, print_module

    module = parse_module(exported["sliced"].mlir_module(), "sliced.mlir")
    legalize.to_mhlo(module)
    before = print_module(module)
    assert "mhlo.convolution" in before and "tensor<?x9x9x2xf32>" in before
    after = transform_text(before, "sliced.mhlo.mlir", "canonicalize-conv{gate=general}")
    code, out = verify(tmp_path, before, after, "--batch-sizes", "1,3", "--trials", "1")
    assert code == 0, out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("batch ")] == [
        "batch 1",
        "batch 3",
    ], out
