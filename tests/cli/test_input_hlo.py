"""`convcanon-opt --input-hlo`: XLA HLO produced by JAX itself goes through the passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 2), (0, 1)])


@pytest.fixture(scope="module")
def hlo_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    x, w = jnp.ones((1, 3, 9, 9)), jnp.ones((4, 3, 3, 3))
    computation = jax.jit(_conv).lower(x, w).compiler_ir("hlo")
    directory = tmp_path_factory.mktemp("hlo")
    proto = directory / "conv.pb"
    proto.write_bytes(computation.as_serialized_hlo_module_proto())
    text = directory / "conv.hlo"
    text.write_text(computation.as_hlo_text())
    return proto, text


@pytest.mark.parametrize("which", [0, 1], ids=["proto", "text"])
def test_hlo_input_is_converted_then_canonicalized(hlo_files: tuple[Path, Path], which: int):
    result = subprocess.run(
        [*OPT, "--input-hlo", str(hlo_files[which]), "-p", "stablehlo-canonicalize-conv"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "stablehlo.pad" in result.stdout
    assert "stride = [2, 2]" not in result.stdout


def test_garbage_hlo_is_a_one_line_error(tmp_path: Path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x08\x01garbage-not-a-proto\xff\xfe")
    result = subprocess.run([*OPT, "--input-hlo", str(bad)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}: error: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("which", [0, 1], ids=["proto", "text"])
def test_without_input_hlo_the_error_suggests_it(hlo_files: tuple[Path, Path], which: int):
    result = subprocess.run([*OPT, str(hlo_files[which])], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{hlo_files[which]}")
    assert "with --input-hlo" in result.stderr and "Traceback" not in result.stderr


def test_explain_takes_input_hlo(hlo_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]):
    from convcanon.cli import main

    assert main(["explain", "--input-hlo", str(hlo_files[0]), "--format", "json"]) == 0
    assert '"convs_seen": 1' in capsys.readouterr().out


@pytest.mark.parametrize(
    "command", [["run", "{hlo}"], ["verify", "{hlo}", "{hlo}"], ["graph", "{hlo}", "-o", "-"]]
)
def test_every_mlir_reader_hints_at_input_hlo_for_hlo_text(tmp_path: Path, command: list[str]):
    hlo = tmp_path / "m.hlo"
    hlo.write_text("HloModule m\nENTRY e { ROOT p = f32[2] parameter(0) }\n")
    args = [part.format(hlo=hlo) for part in command]
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from convcanon.cli import main; sys.exit(main())",
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert f"{hlo}:1:1: error: this is XLA HLO text, not MLIR" in result.stderr
    assert "with --input-hlo" in result.stderr and "Traceback" not in result.stderr


STRIDE_ZERO = """HloModule m

ENTRY main {
  p0 = f32[1,5,5,2] parameter(0)
  p1 = f32[3,3,2,4] parameter(1)
  ROOT c = f32[1,3,3,4] convolution(p0, p1), window={size=3x3 stride=0x1}, dim_labels=b01f_01io->b01f
}
"""  # noqa: E501


@pytest.mark.parametrize("which", ["text", "proto"])
def test_hlo_that_stablehlo_refuses_is_one_line_at_its_instruction(tmp_path: Path, which: str):
    """XLA's HLO reader takes a stride of 0; StableHLO's verifier refuses the converted conv.
    The refusal was three lines (MLIR's dump and a bytecode-version note) without a location."""
    from jax._src.lib import hlo  # pyright: ignore

    path = tmp_path / ("m.hlo" if which == "text" else "m.pb")
    if which == "text":
        path.write_text(STRIDE_ZERO)
    else:
        path.write_bytes(hlo.hlo_module_from_text(STRIDE_ZERO).as_serialized_hlo_module_proto())
    result = subprocess.run([*OPT, "--input-hlo", str(path)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    where = f"{path}:6:8" if which == "text" else f"{path}"
    assert result.stderr.splitlines() == [
        f"{where}: error: instruction %c: expects window to have positive stride for 0-th window"
        " dimension, but got 0."
    ]


@pytest.mark.parametrize(
    ("hlo", "expected"),
    [
        (
            STRIDE_ZERO.replace("convolution(", "convolutio("),
            "m.hlo:6:25: error: cannot parse HLO text: expects opcode but sees: convolutio,"
            " error: Unknown opcode: convolutio",
        ),
        (
            "HloModule m\n\nENTRY main {\n  ROOT p0 = f32[9223372036854775807] parameter(0)\n}\n",
            "m.hlo: error: XLA cannot read the HLO: INVALID_ARGUMENT: Shape"
            " f32[9223372036854775807] size may overflow int64_t.",
        ),
    ],
    ids=["syntax", "shape"],
)
def test_bad_hlo_text_is_located_and_named_as_text(tmp_path: Path, hlo: str, expected: str):
    """XLA's parser says where the text is wrong (it was cut to "Syntax error when trying to
    parse the text as a HloModule:"), and text XLA parses but cannot read is not called a bad
    proto."""
    path = tmp_path / "m.hlo"
    path.write_text(hlo)
    result = subprocess.run([*OPT, "--input-hlo", str(path)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"{tmp_path}/{expected}"]
