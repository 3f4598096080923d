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
