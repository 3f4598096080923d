"""`convcanon`'s half-B Python API mirrors the CLI: import_program == `convcanon import-migraphx`,
lower_to_tosa == `convcanon-opt -p migraphx-to-tosa` (without touching its input), the lowered
seed runs on IREE with the reference's answer, and bad input raises a located ConvcanonError."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

import convcanon as cm
from convcanon.cli import main, opt_main
from convcanon.diagnostics import ConvcanonError
from convcanon.pipeline import PassStats
from convcanon.reference.migraphx_interp import Interpreter, flat_input_shape

SEED = Path(__file__).parents[1] / "migraphx" / "fixtures" / "seed003_nhwc_conv.txt"

BROADCAST_RESULT = (
    "v = @param:v -> float_type, {3}, {1}\n"
    "@1 = multibroadcast[out_lens={4, 3},out_dyn_dims={}](v) -> float_type, {4, 3}, {0, 1}\n"
    "@2 = @return(@1)\n"
)


def test_import_program_prints_what_the_cli_writes(tmp_path: Path) -> None:
    out = tmp_path / "seed.mlir"
    assert main(["import-migraphx", str(SEED), "-o", str(out)]) == 0
    module = cm.import_program(SEED.read_text(), filename=str(SEED))
    assert cm.print_module(module) == out.read_text()
    assert cm.print_module(cm.parse_module(out.read_text())) == out.read_text()


def test_lower_to_tosa_matches_the_pass_and_leaves_its_input_alone(tmp_path: Path) -> None:
    module = cm.import_program(SEED.read_text())
    before = cm.print_module(module)
    stats = PassStats()
    lowered = cm.lower_to_tosa(module, stats=stats)
    assert cm.print_module(module) == before

    (tmp_path / "seed.mlir").write_text(before)
    out = tmp_path / "seed.tosa.mlir"
    assert opt_main([str(tmp_path / "seed.mlir"), "-p", "migraphx-to-tosa", "-o", str(out)]) == 0
    tosa_text = cm.print_module(lowered)
    assert tosa_text + "\n" == out.read_text()  # mlir-opt ends its output with a newline more
    assert "migraphx." not in tosa_text and "tosa.transpose" not in tosa_text
    assert stats.counters["migraphx ops lowered"] == 2
    assert stats.counters["tosa.conv2d emitted"] == 1


def test_lowered_seed_runs_on_iree_like_the_reference() -> None:
    from convcanon.verify.iree_tosa import run_tosa_text

    module = cm.import_program(SEED.read_text())
    lowered = cm.lower_to_tosa(module)
    function = next(iter(module.ops))
    assert isinstance(function, func.FuncOp)
    rng = np.random.default_rng(7)
    inputs = [
        (rng.standard_normal(flat_input_shape(ty)) * 0.2).astype(np.float32)
        for ty in function.function_type.inputs.data
    ]
    (expected,) = Interpreter(module, "<seed>", {}).run("main", inputs)
    (actual,) = run_tosa_text(cm.print_module(lowered), inputs)
    assert actual.shape == expected.shape == (8,)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    # the lowered module on our TOSA reference agrees too
    (tosa_reference,) = Interpreter(lowered, "<tosa>", {}).run("main", inputs)
    np.testing.assert_allclose(tosa_reference, expected, rtol=1e-5, atol=1e-6)


def test_bad_program_raises_with_its_line_and_column() -> None:
    program = "x = @param:x -> float_type, {4}, {1}\n@1 = exq(x) -> float_type, {4}, {1}\n"
    with pytest.raises(ConvcanonError) as caught:
        cm.import_program(program, filename="prog.txt")
    assert caught.value.render() == (
        "prog.txt:2:6: error: unknown MIGraphX op `exq`; did you mean `exp`?"
    )


def test_unlowerable_program_raises_at_its_line_and_input_is_unchanged() -> None:
    module = cm.import_program(BROADCAST_RESULT, filename="prog.txt")
    before = cm.print_module(module)
    with pytest.raises(ConvcanonError) as caught:
        cm.lower_to_tosa(module)
    assert caught.value.render().startswith("prog.txt:3:6: error: 'func.return' writes a result")
    assert cm.print_module(module) == before


def test_importing_the_package_loads_no_xdsl() -> None:
    probe = (
        "import sys, convcanon as m\n"
        "assert not [k for k in sys.modules if k.startswith('xdsl')], 'xdsl loaded eagerly'\n"
        "assert callable(m.lower_to_tosa) and 'xdsl' in sys.modules\n"
        "assert not [k for k in sys.modules if k.startswith('jax')], 'jax loaded'\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError):
        _ = cm.no_such_function  # type: ignore[attr-defined]
