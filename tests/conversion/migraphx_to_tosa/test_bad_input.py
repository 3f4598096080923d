"""Bad input to migraphx-to-tosa: a clear `error:` naming the op (and its location when the
parser recorded one), exit 1, and nothing written."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from convcanon.conversion.migraphx_to_tosa import migraphx_to_tosa
from convcanon.diagnostics import ConvcanonError
from convcanon.xdsl_io import parse_file_text

OPT = Path(sys.executable).with_name("convcanon-opt")

UNLOWERABLE = """\
func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {
  %1 = migraphx.exp %x : <2xf32, 1> -> <2xf32, 1>
  %c = arith.constant 1.0 : f32
  return %1 : !migraphx.shaped<2xf32, 1>
}
"""

BROADCAST_RESULT = """\
func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2x2xf32, 0x1> {
  %1 = migraphx.multibroadcast %x {out_lens = [2, 2]} : <2xf32, 1> -> <2x2xf32, 0x1>
  return %1 : !migraphx.shaped<2x2xf32, 0x1>
}
"""


def run_opt(
    tmp_path: Path, text: str, limit: Callable[[], None] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`convcanon-opt -p migraphx-to-tosa` on `text` (`limit` set in the child, as resource
    limits are)."""
    source = tmp_path / "in.mlir"
    source.write_text(text)
    out = tmp_path / "out.mlir"
    done = subprocess.run(
        [str(OPT), str(source), "-p", "migraphx-to-tosa", "-o", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=300,
    )
    return done, out


def test_op_without_lowering_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    done, out = run_opt(tmp_path, UNLOWERABLE)
    assert done.returncode == 1
    assert "error: 'arith.constant' has no lowering to TOSA" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_existing_output_is_left_alone_on_error(tmp_path: Path) -> None:
    (tmp_path / "out.mlir").write_text("previous\n")
    done, out = run_opt(tmp_path, UNLOWERABLE)
    assert done.returncode == 1
    assert out.read_text() == "previous\n"


def test_writing_a_broadcast_result_is_an_error(tmp_path: Path) -> None:
    done, out = run_opt(tmp_path, BROADCAST_RESULT)
    assert done.returncode == 1
    assert "broadcast layout" in done.stderr and "ambiguous" in done.stderr
    assert not out.exists()


def test_error_carries_the_ops_source_location() -> None:
    module = parse_file_text(UNLOWERABLE, "in.mlir")
    block = next(iter(module.ops)).regions[0].blocks[0]
    constant = next(op for op in block.ops if op.name == "arith.constant")
    constant.location = FileLineColLoc(StringAttr("in.mlir"), IntAttr(3), IntAttr(3))
    with pytest.raises(ConvcanonError) as caught:
        migraphx_to_tosa(module, {})
    assert caught.value.render() == "in.mlir:3:3: error: 'arith.constant' has no lowering to TOSA"


def test_module_is_unchanged_when_lowering_fails() -> None:
    from convcanon.migraphx.io import print_file

    module = parse_file_text(UNLOWERABLE, "in.mlir")
    before = print_file(module)
    with pytest.raises(ConvcanonError):
        migraphx_to_tosa(module, {})
    assert print_file(module) == before
