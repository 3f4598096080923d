"""An op of a dialect we do not know is refused unless `--allow-unregistered-dialect`, which every
command that reads a module takes (the refusal names it), in MLIR text and in bytecode alike, as
mlir-opt reads both. The child that reads bytecode first accepts any dialect (it cannot tell the
halves apart); the module was then used as it came."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cli_support import Runner  # pyright: ignore[reportMissingImports]

from convcanon.hlo.context import make_context, parse_module

UNKNOWN_OP = (
    "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    '  %0 = "foo.bar"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n'
    "  %1 = stablehlo.abs %0 : tensor<2xf32>\n"
    "  return %1 : tensor<2xf32>\n}\n"
)
ADVICE = "(--allow-unregistered-dialect lets ops of unknown dialects through)"


def _files(tmp_path: Path, text: str) -> tuple[Path, Path]:
    source = tmp_path / "m.mlir"
    source.write_text(text)
    module = parse_module(text, str(source), make_context(allow_unregistered=True))
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    bytecode = tmp_path / "m.mlirbc"
    bytecode.write_bytes(buffer.getvalue())
    return source, bytecode


@pytest.mark.parametrize("pipeline", [[], ["-p", "stablehlo-canonicalize-conv"]])
def test_an_unknown_dialect_in_bytecode_is_refused_as_in_text(
    opt: Runner, tmp_path: Path, pipeline: list[str]
) -> None:
    source, bytecode = _files(tmp_path, UNKNOWN_OP)
    from_text = opt(source, *pipeline)
    from_bytecode = opt(bytecode, *pipeline)
    assert from_text.code == from_bytecode.code == 1
    assert ADVICE in from_text.err and ADVICE in from_bytecode.err, from_bytecode.err
    assert from_bytecode.err.startswith(f"{bytecode}: error: dialect 'foo' is unknown")
    assert from_bytecode.out == ""


def test_an_unknown_dialect_in_bytecode_passes_with_the_flag(opt: Runner, tmp_path: Path) -> None:
    source, bytecode = _files(tmp_path, UNKNOWN_OP)
    flag = "--allow-unregistered-dialect"
    from_text = opt(source, flag, "-p", "stablehlo-canonicalize-conv")
    from_bytecode = opt(bytecode, flag, "-p", "stablehlo-canonicalize-conv")
    assert from_text.code == from_bytecode.code == 0, from_bytecode.err
    assert '"foo.bar"' in from_bytecode.out
    assert from_bytecode.out == from_text.out


@pytest.mark.parametrize(
    "command",
    [
        ["explain", "{}"],
        ["graph", "{}", "--format", "dot", "-o", "-"],
        ["run", "{}"],
        ["verify", "{}", "-p", "stablehlo-canonicalize-conv"],
    ],
    ids=["explain", "graph", "run", "verify"],
)
def test_every_command_that_advises_the_flag_takes_it(
    cc: Runner, tmp_path: Path, command: list[str]
) -> None:
    """The refusal names `--allow-unregistered-dialect`: the command it comes from takes it, and
    with it the module parses (run and verify then stop at the op they cannot evaluate)."""
    source, _ = _files(tmp_path, UNKNOWN_OP)
    argv = [str(source) if a == "{}" else a for a in command]
    refused = cc(*argv)
    assert refused.code == 1 and ADVICE in refused.err, refused.err
    allowed = cc(*argv, "--allow-unregistered-dialect")
    assert allowed.code in (0, 1) and "unregistered dialect" not in allowed.err, allowed.err
    if command[0] in ("run", "verify"):
        assert allowed.code == 1 and "does not support op 'foo.bar'" in allowed.err
    else:
        assert allowed.code == 0


QUANTIZED_CONV = (
    "func.func @main(%x: tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:3>>,"
    " %w: tensor<3x3x3x4x!quant.uniform<i8:f32, 0.25>>)"
    " -> tensor<1x4x4x4x!quant.uniform<i32:f32, 0.125>> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
    " window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}"
    " {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
    " : (tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:3>>,"
    " tensor<3x3x3x4x!quant.uniform<i8:f32, 0.25>>)"
    " -> tensor<1x4x4x4x!quant.uniform<i32:f32, 0.125>>\n"
    "  return %0 : tensor<1x4x4x4x!quant.uniform<i32:f32, 0.125>>\n}\n"
)


@pytest.mark.parametrize("command", [["convcanon-opt"], ["run"], ["explain"]])
def test_a_quantized_module_is_refused_for_what_it_is_not_for_a_flag(
    opt: Runner, cc: Runner, tmp_path: Path, command: list[str]
) -> None:
    """StableHLO's quantized types live in MLIR's quant dialect, which jaxlib does not build:
    the refusal says so, where MLIR's advice (allow unregistered dialects) only led to the
    conv's verifier refusing the opaque type."""
    source = tmp_path / "q.mlir"
    source.write_text(QUANTIZED_CONV)
    result = opt(source) if command == ["convcanon-opt"] else cc(*command, str(source))
    assert result.code == 1 and result.out == ""
    first = result.err.splitlines()[0]
    assert first.startswith(f"{source}:1:43: error: ") and "has no quant dialect" in first, first
    assert ADVICE not in result.err
