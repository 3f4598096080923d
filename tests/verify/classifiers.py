"""Classifier-shaped programs as users hand them to `verify`: softmax heads, batch 1, weights as
function arguments (what `jax.export` of a flax model gives), in plain JAX and flax, NHWC and
NCHW; and errors planted in their canonical form that keep every type."""

from __future__ import annotations

import re
from collections.abc import Callable

PIPELINE = "stablehlo-canonicalize-conv{gate=general merge-phases=exact}"


def plain_jax(layout: str) -> str:
    """Three strided/padded convs (an image stem, a VALID stride, a SAME stride), global mean
    pooling, a dense layer and a softmax; N(0,1) weights saturate it."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    nhwc = layout == "NHWC"
    numbers = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")

    def conv(x, w, stride, padding):
        return lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=numbers)

    def bias(y, b):
        return y + (b if nhwc else b[:, None, None])

    def classifier(x, w1, b1, w2, b2, w3, b3, dense, dense_bias):
        y = jax.nn.relu(bias(conv(x, w1, (2, 2), ((1, 2), (1, 2))), b1))
        y = jax.nn.relu(bias(conv(y, w2, (2, 2), "VALID"), b2))
        y = jax.nn.relu(bias(conv(y, w3, (1, 1), "SAME"), b3))
        pooled = jnp.mean(y, axis=(1, 2) if nhwc else (2, 3))
        return jax.nn.softmax(pooled @ dense + dense_bias)

    def kernel(h: int, w: int, i: int, o: int) -> jax.ShapeDtypeStruct:
        shape = (h, w, i, o) if nhwc else (o, i, h, w)
        return jax.ShapeDtypeStruct(shape, jnp.float32)

    def vector(n: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((n,), jnp.float32)

    image = (1, 12, 12, 3) if nhwc else (1, 3, 12, 12)
    specs = (
        jax.ShapeDtypeStruct(image, jnp.float32),
        kernel(3, 3, 3, 16),
        vector(16),
        kernel(3, 3, 16, 16),
        vector(16),
        kernel(3, 3, 16, 16),
        vector(16),
        jax.ShapeDtypeStruct((16, 10), jnp.float32),
        vector(10),
    )
    return jax.jit(classifier).lower(*specs).as_text(debug_info=True)


def flax_cnn(layout: str) -> str:
    """A flax.linen CNN applied with its parameters as the first argument (NCHW: the image is
    transposed in, as a PyTorch-layout export does)."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            if layout == "NCHW":
                x = jnp.transpose(x, (0, 2, 3, 1))
            x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))(x))
            x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME")(x))
            x = jnp.mean(x, axis=(1, 2))
            return nn.softmax(nn.Dense(10)(x))

    shape = (1, 10, 10, 3) if layout == "NHWC" else (1, 3, 10, 10)
    image = jnp.zeros(shape, jnp.float32)
    params = Net().init(jax.random.PRNGKey(0), image)
    specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    image_spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    return jax.jit(Net().apply).lower(specs, image_spec).as_text(debug_info=True)


PROGRAMS: dict[str, Callable[[], str]] = {
    "jax-NHWC": lambda: plain_jax("NHWC"),
    "jax-NCHW": lambda: plain_jax("NCHW"),
    "flax-NHWC": lambda: flax_cnn("NHWC"),
    "flax-NCHW": lambda: flax_cnn("NCHW"),
}

_PAD = re.compile(r"(stablehlo\.pad [^\n]*?low = \[)([\d, ]+)(\], high = \[)([\d, ]+)(\])")
_ADD_OF_CONVS = re.compile(r"(%\d+) = stablehlo\.add (%\d+), (%\d+) :")
# a kernel's phase slice: strided along its first (spatial) dim, as the lhs slices never are
_KERNEL_SLICE = re.compile(r"stablehlo\.slice (%\w+) \[(\d+):(\d+)(:\d+),")


def moved_pad(text: str) -> str:
    """The first explicit pad moved by a pixel along its first padded dim: low - 1, high + 1
    (the same shape)."""
    for match in _PAD.finditer(text):
        low = [int(v) for v in match[2].split(",")]
        high = [int(v) for v in match[4].split(",")]
        for d, amount in enumerate(low):
            if amount > 0:
                low[d], high[d] = amount - 1, high[d] + 1
                replaced = (
                    f"{match[1]}{', '.join(map(str, low))}{match[3]}"
                    f"{', '.join(map(str, high))}{match[5]}"
                )
                return text[: match.start()] + replaced + text[match.end() :]
    raise AssertionError("no pad with a low padding to move")


def dropped_phase(text: str) -> str:
    """The first sum of two partial convs keeps only its first term (`maximum(a, a)` = a)."""
    match = _ADD_OF_CONVS.search(text)
    assert match is not None, "no sum of partial convs"
    replaced = f"{match[1]} = stablehlo.maximum {match[2]}, {match[2]} :"
    return text[: match.start()] + replaced + text[match.end() :]


def swapped_tap(text: str) -> str:
    """The first kernel phase slice reads the neighbouring tap along its first dim (start and
    stop moved by one, inside the kernel)."""
    for match in _KERNEL_SLICE.finditer(text):
        start, stop = int(match[2]), int(match[3])
        line = text[match.start() : text.index("\n", match.start())]
        extent = int(re.search(r"\(tensor<(\d+)x", line)[1])  # type: ignore[index]
        shift = 1 if stop + 1 <= extent else -1 if start >= 1 else 0
        if shift:
            replaced = f"stablehlo.slice {match[1]} [{start + shift}:{stop + shift}{match[4]},"
            return text[: match.start()] + replaced + text[match.end() :]
    raise AssertionError("no kernel slice to move")


PLANTED: dict[str, Callable[[str], str]] = {
    "moved-pad": moved_pad,
    "dropped-phase": dropped_phase,
    "swapped-tap": swapped_tap,
}
