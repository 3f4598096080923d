"""Shape-polymorphic programs as a serving user exports them: `jax.export` with a symbolic batch
`b` (strided convs, a transposed conv, and the slice/reshape idiom jax.export writes with
`get_dimension_size`, `real_dynamic_slice` and `dynamic_reshape`), shared by the tests of
`verify --batch-sizes`, `run` on polymorphic modules and `canonicalize(exported)`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

DIMS = ("NHWC", "HWIO", "NHWC")


def _strided_pair(x: Any, w7: Any, w3: Any) -> Any:
    """A ResNet stem: 7x7/2 SAME, then 3x3/2 VALID."""
    from jax import lax

    y = lax.conv_general_dilated(x, w7, (2, 2), "SAME", dimension_numbers=DIMS)
    return lax.conv_general_dilated(y, w3, (2, 2), "VALID", dimension_numbers=DIMS)


def _transposed(x: Any, w: Any) -> Any:
    """A U-Net up-sampling step: a 4x4 transposed conv, stride 2."""
    from jax import lax

    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=DIMS)


def _strided_then_sliced(x: Any, w: Any) -> Any:
    """A 3x3/2 conv, then `lax.slice` and a reshape over the symbolic batch: jax.export writes
    them as `real_dynamic_slice` and `dynamic_reshape` of `get_dimension_size`."""
    from jax import lax

    y = lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)), dimension_numbers=DIMS)
    batch = y.shape[0]
    z = lax.slice(y, (0, 1, 0, 0), (batch, 5, 5, 4), (1, 2, 2, 1))
    return z.reshape(batch, -1)


# name -> (function, argument shapes; "b" is the symbolic batch)
PROGRAMS: dict[str, tuple[Callable[..., Any], list[tuple[int | str, ...]]]] = {
    "strided": (_strided_pair, [("b", 16, 16, 3), (7, 7, 3, 8), (3, 3, 8, 4)]),
    "transposed": (_transposed, [("b", 5, 5, 4), (4, 4, 4, 3)]),
    "sliced": (_strided_then_sliced, [("b", 9, 9, 2), (3, 3, 2, 4)]),
}

DYNAMIC_OPS = ("real_dynamic_slice", "dynamic_reshape", "get_dimension_size")
DYNAMIC_OPS_ANYWHERE = (*DYNAMIC_OPS, "dynamic_broadcast_in_dim", "dynamic_slice", "tensor<?")


def export_program(name: str) -> Any:
    """`jax.export` of the program with `b` symbolic: a `jax.export.Exported`."""
    import jax
    import jax.numpy as jnp
    from jax import export

    fn, shapes = PROGRAMS[name]
    (b,) = export.symbolic_shape("b")
    args = [
        jax.ShapeDtypeStruct(tuple(b if d == "b" else d for d in s), jnp.float32) for s in shapes
    ]
    return export.export(jax.jit(fn))(*args)


def inputs_at(name: str, batch: int, seed: int = 0) -> list[np.ndarray]:
    """Random f32 arguments of the program at `batch`."""
    rng = np.random.default_rng(seed)
    _, shapes = PROGRAMS[name]
    return [
        rng.standard_normal(tuple(batch if d == "b" else int(d) for d in s)).astype(np.float32)
        for s in shapes
    ]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Equal up to f32 rounding at the output's scale (conv sums round in their own order)."""
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


_WINDOW_FIELD = re.compile(r"\b(stride|lhs_dilate) = \[([\d, ]+)\]")


def strided_convs(text: str) -> list[str]:
    """The conv lines that still stride or dilate their input (not canonical)."""
    return [
        line.strip()
        for line in text.splitlines()
        if "convolution" in line
        and any(int(v) != 1 for m in _WINDOW_FIELD.finditer(line) for v in m[2].split(","))
    ]
