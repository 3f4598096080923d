"""The programs the run-time bench lowers, written in JAX the way their users write them.

Channels-last programs (NHWC/HWIO) take their weights as arguments, as a flax `apply` lowered with
its params does. Channels-first programs (NCHW/OIHW, NCW/OIW) close over numpy weights, which JAX
lowers to dense constants; `export` turns those into `dense_resource` blobs, the form torch-mlir's
`export_and_import(..., output_type="stablehlo")` writes. `export` can also lower either layout
the other way (weights as arguments or as constants): at batch 1 on small inputs a kernel that is
an argument is rearranged on every call, one that is a constant is folded at compile time.

Three sizes: `full` (the bench's programs as sized since issue 19), `quick` (no ResNet below
128x128: at 64x64 its last stage is 2x2, where XLA CPU once took ~65 ms for one 3x3 512->512 conv)
and `small` (batch 1, 32-64 px images, 0.25 s of audio: where each op's fixed cost counts).
Weights are He-initialised so activations stay finite through ResNet-50 (no inf/NaN to compare,
no denormals to slow one side down).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.resources import to_dense_resource

Pad = int | Sequence[tuple[int, int]]


class Params:
    """Weights made on first use while tracing, in call order, then constants or arguments.

    The forward functions ask for each weight by kind and shape; the n-th request of a trace gets
    the n-th weight, so the same function lowers with numpy constants (`bound` None) or with
    the traced arguments bound in (`bind`)."""

    def __init__(self, channels_first: bool, seed: int = 0) -> None:
        self.channels_first = channels_first
        self.rng = np.random.default_rng(seed)
        self.values: dict[str, np.ndarray] = {}
        self.bound: dict[str, Any] | None = None
        self.calls = 0

    def bind(self, weights: dict[str, Any] | None) -> Params:
        self.bound, self.calls = weights, 0
        return self

    def get(self, kind: str, shape: tuple[int, ...], fan_in: int = 0, base: float = 0.0) -> Any:
        """He-normal for a fan-in, else `base` plus a little noise (norm scales and shifts)."""
        name = f"p{self.calls:03d}_{kind}"
        self.calls += 1
        if name not in self.values:
            std = math.sqrt(2.0 / fan_in) if fan_in else 0.05
            noise = self.rng.standard_normal(shape).astype(np.float32) * np.float32(std)
            self.values[name] = (noise + np.float32(base)).astype(np.float32)
        return self.values[name] if self.bound is None else self.bound[name]

    def channel_axis(self, rank: int) -> int:
        return 1 if self.channels_first else rank - 1

    def per_channel(self, v: Any, rank: int) -> Any:
        """A per-channel vector shaped to broadcast along this layout's feature dim."""
        return v.reshape((-1,) + (1,) * (rank - 2)) if self.channels_first else v


def _dims(channels_first: bool, spatial: int) -> tuple[str, str, str]:
    names = "HW"[-spatial:] if spatial <= 2 else "DHW"
    if channels_first:
        return f"NC{names}", f"OI{names}", f"NC{names}"
    return f"N{names}C", f"{names}IO", f"N{names}C"


def conv(
    P: Params,
    x: Any,
    features: int,
    kernel: int,
    stride: int = 1,
    pad: Pad = 0,
    groups: int = 1,
    lhs_dilation: int = 1,
    rhs_dilation: int = 1,
    bias: bool = False,
) -> Any:
    """`lax.conv_general_dilated` in the layout of `P`, square kernel, same stride on every dim."""
    from jax import lax

    spatial = x.ndim - 2
    cin = x.shape[P.channel_axis(x.ndim)]
    taps = (kernel,) * spatial
    shape = (
        (features, cin // groups, *taps) if P.channels_first else (*taps, cin // groups, features)
    )
    w = P.get("conv", shape, fan_in=cin // groups * kernel**spatial)
    padding = [(pad, pad)] * spatial if isinstance(pad, int) else list(pad)
    y = lax.conv_general_dilated(
        x,
        w,
        (stride,) * spatial,
        padding,
        lhs_dilation=(lhs_dilation,) * spatial,
        rhs_dilation=(rhs_dilation,) * spatial,
        dimension_numbers=_dims(P.channels_first, spatial),
        feature_group_count=groups,
    )
    if bias:
        y = y + P.per_channel(P.get("bias", (features,)), y.ndim)
    return y


def conv_transpose(P: Params, x: Any, features: int, kernel: int, stride: int, pad: int) -> Any:
    """PyTorch's ConvTranspose(kernel, stride, padding) as exporters emit it: lhs dilation."""
    edge = kernel - 1 - pad
    return conv(P, x, features, kernel, pad=[(edge, edge)] * (x.ndim - 2), lhs_dilation=stride)


def batch_norm(P: Params, x: Any) -> Any:
    """Inference BatchNorm folded to a per-channel scale and shift."""
    c = x.shape[P.channel_axis(x.ndim)]
    scale = P.per_channel(P.get("bn_scale", (c,), base=1.0), x.ndim)
    return x * scale + P.per_channel(P.get("bn_shift", (c,)), x.ndim)


def layer_norm(P: Params, x: Any, axis: int) -> Any:
    import jax.numpy as jnp

    mean = jnp.mean(x, axis=axis, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True)
    y = (x - mean) * (1.0 / jnp.sqrt(var + 1e-6))
    c = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = c
    scale = P.get("ln_scale", (c,), base=1.0).reshape(shape)
    return y * scale + P.get("ln_shift", (c,)).reshape(shape)


def dense(P: Params, x: Any, features: int) -> Any:
    w = P.get("dense", (x.shape[-1], features), fan_in=x.shape[-1])
    return x @ w + P.get("dense_bias", (features,))


def relu(x: Any) -> Any:
    import jax.numpy as jnp

    return jnp.maximum(x, 0.0)


def max_pool(P: Params, x: Any, window: int, stride: int, pad: int) -> Any:
    import jax.numpy as jnp
    from jax import lax

    ones = [1] * x.ndim
    dims, strides, pads = list(ones), list(ones), [(0, 0)] * x.ndim
    for axis in range(x.ndim):
        if axis != 0 and axis != P.channel_axis(x.ndim):
            dims[axis], strides[axis], pads[axis] = window, stride, (pad, pad)
    return lax.reduce_window(x, -jnp.inf, lax.max, dims, strides, pads)


def spatial_mean(P: Params, x: Any) -> Any:
    import jax.numpy as jnp

    axes = tuple(a for a in range(1, x.ndim) if a != P.channel_axis(x.ndim))
    return jnp.mean(x, axis=axes)


def resnet(P: Params, x: Any, stages: Sequence[int], bottleneck: bool) -> Any:
    """ResNet v1.5 (the stride on the 3x3), inference BatchNorm, 1000 logits."""
    x = relu(batch_norm(P, conv(P, x, 64, 7, 2, 3)))
    x = max_pool(P, x, 3, 2, 1)
    cin = 64
    for stage, (blocks, width) in enumerate(zip(stages, (64, 128, 256, 512), strict=True)):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            if bottleneck:
                cout = 4 * width
                y = relu(batch_norm(P, conv(P, x, width, 1)))
                y = relu(batch_norm(P, conv(P, y, width, 3, stride, 1)))
                y = batch_norm(P, conv(P, y, cout, 1))
            else:
                cout = width
                y = relu(batch_norm(P, conv(P, x, width, 3, stride, 1)))
                y = batch_norm(P, conv(P, y, width, 3, 1, 1))
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = batch_norm(P, conv(P, x, cout, 1, stride))
            x = relu(y + shortcut)
            cin = cout
    return dense(P, spatial_mean(P, x), 1000)


def vit_patch_embedding(P: Params, x: Any, patch: int, dim: int) -> Any:
    """Patchify conv (kernel = stride = patch), tokens, class token, position embedding, LN."""
    import jax.numpy as jnp

    y = conv(P, x, dim, patch, patch, bias=True)
    batch = y.shape[0]
    if P.channels_first:
        tokens = y.reshape(batch, dim, -1).transpose(0, 2, 1)
    else:
        tokens = y.reshape(batch, -1, dim)
    cls = jnp.broadcast_to(P.get("cls", (1, 1, dim)), (batch, 1, dim))
    tokens = jnp.concatenate([cls, tokens], axis=1)
    tokens = tokens + P.get("pos", (1, tokens.shape[1], dim))
    return layer_norm(P, tokens, axis=-1)


def _convnext_block(P: Params, x: Any) -> Any:
    """torchvision's CNBlock: 7x7 depthwise conv (NCHW), then LN and the MLP channels-last."""
    import jax

    c = x.shape[1]
    y = conv(P, x, c, 7, 1, 3, groups=c, bias=True).transpose(0, 2, 3, 1)
    y = layer_norm(P, y, axis=-1)
    y = dense(P, jax.nn.gelu(dense(P, y, 4 * c)), c)
    y = y * P.get("layer_scale", (c,), base=1e-2)
    return x + y.transpose(0, 3, 1, 2)


def convnext_stem_stage(P: Params, x: Any) -> Any:
    """ConvNeXt-T's stem (4x4/4 + LN), a block, the 2x2/2 downsampling (LN + conv), a block."""
    x = layer_norm(P, conv(P, x, 96, 4, 4, bias=True), axis=1)
    x = _convnext_block(P, x)
    x = conv(P, layer_norm(P, x, axis=1), 192, 2, 2, bias=True)
    return _convnext_block(P, x)


def wav2vec2_feature_encoder(P: Params, audio: Any) -> Any:
    """wav2vec2's conv feature encoder (NCW): 512 x (10/5, 3/2 x4, 2/2 x2), GroupNorm on the
    first layer, GELU, then the feature projection's LayerNorm and Linear(512, 768)."""
    import jax
    import jax.numpy as jnp

    x = conv(P, audio, 512, 10, 5)
    mean = jnp.mean(x, axis=2, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=2, keepdims=True)
    x = (x - mean) / jnp.sqrt(var + 1e-5) * P.per_channel(P.get("gn_scale", (512,), base=1.0), 3)
    x = jax.nn.gelu(x + P.per_channel(P.get("gn_shift", (512,)), 3))
    for kernel, stride in [(3, 2)] * 4 + [(2, 2)] * 2:
        x = jax.nn.gelu(conv(P, x, 512, kernel, stride))
    features = layer_norm(P, x.transpose(0, 2, 1), axis=-1)
    return dense(P, features, 768)


def unet_decoder(P: Params, x: Any, *skips: Any) -> Any:
    """A U-Net decoder (NHWC): ConvTranspose 2x2/2, 4x4/2 pad 1, 2x2/2, each concatenated with
    its skip and followed by 3x3 convs; a 1x1 head."""
    import jax.numpy as jnp

    for (kernel, pad), skip, convs in zip([(2, 0), (4, 1), (2, 0)], skips, (2, 2, 1), strict=True):
        features = skip.shape[-1]
        x = conv_transpose(P, x, features, kernel, 2, pad)
        x = jnp.concatenate([x, skip], axis=-1)
        for _ in range(convs):
            x = relu(conv(P, x, features, 3, 1, 1, bias=True))
    return conv(P, x, 2, 1, bias=True)


def hifigan_generator(P: Params, mel: Any) -> Any:
    """HiFi-GAN V1's generator shape (NCW): ConvTranspose1d 16/8, 16/8, 4/2, 4/2 (pad (k-s)/2)
    from 512 channels, each followed by a residual pair of dilated 3-tap convs."""
    import jax
    import jax.numpy as jnp

    def leaky(v: Any) -> Any:
        return jax.nn.leaky_relu(v, 0.1)

    x = conv(P, mel, 512, 7, 1, 3, bias=True)
    for kernel, stride in [(16, 8), (16, 8), (4, 2), (4, 2)]:
        x = conv_transpose(P, leaky(x), x.shape[1] // 2, kernel, stride, (kernel - stride) // 2)
        for dilation in (1, 3):
            c = x.shape[1]
            x = x + conv(P, leaky(x), c, 3, 1, dilation, rhs_dilation=dilation, bias=True)
    return jnp.tanh(conv(P, leaky(x), 1, 7, 1, 3, bias=True))


def strided_cnn_loss(P: Params, images: Any, labels: Any) -> Any:
    """Softmax cross-entropy of a small strided CNN (NHWC): 3x3/2, 3x3/2, 3x3, 4x4/2."""
    import jax
    import jax.numpy as jnp

    x = relu(conv(P, images, 32, 3, 2, 1, bias=True))
    x = relu(conv(P, x, 64, 3, 2, 1, bias=True))
    x = relu(conv(P, x, 64, 3, 1, 1, bias=True))
    x = relu(conv(P, x, 128, 4, 2, 1, bias=True))
    logits = dense(P, spatial_mean(P, x), 10)
    return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))


def vgg_stride2_stack(P: Params, x: Any) -> Any:
    """A VGG-style NHWC stack of 3x3/2 convs (flax's SAME padding: (0, 1) on an even side),
    3 -> 32 -> 64 -> 128 -> 256, bias and relu, then a mean and 10 logits."""
    for features in (32, 64, 128, 256):
        x = relu(conv(P, x, features, 3, 2, [(0, 1), (0, 1)], bias=True))
    return dense(P, spatial_mean(P, x), 10)


# EfficientNet-B0: (expansion, kernel, stride, features, repeats) per stage.
EFFICIENTNET_B0 = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)


def efficientnet_b0(P: Params, x: Any) -> Any:
    """EfficientNet-B0's MBConv stack (NHWC): 1x1 expansion, k x k depthwise (strided in four
    stages), squeeze-and-excitation, 1x1 projection, inference BatchNorm, swish."""
    import jax

    x = jax.nn.swish(batch_norm(P, conv(P, x, 32, 3, 2, 1)))
    cin = 32
    for expansion, kernel, stride, features, repeats in EFFICIENTNET_B0:
        for block in range(repeats):
            s = stride if block == 0 else 1
            y = x
            if expansion != 1:
                y = jax.nn.swish(batch_norm(P, conv(P, y, cin * expansion, 1)))
            c = y.shape[-1]
            y = jax.nn.swish(batch_norm(P, conv(P, y, c, kernel, s, kernel // 2, groups=c)))
            squeeze = jax.nn.swish(dense(P, spatial_mean(P, y), max(1, cin // 4)))
            y = y * jax.nn.sigmoid(dense(P, squeeze, c))[:, None, None, :]
            y = batch_norm(P, conv(P, y, features, 1))
            x = x + y if s == 1 and cin == features else y
            cin = features
    x = jax.nn.swish(batch_norm(P, conv(P, x, 1280, 1)))
    return dense(P, spatial_mean(P, x), 1000)


def unet(P: Params, x: Any) -> Any:
    """A small U-Net in the layout of `P`: double 3x3 convs with 2x2 max-pool downsampling,
    ConvTranspose 2x2/2, 4x4/2 pad 1, 2x2/2 upsampling, each concatenated with its skip."""
    import jax.numpy as jnp

    def double(v: Any, features: int) -> Any:
        v = relu(conv(P, v, features, 3, 1, 1, bias=True))
        return relu(conv(P, v, features, 3, 1, 1, bias=True))

    axis = P.channel_axis(x.ndim)
    skips = []
    for i, features in enumerate((32, 64, 128, 256)):
        x = double(x if i == 0 else max_pool(P, x, 2, 2, 0), features)
        skips.append(x)
    for (kernel, pad), skip in zip([(2, 0), (4, 1), (2, 0)], reversed(skips[:-1]), strict=True):
        features = skip.shape[axis]
        up = conv_transpose(P, x, features, kernel, 2, pad)
        x = double(jnp.concatenate([up, skip], axis=axis), features)
    return conv(P, x, 2, 1, bias=True)


def unet_loss(P: Params, images: Any, targets: Any) -> Any:
    """Mean squared error of the U-Net's two output channels against `targets`."""
    import jax.numpy as jnp

    return jnp.mean(jnp.square(unet(P, images) - targets))


@dataclass(frozen=True)
class Program:
    """One bench program: its forward function, layout, example inputs at each size."""

    name: str
    what: str
    forward: Callable[..., Any]  # forward(P, *inputs)
    channels_first: bool
    inputs: Callable[[str], list[np.ndarray]]  # size (one of SIZES) -> example inputs
    train: bool = False  # lower one SGD step of `forward` (a loss) instead of the forward pass

    @property
    def weights(self) -> str:
        """How its users' exporter binds the weights: torch-mlir's constants, flax's arguments."""
        return "constants" if self.channels_first else "arguments"

    def weight_kinds(self) -> tuple[str, ...]:
        """The bindings it can be lowered with: a training step's weights are its arguments."""
        return ("arguments",) if self.train else ("arguments", "constants")


SIZES = ("full", "quick", "small")


def _by_size(full: Any, quick: Any, small: Any) -> Callable[[str], Any]:
    return lambda size: {"full": full, "quick": quick, "small": small}[size]


def _normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(sum(shape))
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _image(channels_first: bool, side: int, batch: int = 1, channels: int = 3) -> np.ndarray:
    if channels_first:
        return _normal(batch, channels, side, side)
    return _normal(batch, side, side, channels)


def _images(channels_first: bool, full: int, quick: int, small: int) -> Callable[[str], Any]:
    """Batch-1 images of side `full`, `quick` or `small` by size."""
    side = _by_size(full, quick, small)
    return lambda size: [_image(channels_first, side(size))]


def _resnet(
    name: str, stages: Sequence[int], bottleneck: bool, channels_first: bool, layout: str
) -> Program:
    return Program(
        name,
        f"{name.split('-')[0]} {layout}, 224x224 (quick 128x128, small 64x64), batch 1",
        lambda P, x: resnet(P, x, stages, bottleneck),
        channels_first,
        _images(channels_first, 224, 128, 64),
    )


def _labels(batch: int) -> np.ndarray:
    return np.eye(10, dtype=np.float32)[np.arange(batch) % 10]


PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in (
        _resnet("resnet18-nhwc", (2, 2, 2, 2), False, False, "NHWC/HWIO"),
        _resnet("resnet18-nchw", (2, 2, 2, 2), False, True, "NCHW/OIHW"),
        _resnet("resnet50-nhwc", (3, 4, 6, 3), True, False, "NHWC/HWIO"),
        _resnet("resnet50-nchw", (3, 4, 6, 3), True, True, "NCHW/OIHW"),
        Program(
            "vit-b16-patch",
            "ViT-B/16 patch embedding NHWC: 16x16/16 conv 3->768, tokens, pos, LN; 4x224x224"
            " (quick 1x224x224, small 1x64x64)",
            lambda P, x: vit_patch_embedding(P, x, 16, 768),
            False,
            lambda size: [
                _image(False, 64 if size == "small" else 224, 4 if size == "full" else 1)
            ],
        ),
        Program(
            "vit-l14-patch",
            "ViT-L/14 patch embedding NCHW: 14x14/14 conv 3->1024, tokens, pos, LN; 4x224x224"
            " (quick 1x224x224, small 1x56x56)",
            lambda P, x: vit_patch_embedding(P, x, 14, 1024),
            True,
            lambda size: [_image(True, 56 if size == "small" else 224, 4 if size == "full" else 1)],
        ),
        Program(
            "convnext-t-stem",
            "ConvNeXt-T NCHW: 4x4/4 stem + LN, block (7x7 depthwise), 2x2/2 downsampling, block;"
            " 224x224 (quick 112, small 64)",
            convnext_stem_stage,
            True,
            _images(True, 224, 112, 64),
        ),
        Program(
            "wav2vec2-fe",
            "wav2vec2 feature encoder NCW: 512 ch, 10/5, 3/2 x4, 2/2 x2 on 1 s of 16 kHz"
            " (quick and small 0.25 s)",
            wav2vec2_feature_encoder,
            True,
            lambda size: [_normal(1, 1, 16000 if size == "full" else 4000, scale=0.1)],
        ),
        Program(
            "unet-decoder",
            "U-Net decoder NHWC: ConvTranspose 2x2/2, 4x4/2 pad 1, 2x2/2 from 16x16x256"
            " (quick and small 8x8: 64 px out), 3x3 convs on the skips",
            unet_decoder,
            False,
            lambda size: [
                _normal(1, side, side, c)
                for side, c in zip(
                    [(16 if size == "full" else 8) * 2**i for i in range(4)],
                    (256, 128, 64, 32),
                    strict=True,
                )
            ],
        ),
        Program(
            "hifigan-gen",
            "HiFi-GAN generator NCW: ConvTranspose1d 16/8, 16/8, 4/2, 4/2 from 80x32 mel"
            " (quick and small 80x8), 512 ch",
            hifigan_generator,
            True,
            lambda size: [_normal(1, 80, 32 if size == "full" else 8)],
        ),
        Program(
            "train-step",
            "SGD step (jax.grad) of a strided CNN NHWC: 3x3/2, 3x3/2, 3x3, 4x4/2; batch 32 of"
            " 32x32 (quick 8, small 1)",
            strided_cnn_loss,
            False,
            lambda size: [
                _image(False, 32, _by_size(32, 8, 1)(size)),
                _labels(_by_size(32, 8, 1)(size)),
            ],
            train=True,
        ),
        Program(
            "vgg-s2",
            "VGG-style NHWC stack of 3x3/2 convs (SAME), 3->32->64->128->256, mean, 10 logits;"
            " 224x224 (quick 128, small 64)",
            vgg_stride2_stack,
            False,
            _images(False, 224, 128, 64),
        ),
        Program(
            "efficientnet-b0",
            "EfficientNet-B0 NHWC: MBConv with 3x3/5x5 depthwise (4 strided), SE, swish;"
            " 224x224 (quick 128, small 64)",
            efficientnet_b0,
            False,
            _images(False, 224, 128, 64),
        ),
        Program(
            "unet-nchw",
            "U-Net NCHW/OIHW, PyTorch-shaped (Conv2d, MaxPool2d, ConvTranspose2d 2x2/2, 4x4/2"
            " pad 1, 2x2/2); 112x112 (quick 32, small 64)",
            unet,
            True,
            _images(True, 112, 32, 64),
        ),
        Program(
            "unet-train-step",
            "SGD step (jax.grad) of the U-Net NHWC (MSE loss); batch 4 of 64x64 (quick and"
            " small: batch 1 of 32x32)",
            unet_loss,
            False,
            lambda size: [
                _image(False, 32 if size != "full" else 64, 4 if size == "full" else 1),
                _image(False, 32 if size != "full" else 64, 4 if size == "full" else 1, 2),
            ],
            train=True,
        ),
    )
}


def export(
    program: Program, size: str = "full", weights: str | None = None
) -> tuple[str, list[np.ndarray]]:
    """StableHLO text of `program` (`jax.jit(...).lower(...).as_text()`) and @main's inputs.

    `weights` "arguments" makes every weight a function argument (flax's `apply`), "constants"
    closes over them: `dense_resource` blobs for a channels-first program (torch-mlir's form),
    JAX's hex `dense` constants otherwise. Default: `program.weights`."""
    import jax

    weights = weights or program.weights
    if weights not in program.weight_kinds():
        raise ValueError(f"{program.name} takes no weights as {weights}")
    inputs = program.inputs(size)
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in inputs]
    P = Params(program.channels_first)
    jax.eval_shape(lambda *xs: program.forward(P.bind(None), *xs), *specs)  # makes the weights
    if weights == "constants":
        lowered = jax.jit(lambda *xs: program.forward(P.bind(None), *xs)).lower(*specs)
        text = lowered.as_text()
        return (to_dense_resource(text) if program.channels_first else text), inputs
    values = dict(P.values)
    if program.train:

        def step(w: dict[str, Any], *xs: Any) -> dict[str, Any]:
            grads = jax.grad(lambda v: program.forward(P.bind(v), *xs))(w)
            return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, w, grads)

        lowered = jax.jit(step).lower(values, *specs)
    else:

        def apply(w: dict[str, Any], *xs: Any) -> Any:
            return program.forward(P.bind(w), *xs)

        lowered = jax.jit(apply).lower(values, *specs)
    return lowered.as_text(), jax.tree_util.tree_leaves((values, inputs))
