"""`verify` and `run` say which inputs they drew, by the program's element types: an integer conv
(i8 x i8 -> i32, as JAX exports it) is fed small integers, and its report must not call them
N(0,1), a float family (it did, for `verify` and `run` alike)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.cli import main
from convcanon.verify.inputs import DISTRIBUTIONS, random_array
from convcanon.verify.judge import is_float


@pytest.fixture(scope="module")
def integer_conv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A strided, padded i8 conv accumulating in i32, exported by JAX."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x: jax.Array, w: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(
            x,
            w,
            (2, 2),
            [(1, 2), (0, 1)],
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            preferred_element_type=jnp.int32,
        )

    x = jax.ShapeDtypeStruct((1, 9, 9, 3), jnp.int8)
    w = jax.ShapeDtypeStruct((3, 3, 3, 4), jnp.int8)
    path = tmp_path_factory.mktemp("intconv") / "int_conv.mlir"
    path.write_text(jax.jit(conv).lower(x, w).as_text())
    return str(path)


@pytest.mark.parametrize("engine", ["reference", "xla"])
def test_verify_of_an_integer_conv_names_integers(integer_conv, engine, capsys):
    code = main(["verify", integer_conv, "-p", "stablehlo-canonicalize-conv", "--engine", engine])
    out = capsys.readouterr().out
    assert code == 0, out
    last = out.rstrip().splitlines()[-1]
    assert "integer/bool element(s) equal" in last, out
    assert last.endswith("inputs integers in [-4, 4]"), out
    assert "N(0,1)" not in out, out


def test_run_of_an_integer_conv_names_integers(integer_conv, tmp_path, capsys):
    assert main(["run", integer_conv, "-o", str(tmp_path / "out.npz")]) == 0
    err = capsys.readouterr().err
    assert "2 argument(s) drawn at random (integers in [-4, 4]) with --seed 0" in err, err
    assert "N(0,1)" not in err, err


DTYPES = [
    np.dtype(t)
    for t in (np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.int32, np.uint8, np.bool_)
] + [np.dtype(t) for t in (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2)]
RANGE = re.compile(r"(unsigned )?integers in \[(-?\d+), (-?\d+)\]")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(DTYPES), max_size=5),
    st.sampled_from(DISTRIBUTIONS),
    st.integers(0, 2**32 - 1),
)
def test_description_is_what_was_drawn(dtypes, dist, seed):
    """Every drawn integer lies in its type and in a range the description names, every range
    named is drawn from, the family is named exactly when a float is drawn, booleans when a bool
    is."""
    from convcanon.reference.migraphx_interp import FlatArg
    from convcanon.verify.inputs import drawn_description

    rng = np.random.default_rng(seed)
    drawn = [random_array(d, (64,), rng, dist) for d in dtypes]
    for d, raw in zip(dtypes, drawn, strict=True):
        if d.kind in "iu" or d.name.startswith(("int", "uint")):  # not cast yet: nothing wraps
            held = ml_dtypes.iinfo(d)  # i2 holds -2..1
            assert held.min <= raw.min() and raw.max() <= held.max, (d, raw)
    inputs = [raw.astype(d) for d, raw in zip(dtypes, drawn, strict=True)]
    text = drawn_description(dist, [FlatArg((64,), d, d.name) for d in dtypes])
    ranges = {(bool(u), int(lo), int(hi)) for u, lo, hi in RANGE.findall(text)}
    used = set()
    for x in inputs:
        if is_float(x.dtype) or x.dtype == np.bool_:
            continue
        values = x.astype(np.int64)
        fits = {
            r
            for r in ranges
            if r[1] <= values.min()
            and values.max() <= r[2]
            and (r[0] == (x.dtype.name.startswith("uint")) or r[1] > 0)
        }
        assert fits, (text, x.dtype, values.min(), values.max())
        used |= fits
    assert used == ranges, text
    assert (dist.name in text) == any(is_float(d) for d in dtypes), text
    assert ("fair booleans" in text) == (np.dtype(np.bool_) in dtypes), text
    assert (text == "none (no arguments)") == (not dtypes), text
