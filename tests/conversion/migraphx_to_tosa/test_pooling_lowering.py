"""`migraphx.pooling` lowers to tosa.max_pool2d / avg_pool2d: the TOSA verifies in iree-opt, runs
on IREE and equals the migraphx reference over random windows (1 or 2 spatial dims, padding
symmetric or not, strides, ceil_mode, count_include_pad) and layouts (NCHW, NHWC, gaps); an
NHWC input is pooled where it is stored; what TOSA cannot compute as MIGraphX does is refused at
the op."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text

from .harness import check_with_interpreter, check_with_iree, lower
from .programs import Lens, Program, layout_strides, memory_layouts

pytestmark = pytest.mark.filterwarnings("error")


@dataclass(frozen=True)
class Pool2D:
    mode: str
    in_lens: Lens
    lengths: Lens
    stride: Lens
    begins: Lens
    ends: Lens
    ceil_mode: int
    count_include_pad: int

    @property
    def out_lens(self) -> Lens:
        out = []
        for n, k, s, b, e in zip(
            self.in_lens[2:], self.lengths, self.stride, self.begins, self.ends, strict=True
        ):
            span = n + b + e - k
            out.append((-(-span // s) if self.ceil_mode else span // s) + 1)
        return (*self.in_lens[:2], *out)

    def attrs(self, extra: str = "") -> str:
        def arr(v: tuple[int, ...]) -> str:
            return "[" + ", ".join(map(str, v)) + "]"

        return (
            f"ceil_mode = {self.ceil_mode} : i64, count_include_pad = {self.count_include_pad} "
            f': i64, length = {arr(self.lengths)}, mode = "{self.mode}", '
            f"padding = {arr(self.begins + self.ends)}, stride = {arr(self.stride)}{extra}"
        )

    def every_window_counts_an_element(self) -> bool:
        """MIGraphX's result where a window counts nothing (lowest, or 0) has no TOSA form."""
        with_pad = self.count_include_pad and self.mode == "average"
        for n, k, s, b, o in zip(
            self.in_lens[2:], self.lengths, self.stride, self.begins, self.out_lens[2:], strict=True
        ):
            clip = n + b if with_pad else n
            if (not with_pad and b >= k) or (o - 1) * s - b >= clip:
                return False
        return True


@st.composite
def pools_2d(draw: st.DrawFn) -> Pool2D:
    """A pooling over 2 spatial dims, or 1 (a sequence: pooled as a height-1 image)."""
    dims = draw(st.sampled_from([1, 2, 2]))
    lengths = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    begins = tuple(draw(st.integers(0, 2)) for _ in range(dims))
    ends = begins if draw(st.booleans()) else tuple(draw(st.integers(0, 2)) for _ in range(dims))
    spatial = tuple(
        draw(st.integers(max(1, k - b - e), 9))
        for k, b, e in zip(lengths, begins, ends, strict=True)
    )
    pool = Pool2D(
        mode=draw(st.sampled_from(["max", "average"])),
        in_lens=(draw(st.integers(1, 2)), draw(st.integers(1, 4)), *spatial),
        lengths=lengths,
        stride=tuple(draw(st.integers(1, 3)) for _ in range(dims)),
        begins=begins,
        ends=ends,
        ceil_mode=int(draw(st.booleans())),
        count_include_pad=int(draw(st.booleans())),
    )
    assume(pool.every_window_counts_an_element())
    return pool


def pool_program(pool: Pool2D, x_strides: Lens, out_strides: Lens, et: str = "f32") -> str:
    p = Program()
    x = p.arg(pool.in_lens, x_strides, et)
    y = p.op("pooling", [x], pool.out_lens, pool.attrs(), strides=out_strides)
    return p.text([y])


@st.composite
def pool_programs(draw: st.DrawFn) -> str:
    pool = draw(pools_2d())
    et = draw(st.sampled_from(["f32", "f32", "f16", "bf16"]))
    return pool_program(
        pool, draw(memory_layouts(pool.in_lens)), draw(memory_layouts(pool.out_lens)), et
    )


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(pool_programs())
def test_random_pooling_matches_iree(text: str) -> None:
    check_with_iree(text, rtol=_tolerance(text))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))  # pyright: ignore[reportArgumentType]
@given(pool_programs())
def test_random_pooling_matches_the_reference(text: str) -> None:
    check_with_interpreter(text, rtol=_tolerance(text))


def _tolerance(text: str) -> float:
    """An average is rounded once from double (MIGraphX) or from f32 (TOSA): a bf16 result may
    differ by its last bit, an f16 one by far less."""
    return 1e-2 if "bf16" in text else 2e-3


NHWC = (0, 2, 3, 1)  # memory order, outermost first


def test_resnet_stem_max_pool_and_global_average_pool_on_iree() -> None:
    """3x3/2 max pool with pad 1 after the stem, then a global average pool, stored NHWC."""
    stem = Pool2D("max", (1, 8, 16, 16), (3, 3), (2, 2), (1, 1), (1, 1), 0, 0)
    final = Pool2D("average", stem.out_lens, (8, 8), (1, 1), (0, 0), (0, 0), 0, 0)
    p = Program()
    x = p.arg(stem.in_lens, layout_strides(stem.in_lens, NHWC))
    y = p.op("pooling", [x], stem.out_lens, stem.attrs(), layout_strides(stem.out_lens, NHWC))
    z = p.op("pooling", [y], final.out_lens, final.attrs(), layout_strides(final.out_lens, NHWC))
    tosa_text = check_with_iree(p.text([z]))
    assert "tosa.transpose" not in tosa_text  # pooled where the values are stored


@pytest.mark.parametrize("mode", ["max", "average"])
def test_a_sequence_stored_channels_last_pools_where_it_is_stored_on_iree(mode: str) -> None:
    """A 1-D pooling ([N, C, W], as ONNX MaxPool/AveragePool on audio or text give MIGraphX):
    a 2-D pooling of a height-1 image, no transpose for an NWC-stored input."""
    pool = Pool2D(mode, (2, 6, 17), (3,), (2,), (1,), (1,), 0, 0)
    nwc = (0, 2, 1)
    text = pool_program(pool, layout_strides(pool.in_lens, nwc), layout_strides(pool.out_lens, nwc))
    assert "tosa.transpose" not in check_with_iree(text)


def test_count_include_pad_counts_zeros_to_the_begin_pad_past_the_input() -> None:
    """MIGraphX clips an average window at the input's end plus the BEGIN pad: with pad (2, 0)
    and ceil_mode the last windows count padding past the end that no end pad declared."""
    pool = Pool2D("average", (1, 2, 6, 6), (3, 3), (2, 2), (2, 2), (0, 0), 1, 1)
    text = pool_program(pool, layout_strides(pool.in_lens), layout_strides(pool.out_lens))
    check_with_iree(text)


REFUSED = [
    ("lpnorm", Pool2D("lpnorm", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0), (0, 0), 0, 0), "", "f32"),
    ("pooling on si32", Pool2D("max", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0), (0, 0), 0, 0), "",
     "si32"),
    ("pooling on f64", Pool2D("average", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0), (0, 0), 0, 0), "",
     "f64"),
    ("wholly in padding", Pool2D("max", (1, 2, 4, 4), (2, 2), (1, 1), (2, 2), (0, 0), 0, 0), "",
     "f32"),
]  # fmt: skip


@pytest.mark.parametrize(("reason", "pool", "extra", "et"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_tosa_cannot_pool_exactly_is_refused_at_the_op(
    reason: str, pool: Pool2D, extra: str, et: str
) -> None:
    p = Program()
    x = p.arg(pool.in_lens, layout_strides(pool.in_lens), et)
    p.op("pooling", [x], pool.out_lens, pool.attrs(extra), layout_strides(pool.out_lens))
    module = parse_file_text(p.text([p.op("contiguous", [x], pool.in_lens)]), "p.mlir")
    with pytest.raises(ConvcanonError, match=f"'migraphx.pooling' has no exact TOSA.*{reason}"):
        migraphx_to_tosa(module, {})


@pytest.mark.parametrize(
    ("in_lens", "attrs", "out_lens", "reason"),
    [
        ((1, 2, 4, 4, 4), "length = [2, 2, 2], padding = [0, 0, 0], stride = [2, 2, 2]",
         (1, 2, 2, 2, 2), "3 spatial dims"),
        ((1, 2, 6, 6), "dilations = [2, 1], length = [2, 2], padding = [0, 0], stride = [1, 1]",
         (1, 2, 4, 5), r"dilations \[2, 1\]"),
    ],
)  # fmt: skip
def test_other_windows_are_refused_at_the_op(
    in_lens: Lens, attrs: str, out_lens: Lens, reason: str
) -> None:
    p = Program()
    y = p.op("pooling", [p.arg(in_lens)], out_lens, f'{attrs}, mode = "max"')
    with pytest.raises(ConvcanonError, match=f"'migraphx.pooling' has no exact TOSA.*{reason}"):
        lower(p.text([y]))


@pytest.mark.parametrize("element", ["f8E4M3FN", "f8E5M2", "f8E4M3FNUZ"])
@pytest.mark.parametrize("mode", ["max", "average"])
def test_fp8_pooling_runs_on_f32_and_rounds_once_on_iree(mode: str, element: str) -> None:
    """TOSA's fp8 extensions hold OCP fp8 but IREE pools no fp8: like the elementwise ops, the
    pooling runs on f32 and rounds once (MIGraphX rounds once from double)."""
    pool = Pool2D(mode, (1, 3, 5, 5), (3, 3), (2, 2), (1, 1), (1, 1), 0, 0)
    nhwc = layout_strides(pool.in_lens, NHWC), layout_strides(pool.out_lens, NHWC)
    check_with_iree(pool_program(pool, *nhwc, element))


def test_max_pool_skips_nan_and_stops_at_the_lowest_value_on_iree() -> None:
    """MIGraphX's max folds from its type's lowest value: a NaN beside numbers is skipped, and
    a window of NaNs or of -inf alone gives lowest, on IREE as in the reference."""
    import numpy as np

    pool = Pool2D("max", (1, 2, 4, 4), (2, 2), (2, 2), (1, 1), (1, 1), 0, 0)
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    x[0, 0, :2, :2] = np.nan  # a window of NaNs alone (with padding)
    x[0, 0, 2:, 2:] = -np.inf
    x[0, 1, 1, 1] = np.nan  # beside numbers
    x[0, 1, 3, 3] = -np.inf
    text = pool_program(pool, layout_strides(pool.in_lens, NHWC), layout_strides(pool.out_lens))
    flat = np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(-1)
    check_with_iree(text, inputs=[flat])
