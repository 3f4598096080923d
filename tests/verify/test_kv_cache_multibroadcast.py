"""A rank-growing multibroadcast whose result layout places the operand's dims, as rocMLIR's
kv-cache attention kernels write it (`<1x4xsi32, 4x1> -> <1x4x1x16xsi32, 4x1x0x0>`: the
per-head lengths sit at dims 0 and 1, broadcast over the rest). rocMLIR's lowering reads the
placement from the result's strides; MIGraphX's own rule (right-aligned) refuses these lens.
Judged by an independent numpy attention, on the reference and on IREE; `verify --engine iree`
accepts the lowering; lens that neither rule places are refused with the reason."""
# ruff: noqa: E501  (MLIR fixtures are one op per line)

from __future__ import annotations

import contextlib
import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.migraphx import layout
from convcanon.reference.migraphx_interp import run_module_text
from convcanon.verify.iree_tosa import run_tosa_text
from convcanon.xdsl_io import parse_file_text, print_file

BIN = Path(sys.executable).parent
HEADS, KV, DIM, SCALE = 4, 16, 8, 0.353516
Q = "<1x12x1x8xf16, 96x8x8x1>"
KV_T = "<1x4x16x8xf16, 512x128x8x1>"
LENGTHS = "<1x4xsi32, 4x1>"
SCORES = "<1x4x1x16xf16, 64x16x16x1>"
SPLAT = "<1x4x1x16xf16, 0x0x0x0>"
MASK_I32 = "<1x4x1x16xsi32, 64x16x16x1>"
MASK_I8 = "<1x4x1x16xsi8, 64x16x16x1>"
OUT = "<1x1x32xf16, 32x32x1>"
ARANGE = ", ".join(str(k) for k in range(KV))
KERNEL = f"""\
func.func @mlir_attention(%arg0: !migraphx.shaped{Q}, %arg1: !migraphx.shaped{KV_T}, %arg2: !migraphx.shaped{KV_T}, %arg3: !migraphx.shaped{LENGTHS}) -> !migraphx.shaped{OUT} {{
  %0 = migraphx.literal (dense<{SCALE}> : tensor<1xf16>) : <1xf16, 1>
  %1 = migraphx.literal (dense<0xFC00> : tensor<1xf16>) : <1xf16, 1>
  %2 = migraphx.literal (dense<[{ARANGE}]> : tensor<16xsi32>) : <16xsi32, 1>
  %3 = migraphx.transpose %arg1 {{permutation = [0, 1, 3, 2]}} : {KV_T} -> <1x4x8x16xf16, 512x128x1x8>
  %4 = migraphx.slice %arg0 {{axes = [1], ends = [4], starts = [0]}} : {Q} -> <1x4x1x8xf16, 96x8x8x1>
  %5 = migraphx.dot %4, %3 : <1x4x1x8xf16, 96x8x8x1>, <1x4x8x16xf16, 512x128x1x8> -> {SCORES}
  %6 = migraphx.multibroadcast %1 {{out_lens = [1, 4, 1, 16]}} : <1xf16, 1> -> {SPLAT}
  %7 = migraphx.multibroadcast %0 {{out_lens = [1, 4, 1, 16]}} : <1xf16, 1> -> {SPLAT}
  %8 = migraphx.multibroadcast %2 {{out_lens = [1, 4, 1, 16]}} : <16xsi32, 1> -> <1x4x1x16xsi32, 0x0x0x1>
  %9 = migraphx.multibroadcast %arg3 {{out_lens = [1, 4, 1, 16]}} : {LENGTHS} -> <1x4x1x16xsi32, 4x1x0x0>
  %10 = migraphx.greater_or_equal %8, %9 : <1x4x1x16xsi32, 0x0x0x1>, <1x4x1x16xsi32, 4x1x0x0> -> {MASK_I32}
  %11 = migraphx.convert %10 : {MASK_I32} to {MASK_I8}
  %12 = migraphx.mul %5, %7 : {SCORES}, {SPLAT} -> {SCORES}
  %13 = migraphx.where %11, %6, %12 : {MASK_I8}, {SPLAT}, {SCORES} -> {SCORES}
  %14 = migraphx.softmax %13 {{axis = 3 : i64}} : {SCORES} -> {SCORES}
  %15 = migraphx.dot %14, %arg2 : {SCORES}, {KV_T} -> <1x4x1x8xf16, 32x8x8x1>
  %16 = migraphx.reshape %15 {{dims = [1, 1, 32]}} : <1x4x1x8xf16, 32x8x8x1> -> {OUT}
  return %16 : !migraphx.shaped{OUT}
}}
"""


def _lower(text: str) -> str:
    module = parse_file_text(text, "m.mlir")
    migraphx_to_tosa(module, {})
    return print_file(module)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Decode-step attention, head h attending to its first lengths[h] cache positions."""
    out = np.zeros((HEADS, DIM))
    for h in range(HEADS):
        scores = (k[h] @ q[h]) * SCALE
        scores[np.arange(KV) >= lengths[h]] = -np.inf
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[h]
    return out.reshape(-1)


def test_kv_cache_attention_attends_to_each_heads_own_length() -> None:
    rng = np.random.default_rng(7)
    q = rng.standard_normal((12, DIM)).astype(np.float16)
    k, v = (rng.standard_normal((HEADS, KV, DIM)).astype(np.float16) for _ in range(2))
    lengths = np.array([1, 5, 16, 9], dtype=np.int32)  # a different length per head
    inputs = [q.reshape(-1), k.reshape(-1), v.reshape(-1), lengths]
    expected = _attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), lengths)
    named = {f"arg{n}": x for n, x in enumerate(inputs)}
    _, (reference,) = run_module_text(KERNEL, "m.mlir", None, named)
    (on_iree,) = run_tosa_text(_lower(KERNEL), inputs)
    for got in (reference, on_iree):
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(on_iree.astype(np.float64), reference.astype(np.float64), atol=2e-3)
    # the first head sees only position 0: its output is exactly that value row
    np.testing.assert_array_equal(reference[:DIM], v[0, 0])


@pytest.mark.parametrize("engine", ["reference", "iree"])
def test_verify_accepts_the_lowered_kv_cache_kernel(engine: str, tmp_path: Path) -> None:
    source, lowered = tmp_path / "kv.mlir", tmp_path / "kv.tosa.mlir"
    source.write_text(KERNEL)
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    assert "-> tensor<1x4x1x1xi32>" in lowered.read_text()  # the lengths at dims 0 and 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["verify", str(source), str(lowered), "--engine", engine, "--trials", "3"])
    assert code == 0, out.getvalue()
    assert f"ok: 3 trial(s) on engine {engine}" in out.getvalue()


# -- the placement rule over drawn shapes ----------------------------------------------------------


def _shaped(lens: tuple[int, ...], strides: tuple[int, ...]) -> str:
    return f"<{''.join(f'{n}x' for n in lens)}f32, {'x'.join(map(str, strides))}>"


@st.composite
def _placed_broadcasts(draw: st.DrawFn) -> tuple[str, tuple[int, ...], list[int], tuple[int, ...]]:
    """(program, operand lens, out dim of each operand dim, out lens). By layout: the operand's
    dims at drawn positions, the other result dims stride 0; else MIGraphX's trailing dims with
    an all-zero result layout."""
    lens = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    rank = len(lens) + draw(st.integers(1, 2))
    by_layout = draw(st.booleans())
    if by_layout:
        positions = sorted(draw(st.permutations(range(rank)))[: len(lens)])
    else:
        positions = list(range(rank - len(lens), rank))
    at = dict(zip(positions, lens, strict=True))
    out = tuple(at[d] if d in at and at[d] > 1 else draw(st.integers(1, 3)) for d in range(rank))
    real = [d for d in range(rank) if d in at and at[d] > 1 and by_layout]
    order = draw(st.permutations(real))  # any memory order: only stride 0 or not matters
    strides = [0] * rank
    running = 1
    for d in reversed(order):
        strides[d], running = running, running * out[d]
    for d in range(rank):
        if out[d] == 1 and draw(st.booleans()):
            strides[d] = draw(st.integers(1, 5))  # a size-1 dim's stride is irrelevant
    result = _shaped(out, tuple(strides))
    std_in, std_out = layout.standard_strides(lens), layout.standard_strides(out)
    arg, plain = _shaped(lens, std_in), _shaped(out, std_out)
    text = (
        f"func.func @main(%x: !migraphx.shaped{arg}) -> !migraphx.shaped{plain} {{\n"
        f"  %0 = migraphx.multibroadcast %x {{out_lens = [{', '.join(map(str, out))}]}} : "
        f"{arg} -> {result}\n"
        f"  %1 = migraphx.abs %0 : {result} -> {plain}\n"
        f"  return %1 : !migraphx.shaped{plain}\n}}\n"
    )
    return text, lens, positions, out


def _expected(x: np.ndarray, positions: list[int], out: tuple[int, ...]) -> np.ndarray:
    """out[i] = x[i at the operand's positions] (a size-1 operand dim reads index 0)."""
    result = np.empty(out, dtype=x.dtype)
    for index in np.ndindex(*out):
        result[index] = x[
            tuple(index[p] if n > 1 else 0 for p, n in zip(positions, x.shape, strict=True))
        ]
    return np.abs(result)


def _drawn_input(lens: tuple[int, ...]) -> np.ndarray:
    return (np.arange(math.prod(lens), dtype=np.float32) - 3.5).reshape(lens)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_placed_broadcasts())
def test_operand_lands_where_the_layout_or_migraphx_places_it(
    case: tuple[str, tuple[int, ...], list[int], tuple[int, ...]],
) -> None:
    text, lens, positions, out = case
    x = _drawn_input(lens)
    expected = _expected(x, positions, out).reshape(-1)
    _, (reference,) = run_module_text(text, "m.mlir", None, {"arg0": x.reshape(-1)})
    np.testing.assert_array_equal(reference, expected)
    _, (lowered,) = run_module_text(_lower(text), "m.tosa.mlir", None, {"arg0": x.reshape(-1)})
    np.testing.assert_array_equal(lowered, expected)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_placed_broadcasts())
def test_placed_broadcast_matches_iree(
    case: tuple[str, tuple[int, ...], list[int], tuple[int, ...]],
) -> None:
    text, lens, positions, out = case
    x = _drawn_input(lens)
    (on_iree,) = run_tosa_text(_lower(text), [x.reshape(-1)])
    np.testing.assert_array_equal(on_iree, _expected(x, positions, out).reshape(-1))


# -- refusals -----------------------------------------------------------------------------------

REFUSED = [
    (
        "<1x32xsi32, 32x1>",
        "<1x32x1x1024xsi32, 0x0x0x0>",
        "multibroadcast cannot broadcast [1, 32] to [1, 32, 1, 1024]: input dim 1 has length "
        "32, neither 1 nor out_lens[3] = 1024 (MIGraphX aligns the input with the trailing "
        "dims); nor does the result's layout place it: its non-broadcast dims hold [], the "
        "input [32] (size-1 dims aside)",
    ),
    (
        "<6xsi32, 1>",
        "<2x3x4xsi32, 3x1x0>",
        "multibroadcast cannot broadcast [6] to [2, 3, 4]: input dim 0 has length 6, neither 1 "
        "nor out_lens[2] = 4 (MIGraphX aligns the input with the trailing dims); nor does the "
        "result's layout place it: its non-broadcast dims hold [2, 3], the input [6] (size-1 "
        "dims aside)",
    ),
    (  # same rank: rocMLIR broadcasts elementwise, the layout places nothing
        "<4x1xsi32, 1x1>",
        "<1x4xsi32, 0x1>",
        "multibroadcast cannot broadcast [4, 1] to [1, 4]: input dim 0 has length 4, neither 1 "
        "nor out_lens[0] = 1 (MIGraphX aligns the input with the trailing dims)",
    ),
    (
        "<2x4xsi32, 4x1>",
        "<4xsi32, 1>",
        "multibroadcast cannot broadcast [2, 4] to [4]: the input has more dims than out_lens",
    ),
]


@pytest.mark.parametrize("entry", ["convcanon-opt", "convcanon run"])
@pytest.mark.parametrize(("operand", "result", "message"), REFUSED)
def test_unplaceable_multibroadcast_is_refused_with_the_reason(
    operand: str, result: str, message: str, entry: str, tmp_path: Path
) -> None:
    out_lens = result[1 : result.index("xsi32")].replace("x", ", ")
    text = (
        f"func.func @main(%x: !migraphx.shaped{operand}) -> !migraphx.shaped{operand} {{\n"
        f"  %0 = migraphx.multibroadcast %x {{out_lens = [{out_lens}]}} : {operand} -> {result}\n"
        f"  return %x : !migraphx.shaped{operand}\n}}\n"
    )
    path = tmp_path / "m.mlir"
    path.write_text(text)
    command = ["convcanon-opt", str(path), "-p", "migraphx-to-tosa"]
    if entry == "convcanon run":
        command = ["convcanon", "run", str(path)]
    done = subprocess.run(
        [str(BIN / command[0]), *command[1:]], capture_output=True, text=True, check=False
    )
    code = done.returncode
    assert code == 1
    assert without_source_lines(done.stderr) == (
        f"{path}:2:3: error: migraphx.multibroadcast: {message}\n"
    )
