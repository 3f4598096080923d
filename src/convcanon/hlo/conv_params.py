"""A convolution as plain values: its params, dimension numbers and the dynamic-size marker.

The gate, the planner, the engine policies and `explain` reason on these alone; nothing here
imports MLIR, so they are tested on literals and reused by anything. Reading them from an op is
`params.py`'s job, building ops from a plan the emitter's.
"""

from __future__ import annotations

import math

from convcanon.records import NamedTuple

# A `?` extent, as MLIR stores it (`ShapedType::kDynamic`, int64's least value).
DYNAMIC = -(2**63)


class DimensionNumbers(NamedTuple):
    """Conv dimension numbers, dialect-neutral (which axis of lhs/rhs/result plays which role)."""

    lhs_batch: int
    lhs_feature: int
    lhs_spatial: tuple[int, ...]
    rhs_in_feature: int
    rhs_out_feature: int
    rhs_spatial: tuple[int, ...]
    out_batch: int
    out_feature: int
    out_spatial: tuple[int, ...]


class ConvParams(NamedTuple):
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    result_shape: tuple[int, ...]
    element_type: str  # the lhs element type as MLIR prints it
    dims: DimensionNumbers
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    reversal: tuple[bool, ...]
    feature_group_count: int
    batch_group_count: int
    dynamic_reason: str | None = None  # set when a shape is not static; shapes are then ()
    # Facts of the element types the rewrite needs: whether lhs, kernel and result have a zero
    # to pad with, and whether the result is a float narrower than f32 (partial sums round).
    lhs_zero: bool = True
    rhs_zero: bool = True
    result_zero: bool = True
    narrow_result: bool = False
    attributes: frozenset[str] = frozenset()  # the optional window attributes the op carries

    @property
    def rank(self) -> int:
        return len(self.dims.lhs_spatial) + 2

    @property
    def num_spatial(self) -> int:
        return len(self.dims.lhs_spatial)

    @property
    def lhs_spatial(self) -> tuple[int, ...]:
        return tuple(self.lhs_shape[d] for d in self.dims.lhs_spatial)

    @property
    def kernel_spatial(self) -> tuple[int, ...]:
        return tuple(self.rhs_shape[d] for d in self.dims.rhs_spatial)

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return tuple(self.result_shape[d] for d in self.dims.out_spatial)

    @property
    def padded_spatial(self) -> tuple[int, ...]:
        """Spatial extents after lhs dilation and padding: what the window slides over."""
        return tuple(
            padded_extent(h, lo, hi, dil - 1)
            for h, dil, (lo, hi) in zip(
                self.lhs_spatial, self.lhs_dilation, self.padding, strict=True
            )
        )

    @property
    def needs_pad(self) -> bool:
        return any(lo or hi for lo, hi in self.padding) or any(d != 1 for d in self.lhs_dilation)

    @property
    def needs_stride(self) -> bool:
        return any(s != 1 for s in self.strides)

    @property
    def dynamic_batch(self) -> bool:
        """Whether the batch extent is only known at run time (`tensor<?x...>`)."""
        return bool(self.lhs_shape) and self.lhs_shape[self.dims.lhs_batch] == DYNAMIC

    @property
    def dynamic_feature(self) -> bool:
        """Whether the lhs feature extent is only known at run time: a kernel-gradient conv of
        a symbolic batch, whose lhs `[f, 0.., b]` holds the batch as its feature dim."""
        return bool(self.lhs_shape) and self.lhs_shape[self.dims.lhs_feature] == DYNAMIC

    @property
    def macs(self) -> int:
        """Multiply-adds: every result element sums rhs-input-features x kernel taps products
        (per element of the dynamic extent, batch or contracted feature)."""
        taps = math.prod(self.kernel_spatial) * static_extent(
            self.rhs_shape[self.dims.rhs_in_feature]
        )
        return math.prod(static_extent(d) for d in self.result_shape) * taps


def static_extent(extent: int) -> int:
    """`extent`, or 1 for a dynamic one (multiply-adds are counted per element of it)."""
    return 1 if extent == DYNAMIC else extent


def padded_extent(extent: int, low: int, high: int, interior: int) -> int:
    """An extent after `pad(low, high, interior)` (negative amounts crop): what a conv's lhs
    dilation and padding, or an explicit `pad`, make of it. A dynamic extent stays dynamic."""
    if extent == DYNAMIC:
        return extent
    return (extent - 1) * (interior + 1) + 1 + low + high if extent > 0 else low + high


def bounded_pad(extent: int, low: int, high: int, interior: int) -> tuple[int, int]:
    """(low, high) of a pad with the same result as `pad(low, high, interior)`, neither past the
    result's extent. Padding that reaches past the whole result leaves only its zeros, however
    far it reaches; XLA pads by the positive amounts before it crops, and aborts the process on
    an extent over int64 (a conv padded by 2**62 and cropped by as much)."""
    if extent == DYNAMIC:
        return low, high
    out = padded_extent(extent, low, high, interior)
    dilated = out - low - high
    if low > out:
        return out, -dilated
    if high > out:
        return -dilated, out
    return low, high


INT64_MAX = 2**63 - 1


def int64_overflow(p: ConvParams) -> str | None:
    """Why `p`'s window arithmetic does not fit in int64, or None. MLIR's verifier infers the
    result in wrapping int64 arithmetic, so a module can declare the wrapped extent; the rewrite
    would build tensors of the true one."""
    for dim, (padded, k, d, s, out) in enumerate(
        zip(
            p.padded_spatial,
            p.kernel_spatial,
            p.rhs_dilation,
            p.strides,
            p.out_spatial,
            strict=True,
        )
    ):
        window = (k - 1) * d + 1
        true_out = (padded - window) // s + 1
        if abs(padded) > INT64_MAX or true_out != out:
            return (
                f"spatial dim {dim} pads to {padded} elements, a window of {window} gives "
                f"{true_out} outputs, not the declared {out}: its padding overflows int64"
            )
    return None
