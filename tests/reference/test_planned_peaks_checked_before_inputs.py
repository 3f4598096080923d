"""`verify` refuses, before it makes its random inputs, a module the reference interpreter would
refuse at an op (read from the op's types: a result over the limit, an elementwise plan over it),
for BEFORE, AFTER and their f64 copies: `tensor<?xf32>` at batch 2e8 used to be refused only after
a 3.3 GB peak. The check is a lower bound of the run's own: it refuses nothing the run takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from fuzz.test_npz_checked_before_inflating import run_measured  # pyright: ignore[reportMissingImports]
from hypothesis import given, settings
from hypothesis import strategies as st

from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import parse_module
from convcanon.reference.hlo_interp import check_planned_peaks
from convcanon.reference.run import run_hlo_text

MIB = 1 << 20
DYNAMIC_ADD = (
    "func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<?xf32>\n"
    "  return %0 : tensor<?xf32>\n}\n"
)


def test_verify_at_batch_2e8_is_refused_before_its_inputs(tmp_path: Path):
    module = tmp_path / "m.mlir"
    module.write_text(DYNAMIC_ADD)
    argv = ["verify", str(module), str(module)]
    _, _, _, start_up = run_measured([*argv, "--batch-sizes", "2", "--trials", "1"])
    code, _, stderr, peak = run_measured([*argv, "--batch-sizes", "200000000"])
    assert code == 1, stderr
    assert without_source_lines(stderr).strip() == (
        f"{module}:2:8: error: batch size 200000000: out of memory: stablehlo.add: stablehlo.add "
        "needs 4800000000 bytes, over the memory limit of 4294967296"
    )
    assert (peak - start_up) * 1024 < 64 * MIB, f"{peak - start_up} KiB over a batch-2 verify"


_OPS = {
    "add": "%1 = stablehlo.add %a, %a : {t}",
    "negate": "%1 = stablehlo.negate %a : {t}",
    "compare": "%1 = stablehlo.compare LT, %a, %a : ({t}, {t}) -> tensor<{n}xi1>",
    "convert": "%1 = stablehlo.convert %a : ({t}) -> tensor<{n}xi32>",
    "transpose": "%1 = stablehlo.transpose %a, dims = [0] : ({t}) -> {t}",
}


@given(
    op=st.sampled_from(sorted(_OPS)),
    n=st.integers(1, 3000),
    element=st.sampled_from(["f32", "f16", "bf16", "i8", "f64"]),
    limit=st.integers(1, 100_000),
)
@settings(max_examples=120, deadline=None)
def test_the_check_refuses_only_what_the_run_refuses(op: str, n: int, element: str, limit: int):
    t = f"tensor<{n}x{element}>"
    line = _OPS[op].format(t=t, n=n)
    result = line.split(" -> ")[-1] if " -> " in line else t
    text = f"func.func @main(%a: {t}) -> {result} {{\n  {line}\n  return %1 : {result}\n}}\n"
    inputs = {"arg0": np.ones(n, np.float32).astype(parse_dtype(element))}
    try:
        check_planned_peaks(parse_module(text, "m.mlir"), "m.mlir", limit)
    except ConvcanonError as refused:
        with pytest.raises(ConvcanonError) as ran:
            run_hlo_text(text, "m.mlir", inputs=inputs, memory_limit=limit)
        assert ran.value.render() == refused.render()  # the run's own message, at the op
        return
    try:
        run_hlo_text(text, "m.mlir", inputs=inputs, memory_limit=limit)
    except ConvcanonError as err:
        assert "memory limit" in err.message  # a kernel's own plan, which types do not give


def parse_dtype(element: str) -> np.dtype:
    import ml_dtypes

    return np.dtype({"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
                     "i8": np.int8, "f64": np.float64}[element])  # fmt: skip
