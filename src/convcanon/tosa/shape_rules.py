"""Result shapes of the TOSA 1.0 ops we emit, as pure functions over operand shapes and attributes.

The op verifiers of convcanon.tosa's op families use these so that a hand-written inconsistent TOSA
module fails at parse time, as upstream MLIR's TOSA verifier (TosaOps.cpp: the per-op verifiers
and the inferred result shapes they must agree with) and the TOSA 1.0 ERROR_IF rules would reject
it, instead of reaching numpy under `convcanon run`. Shapes are static (convcanon's TOSA modules
take flat buffers of known size); each function raises ShapeError saying what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from convcanon.migraphx.shape_rules import ShapeError, reshape_lens

Shape = tuple[int, ...]


def _listed(shape: Sequence[int]) -> list[int]:
    return [int(d) for d in shape]


def check_rank(what: str, shape: Sequence[int], rank: int) -> None:
    if len(shape) != rank:
        raise ShapeError(f"expects {what} of rank {rank}, got shape {_listed(shape)}")


def check_result(expected: Sequence[int], declared: Sequence[int]) -> None:
    """The declared result shape must be the one the operands and attributes imply."""
    if tuple(expected) != tuple(declared):
        raise ShapeError(
            f"result shape {_listed(declared)} does not match the inferred {_listed(expected)}"
        )


def _check_all(what: str, values: Sequence[int], minimum: int) -> None:
    if any(v < minimum for v in values):
        raise ShapeError(f"expects every {what} value >= {minimum}, got {_listed(values)}")


def conv_output(
    x: Sequence[int],
    w: Sequence[int],
    pad: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    depthwise: bool = False,
) -> Shape:
    """NHWC / NDHWC input; weights OHWI / ODHWI, or HWCM when `depthwise` (2-D only)."""
    nsp = len(stride)
    check_rank("input", x, nsp + 2)
    check_rank("weight", w, nsp + 2)
    for what, values, size in (("pad", pad, 2 * nsp), ("dilation", dilation, nsp)):
        if len(values) != size:
            raise ShapeError(f"expects {size} {what} values, got {_listed(values)}")
    _check_all("pad", pad, 0)
    _check_all("stride", stride, 1)
    _check_all("dilation", dilation, 1)
    if depthwise:
        kernel, (channels, multiplier) = w[:2], w[2:]
        if channels != x[-1]:
            raise ShapeError(f"weight channels {channels} (dim 2) differ from the input's {x[-1]}")
        out_channels = channels * multiplier
    else:
        kernel, out_channels = w[1:-1], w[0]
        if w[-1] != x[-1]:
            raise ShapeError(
                f"weight input channels {w[-1]} (last dim) differ from the input's {x[-1]}"
            )
    spatial: list[int] = []
    for i in range(nsp):
        span = x[1 + i] - 1 + pad[2 * i] + pad[2 * i + 1] - (kernel[i] - 1) * dilation[i]
        if span % stride[i]:
            raise ShapeError(
                f"spatial dim {i}: input {x[1 + i]} - 1 + pad {pad[2 * i]} + {pad[2 * i + 1]} - "
                f"(kernel {kernel[i]} - 1) * dilation {dilation[i]} = {span} is not divisible "
                f"by stride {stride[i]}"
            )
        if span < 0:
            raise ShapeError(
                f"spatial dim {i}: the dilated kernel ({(kernel[i] - 1) * dilation[i] + 1}) is "
                f"larger than the padded input ({x[1 + i] + pad[2 * i] + pad[2 * i + 1]})"
            )
        spatial.append(span // stride[i] + 1)
    return (x[0], *spatial, out_channels)


def pool2d_output(
    x: Sequence[int], kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int]
) -> Shape:
    """max_pool2d/avg_pool2d of NHWC: TOSA 1.0's ERROR_IFs (each pad below its kernel, so every
    window reads the input; the stride divides the padded span exactly)."""
    check_rank("input", x, 4)
    for what, values, size in (("kernel", kernel, 2), ("stride", stride, 2), ("pad", pad, 4)):
        if len(values) != size:
            raise ShapeError(f"expects {size} {what} values, got {_listed(values)}")
    _check_all("kernel", kernel, 1)
    _check_all("stride", stride, 1)
    _check_all("pad", pad, 0)
    spatial: list[int] = []
    for i in range(2):
        if max(pad[2 * i], pad[2 * i + 1]) >= kernel[i]:
            raise ShapeError(
                f"spatial dim {i}: pad {_listed(pad[2 * i : 2 * i + 2])} is not below the "
                f"kernel {kernel[i]}"
            )
        span = x[1 + i] + pad[2 * i] + pad[2 * i + 1] - kernel[i]
        if span < 0 or span % stride[i]:
            raise ShapeError(
                f"spatial dim {i}: input {x[1 + i]} + pad {pad[2 * i]} + {pad[2 * i + 1]} - kernel "
                f"{kernel[i]} = {span} is not a non-negative multiple of stride {stride[i]}"
            )
        spatial.append(span // stride[i] + 1)
    return (x[0], *spatial, x[3])


def check_bias(bias: Sequence[int], out_channels: int) -> None:
    check_rank("bias", bias, 1)
    if bias[0] not in (1, out_channels):
        raise ShapeError(f"bias has {bias[0]} channels, expected 1 or the output's {out_channels}")


def matmul_output(a: Sequence[int], b: Sequence[int]) -> Shape:
    """[N, H, C] x [N, C, W] -> [N, H, W]."""
    check_rank("input a", a, 3)
    check_rank("input b", b, 3)
    if a[0] != b[0]:
        raise ShapeError(f"batch of a ({a[0]}) differs from batch of b ({b[0]})")
    if a[2] != b[1]:
        raise ShapeError(
            f"a's columns ({a[2]}, shape {_listed(a)}) differ from b's rows ({b[1]}, shape "
            f"{_listed(b)})"
        )
    return (a[0], a[1], b[2])


def reshape_output(x: Sequence[int], new_shape: Sequence[int]) -> Shape:
    """TOSA 1.0 reshape: the new shape in full; as in upstream MLIR, one -1 may stand for the
    rest. A 0 is a size here (MIGraphX's `reshape_lens` reads it as "copy the input dim")."""
    if 0 not in new_shape:
        return reshape_lens(x, new_shape)
    if math.prod(x) != 0 or any(d < 0 for d in new_shape):
        raise ShapeError(f"cannot reshape {_listed(x)} into {_listed(new_shape)}")
    return tuple(new_shape)


def slice_output(x: Sequence[int], start: Sequence[int], size: Sequence[int]) -> Shape:
    for what, values in (("start", start), ("size", size)):
        if len(values) != len(x):
            raise ShapeError(f"{what} {_listed(values)} does not have the input's rank {len(x)}")
    for i, (dim, b, n) in enumerate(zip(x, start, size, strict=True)):
        if b < 0 or n < 1 or b + n > dim:
            raise ShapeError(
                f"slice start {_listed(start)} size {_listed(size)} is out of bounds of the "
                f"input {_listed(x)} in dim {i}"
            )
    return tuple(size)


def tile_output(x: Sequence[int], multiples: Sequence[int]) -> Shape:
    if len(multiples) != len(x):
        raise ShapeError(f"multiples {_listed(multiples)} do not have the input's rank {len(x)}")
    _check_all("multiples", multiples, 1)
    return tuple(d * m for d, m in zip(x, multiples, strict=True))


def pad_output(x: Sequence[int], padding: Sequence[int]) -> Shape:
    if len(padding) != 2 * len(x):
        raise ShapeError(f"padding {_listed(padding)} needs 2 values per input dim ({2 * len(x)})")
    _check_all("padding", padding, 0)
    return tuple(d + padding[2 * i] + padding[2 * i + 1] for i, d in enumerate(x))


def _check_axis(axis: int, rank: int) -> None:
    if not 0 <= axis < max(rank, 1):
        raise ShapeError(f"axis {axis} is out of range for rank {rank}")


def concat_output(shapes: Sequence[Sequence[int]], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("expects at least one input")
    first = shapes[0]
    _check_axis(axis, len(first))
    for index, shape in enumerate(shapes[1:], 1):
        same = len(shape) == len(first) and all(
            a == b for k, (a, b) in enumerate(zip(shape, first, strict=True)) if k != axis
        )
        if not same:
            raise ShapeError(
                f"operand {index} shape {_listed(shape)} differs from operand 0 shape "
                f"{_listed(first)} outside axis {axis}"
            )
    out = list(first)
    out[axis] = sum(shape[axis] for shape in shapes)
    return tuple(out)


def reduce_output(x: Sequence[int], axis: int) -> Shape:
    """Reductions keep the reduced dim, as size 1."""
    _check_axis(axis, len(x))
    if not x:
        return ()
    out = list(x)
    out[axis] = 1
    return tuple(out)


def elementwise_output(shapes: Sequence[Sequence[int]]) -> Shape:
    """TOSA 1.0: operands of equal rank; a size-1 dim broadcasts against any size."""
    ranks = {len(shape) for shape in shapes}
    if len(ranks) > 1:
        raise ShapeError(f"operands have different ranks: {[_listed(shape) for shape in shapes]}")
    out: list[int] = []
    for dims in zip(*shapes, strict=True):
        sizes = set(dims) - {1}
        if len(sizes) > 1:
            raise ShapeError(
                f"operand shapes {[_listed(shape) for shape in shapes]} do not broadcast"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
