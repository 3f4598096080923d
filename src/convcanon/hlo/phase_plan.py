"""Per-dim phase plans shared by the explicit stride and the lhs-dilation rewrites.

Both rewrites split a conv into partial convs by the residue of each kernel tap's offset: modulo
the stride (stride phases) or modulo the lhs dilation (output phases that only read real input
elements). Plans are built from the taps, so their cost is O(K) per dim whatever the stride or
dilation, and the number of partial convs is known before any op is built.
"""

from __future__ import annotations

import math
from functools import lru_cache

from convcanon.hlo.conv_params import ConvParams, static_extent
from convcanon.records import NamedTuple

# -- stride phases --------------------------------------------------------------------------------


class Phase(NamedTuple):
    """One stride phase of one spatial dim: which lhs and kernel elements it reads."""

    taps: int  # n = |T_p|
    lhs_start: int
    lhs_stride: int
    lhs_length: int
    rhs_start: int
    rhs_stride: int

    @property
    def lhs_window(self) -> tuple[int, int, int]:
        """(start, stride, length) of the lhs slice in this dim."""
        return (self.lhs_start, self.lhs_stride, self.lhs_length)

    @property
    def rhs_window(self) -> tuple[int, int, int]:
        """(start, stride, length) of the kernel slice in this dim."""
        return (self.rhs_start, self.rhs_stride, self.taps)


class DimPlan(NamedTuple):
    phases: tuple[Phase, ...]
    rhs_dilation: int  # d' for every phase of this dim


def group_taps(residues: list[int | None]) -> dict[int, tuple[int, int]]:
    """Tap k belongs to class `residues[k]` (None: to none); returns class -> (first tap, count).

    Every class used here is an arithmetic progression of taps, so first and count describe it."""
    groups: dict[int, tuple[int, int]] = {}
    for k, r in enumerate(residues):
        if r is None:
            continue
        first, n = groups.get(r, (k, 0))
        groups[r] = (first, n + 1)
    return dict(sorted(groups.items()))


def kernel_start(kernel: int, k0: int, n: int, step: int, reversed_: bool) -> int:
    """Where the kernel slice of taps k0, k0+step, ... (n of them) starts.

    With window reversal tap k reads kernel element K-1-k, so the slice starts at the far end."""
    return kernel - 1 - k0 - (n - 1) * step if reversed_ else k0


def tap_step(dilation: int, stride: int) -> int:
    """t = s/gcd(d, s): taps k and k+t fall in the same stride phase."""
    return stride // math.gcd(dilation, stride)


def stride_phase_count(kernel: int, dilation: int, stride: int) -> int:
    """How many stride phases have taps: the tap offsets d*k fall in min(K, t) classes."""
    return min(kernel, tap_step(dilation, stride))


def plan_dim(
    extent: int, kernel: int, dilation: int, stride: int, out: int, reversed_: bool
) -> DimPlan:
    """The stride phases of one dim (`extent`: the padded lhs extent, `out`: the result's)."""
    if stride == 1:
        return DimPlan((Phase(kernel, 0, 1, extent, 0, 1),), dilation)
    g = math.gcd(dilation, stride)
    step, new_dilation = stride // g, dilation // g
    phases = []
    for k0, n in group_taps([(dilation * k) % stride for k in range(kernel)]).values():
        length = out + (n - 1) * new_dilation
        lhs_stride = stride if length > 1 else 1  # a single element needs no step
        rhs_start = kernel_start(kernel, k0, n, step, reversed_)
        phases.append(Phase(n, dilation * k0, lhs_stride, length, rhs_start, step if n > 1 else 1))
    return DimPlan(tuple(phases), new_dilation)


# -- lhs-dilation (output) phases -----------------------------------------------------------------


class LhsPhase(NamedTuple):
    """Output phase q of one spatial dim: outputs q, q+P, ... from the taps on the input lattice.

    It is an ordinary conv of the undilated lhs with padding (pad_low, pad_high) and the kernel
    slice (rhs_start, rhs_stride, taps)."""

    q: int
    outputs: int  # ceil((O - q) / P)
    taps: int  # of the phase conv's kernel, zero taps included
    rhs_start: int
    rhs_stride: int
    pad_low: int
    pad_high: int
    zeros_before: int = 0  # zero taps before the kernel slice (merge-phases=pad-kernel), in tap
    zeros_after: int = 0  # order, so that phases reading nearby windows read the same one

    @property
    def rhs_window(self) -> tuple[int, int, int]:
        """(start, stride, length) of the kernel slice, the zero taps left out."""
        return (self.rhs_start, self.rhs_stride, self.taps - self.zeros_before - self.zeros_after)


class LhsDimPlan(NamedTuple):
    period: int  # P = L / gcd(s, L): outputs repeat their tap pattern with this period
    stride: int  # s / gcd(s, L), the phase convs' window stride
    rhs_dilation: int  # d / gcd(d, L), the phase convs' rhs dilation
    phases: tuple[LhsPhase, ...]  # only phases with taps and outputs

    @property
    def partial_convs(self) -> int:
        """Partial convs after each phase conv's own stride rewrite."""
        return sum(
            stride_phase_count(ph.taps, self.rhs_dilation, self.stride) for ph in self.phases
        )


def output_phases(
    kernel: int, lhs_dilation: int, stride: int, dilation: int, pad_low: int, out: int
) -> tuple[int, list[int | None]]:
    """The period P and, per tap k, the output phase q in [0, min(P, O)) it contributes to.

    Output o reads padded position o*s + d*k, i.e. dilated input position o*s + d*k - lo: on the
    lattice iff q*s = lo - d*k (mod L) for q = o mod P, which has one solution q when
    gcd(s, L) divides lo - d*k and none otherwise."""
    g = math.gcd(stride, lhs_dilation)
    period = lhs_dilation // g
    inverse = pow(stride // g, -1, period) if period > 1 else 0
    residues: list[int | None] = []
    for k in range(kernel):
        r = pad_low - dilation * k
        q = None if r % g else (r // g) * inverse % period
        residues.append(q if q is not None and q < out else None)
    return period, residues


def plan_lhs_dim(
    extent: int,
    kernel: int,
    lhs_dilation: int,
    stride: int,
    dilation: int,
    pad_low: int,
    out: int,
    reversed_: bool,
) -> LhsDimPlan:
    """The output phases of one spatial dim (`extent` is the undilated lhs extent)."""
    period, residues = output_phases(kernel, lhs_dilation, stride, dilation, pad_low, out)
    g_s, g_d = math.gcd(stride, lhs_dilation), math.gcd(dilation, lhs_dilation)
    new_stride, new_dilation, step = stride // g_s, dilation // g_d, lhs_dilation // g_d
    phases = []
    for q, (k0, n) in group_taps(residues).items():
        start = (q * stride + dilation * k0 - pad_low) // lhs_dilation  # exact: on the lattice
        outputs = -(-(out - q) // period)
        window = (outputs - 1) * new_stride + (n - 1) * new_dilation + 1
        rhs_start = kernel_start(kernel, k0, n, step, reversed_)
        phases.append(
            LhsPhase(
                q, outputs, n, rhs_start, step if n > 1 else 1, -start, start + window - extent
            )
        )
    return LhsDimPlan(period, new_stride, new_dilation, tuple(phases))


def lattice_pairs(
    kernel: int, lhs_dilation: int, stride: int, dilation: int, pad_low: int, out: int
) -> int:
    """(output, tap) pairs of one dim that read the input lattice: a real input element, or a
    padding zero at a lattice position (the elements a conv of the undilated input reads).
    Without lhs dilation every position is on the lattice: all K x O pairs, counted without
    visiting the taps (a declared kernel extent can be a billion)."""
    if lhs_dilation == 1:
        return kernel * max(out, 0)
    period, residues = output_phases(kernel, lhs_dilation, stride, dilation, pad_low, out)
    return sum(-(-(out - q) // period) for q in residues if q is not None)


# -- whole convs ----------------------------------------------------------------------------------


@lru_cache(maxsize=4096)  # models repeat a few conv configurations thousands of times
def lhs_dilation_plans(p: ConvParams) -> tuple[LhsDimPlan, ...]:
    """The output phases of every spatial dim (a dim without lhs dilation has one phase)."""
    return tuple(
        plan_lhs_dim(h, k, ld, s, d, lo, o, r)
        for h, k, ld, s, d, (lo, _), o, r in zip(
            p.lhs_spatial,
            p.kernel_spatial,
            p.lhs_dilation,
            p.strides,
            p.rhs_dilation,
            p.padding,
            p.out_spatial,
            p.reversal,
            strict=True,
        )
    )


def uses_polyphase(p: ConvParams, polyphase: bool) -> bool:
    return polyphase and any(d != 1 for d in p.lhs_dilation)


def lattice_macs(p: ConvParams) -> int:
    """Multiply-adds that read the input lattice: the floor for any rewrite that never
    multiplies an inserted (interior) zero. Equal to `p.macs` without lhs dilation."""
    pairs = math.prod(
        lattice_pairs(k, ld, s, d, lo, o)
        for k, ld, s, d, (lo, _), o in zip(
            p.kernel_spatial,
            p.lhs_dilation,
            p.strides,
            p.rhs_dilation,
            p.padding,
            p.out_spatial,
            strict=True,
        )
    )
    dims = p.dims
    extents = (p.result_shape[dims.out_batch], p.result_shape[dims.out_feature])
    inputs = p.rhs_shape[dims.rhs_in_feature]
    return math.prod(static_extent(e) for e in (*extents, inputs)) * pairs  # per element of `?`
