"""`verify -p PIPELINE` and `run` parse a module once for all that only read it.

`verify` read BEFORE for its signature, its memory plan, the local check and each trial's run on
the reference interpreter, each time parsing the same text again (8 parses at 3 trials, one more
per trial); `run` parsed a module once to draw its inputs and again to run it. Now readers share
one parse: what parses BEFORE is that, the pipeline (which changes its module) and the widening
to f64 (likewise), however many trials run. Counted, not timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _counting import record_calls  # pyright: ignore[reportMissingImports]

from convcanon.cli import main


@pytest.fixture(scope="module")
def two_convs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A strided conv, a tanh, a padded conv: two rewrite sites, as JAX exports them."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def net(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        dims = ("NHWC", "HWIO", "NHWC")
        y = jnp.tanh(lax.conv_general_dilated(x, w1, (2, 2), [(1, 1), (1, 1)], None, None, dims))
        return lax.conv_general_dilated(y, w2, (1, 1), [(1, 1), (1, 1)], None, None, dims)

    specs = [
        jax.ShapeDtypeStruct(shape, jnp.float32)
        for shape in ((1, 12, 12, 3), (3, 3, 3, 8), (3, 3, 8, 8))
    ]
    path = tmp_path_factory.mktemp("twoconvs") / "two_convs.mlir"
    path.write_text(jax.jit(net).lower(*specs).as_text())
    return str(path)


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every parse of module text: `parse_module`, as imported lazily and by `parse_file_text`."""
    import convcanon.hlo.context
    import convcanon.hlo.io

    calls = record_calls(monkeypatch, convcanon.hlo.context, "parse_module")
    monkeypatch.setattr(convcanon.hlo.io, "parse_module", convcanon.hlo.context.parse_module)
    return calls


@pytest.mark.parametrize("trials", [1, 3])
def test_verify_with_a_pipeline_parses_before_for_its_readers_once(
    two_convs, trials, monkeypatch, capsys
):
    text = Path(two_convs).read_text()
    calls = _parses(monkeypatch)
    args = ["verify", two_convs, "-p", "stablehlo-canonicalize-conv", "--trials", str(trials)]
    assert main(args) == 0, capsys.readouterr()
    assert capsys.readouterr().out.rstrip().splitlines()[-1].startswith(f"ok: {trials} trial")
    before = [c for c in calls if c[0] == text and c[1] == two_convs]
    # the pipeline's own parse, the widening's own, and one for every reader
    assert len(before) == 3, [len(c[0]) for c in before]
    # AFTER, its f64 copy's source, each conv alone and its rewrite: readers and widening
    repeated = {c[1] for c in calls if c[0] != text and calls.count(c) > 2}
    assert not repeated, repeated


def test_run_parses_its_module_once(two_convs, tmp_path, monkeypatch, capsys):
    text = Path(two_convs).read_text()
    calls = _parses(monkeypatch)
    assert main(["run", two_convs, "-o", str(tmp_path / "out.npz")]) == 0, capsys.readouterr()
    assert "drawn at random" in capsys.readouterr().err
    assert [c[1] for c in calls if c[0] == text] == [two_convs]
