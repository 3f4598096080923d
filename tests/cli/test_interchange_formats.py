"""Every interchange format in and out of convcanon-opt, through the one reader and the one writer:
MLIR bytecode (`--emit-bytecode`, read by its magic), StableHLO portable artifacts
(`--target-version`, read as jax.export and `stablehlo-translate --serialize` write them) and XLA
HLO out (`--emit-hlo text|proto`). Each output is read back by its upstream reader and compared,
and programs are run on XLA."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from cli_support import CNN, MIGRAPHX_EXP, Runner  # pyright: ignore[reportMissingImports]
from hlo.cases import conv_cases, random_inputs  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from jax import export
from jaxlib.mlir.dialects import stablehlo

from convcanon.cli import opt_main
from convcanon.hlo.context import make_context, print_module
from convcanon.verify.xla_engine import run_stablehlo_text

GENERAL = "stablehlo-canonicalize-conv{gate=general}"
# the version jax.export writes today: what a consumer four weeks behind reads
TARGET = stablehlo.get_version_from_compatibility_requirement(
    stablehlo.StablehloCompatibilityRequirement.WEEK_4
)


def _opt(*args: object) -> int:
    return opt_main([str(a) for a in args])


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for mine, ref in zip(got, want, strict=True):
        assert mine.shape == ref.shape and mine.dtype == ref.dtype
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=1e-4 * scale)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=conv_cases(elements=("f32",)))
def test_random_conv_programs_round_trip_through_every_format(case, tmp_path: Path) -> None:  # noqa: ANN001
    """text -> bytecode -> text is identical; the artifact is what StableHLO's own loader reads
    as the same program; the HLO, read by XLA's own HLO reader, computes what the original does
    on XLA."""
    source = tmp_path / "case.mlir"
    source.write_text(case.text)
    text, bytecode, artifact, proto = (
        tmp_path / n for n in ("t.mlir", "b.mlirbc", "a.vhlo", "h.pb")
    )
    assert _opt(source, "-p", GENERAL, "-o", text) == 0
    assert _opt(source, "-p", GENERAL, "--emit-bytecode", "-o", bytecode) == 0
    assert bytecode.read_bytes().startswith(b"ML\xefR")
    back = tmp_path / "back.mlir"
    assert _opt(bytecode, "-o", back) == 0
    assert back.read_text() == text.read_text()

    assert _opt(source, "-p", GENERAL, "--target-version", TARGET, "-o", artifact) == 0
    loaded = stablehlo.deserialize_portable_artifact(make_context(), artifact.read_bytes())
    inputs = random_inputs([case.lhs_shape, case.rhs_shape], case.element, seed=0)
    expected = run_stablehlo_text(case.text, inputs)
    _close(run_stablehlo_text(print_module(loaded), inputs), expected)

    assert _opt(source, "-p", GENERAL, "--emit-hlo", "proto", "-o", proto) == 0
    from jax.extend.mlir import hlo_to_stablehlo

    from_xla = make_context()
    from convcanon.hlo.context import ir

    module = ir.Module.parse(hlo_to_stablehlo(proto.read_bytes()), from_xla)
    _close(run_stablehlo_text(print_module(module), inputs), expected)


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (1, 1)])


def test_jax_exports_module_goes_straight_through_convcanon_opt(tmp_path: Path) -> None:
    """`Exported.mlir_module_serialized` written to a file, canonicalized, written back as an
    artifact for the version jax.export writes; jax.export serializes, deserializes and calls
    the result, which equals the original function."""
    x = jnp.asarray(np.random.default_rng(0).standard_normal((1, 3, 9, 9)), jnp.float32)
    w = jnp.asarray(np.random.default_rng(1).standard_normal((4, 3, 3, 3)), jnp.float32)
    exported = export.export(jax.jit(_conv))(x, w)
    given_bytes = tmp_path / "exported.bin"
    given_bytes.write_bytes(exported.mlir_module_serialized)
    out = tmp_path / "canonical.bin"
    assert _opt(given_bytes, "-p", GENERAL, "--target-version", TARGET, "-o", out) == 0
    rewritten = dataclasses.replace(exported, mlir_module_serialized=out.read_bytes())
    assert "stablehlo.pad" in rewritten.mlir_module()
    again = export.deserialize(rewritten.serialize())
    np.testing.assert_allclose(again.call(x, w), _conv(x, w), rtol=1e-5, atol=1e-5)


def test_a_target_version_too_old_for_the_module_is_an_error(opt: Runner, tmp_path: Path) -> None:
    """f8E8M0FNU came after StableHLO 1.0.0: no artifact, never a different program."""
    source = tmp_path / "f8.mlir"
    source.write_text(
        "func.func @main(%a: tensor<2xf8E8M0FNU>) -> tensor<2xf8E8M0FNU> {\n"
        "  return %a : tensor<2xf8E8M0FNU>\n}\n"
    )
    out = tmp_path / "out.vhlo"
    result = opt(source, "--target-version", "1.0.0", "-o", out)
    assert result.code == 1 and not out.exists()
    assert result.err.startswith(f"{source}:1:1: error: StableHLO 1.0.0 cannot express this module")
    assert opt(source, "--target-version", TARGET, "-o", out).code == 0


@pytest.mark.parametrize("version", ["0.1.0", "99.0.0", "1.0", "latest"])
def test_a_target_version_outside_this_stablehlo_is_a_usage_error(
    opt: Runner, version: str
) -> None:
    result = opt(CNN, "--target-version", version)
    assert result.code == 2 and "--target-version must be a StableHLO version" in result.err


def test_binary_output_is_refused_on_a_terminal(tmp_path: Path) -> None:
    """As llvm-as refuses to print bitcode to a console; redirected, it is written."""
    main_end, terminal = os.openpty()
    try:
        entry = "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"
        child = subprocess.run(
            [sys.executable, "-c", entry, str(CNN), "--emit-bytecode"],
            stdout=terminal,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.close(terminal)
        os.close(main_end)
    assert child.returncode == 1
    assert child.stderr == (
        "<stdout>: error: refusing to write binary output to a terminal;"
        " redirect stdout or use -o FILE\n"
    )


def test_binary_output_and_split_input_file_is_a_usage_error(opt: Runner) -> None:
    result = opt(CNN, "--split-input-file", "--emit-bytecode")
    assert result.code == 2 and "writes one module: not with --split-input-file" in result.err


def test_a_migraphx_module_is_written_as_text_only(opt: Runner, tmp_path: Path) -> None:
    source = tmp_path / "mx.mlir"
    source.write_text(MIGRAPHX_EXP)
    result = opt(source, "--emit-bytecode", "-o", tmp_path / "out")
    assert result.code == 1 and "--emit-bytecode writes StableHLO/MHLO modules" in result.err


@pytest.mark.parametrize("cut", [5, 40, 300])
def test_damaged_bytecode_is_a_located_error(opt: Runner, tmp_path: Path, cut: int) -> None:
    whole = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", whole) == 0
    damaged = tmp_path / "cut.mlirbc"
    damaged.write_bytes(whole.read_bytes()[:cut])
    result = opt(damaged)
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"{damaged}: error: cannot read the MLIR bytecode: "), result.err
    assert len(result.err.splitlines()) == 1


def test_every_command_reads_bytecode_as_it_reads_text(cc: Runner, tmp_path: Path) -> None:
    bytecode = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", bytecode) == 0
    for args in (
        ["explain", "{}", "--format", "json"],
        ["graph", "{}", "--format", "dot", "-o", "-"],
    ):
        from_text = cc(*[CNN if a == "{}" else a for a in args])
        from_bytecode = cc(*[bytecode if a == "{}" else a for a in args])
        assert from_bytecode.code == from_text.code == 0, from_bytecode.err
        assert from_bytecode.out.replace(str(bytecode), str(CNN)) == from_text.out
    verified = cc("verify", CNN, bytecode, "--trials", "1")
    assert verified.code == 0, verified.err
    constant = tmp_path / "constant.mlir"
    constant.write_text(
        "func.func @main() -> tensor<2xf32> {\n"
        "  %0 = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    assert _opt(constant, "--emit-bytecode", "-o", tmp_path / "constant.mlirbc") == 0
    ran = cc("run", tmp_path / "constant.mlirbc")
    assert ran.code == 0 and ran.out == cc("run", constant).out, ran.err


def test_bytecode_with_split_input_file_prints_as_without_it(opt: Runner, tmp_path: Path) -> None:
    """Bytecode has no `// -----`: one module, printed without its stored locations as ever
    (it was read as text and cut, and every location came out)."""
    bytecode = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", bytecode) == 0
    whole = opt(bytecode, "-p", GENERAL)
    split = opt(bytecode, "-p", GENERAL, "--split-input-file")
    assert whole.code == split.code == 0, split.err
    assert split.out == whole.out and "loc(" not in split.out


def test_bytecode_that_aborts_the_reader_is_a_diagnostic(opt: Runner, tmp_path: Path) -> None:
    """A dialect name that is not UTF-8 makes jaxlib's bytecode reader abort the process
    (nanobind cannot convert the diagnostic; 2 of 60 random byte mutations of the CNN's bytecode
    did): it runs in a child, so here it is one line and exit 1."""
    whole = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", whole) == 0
    data = whole.read_bytes()
    at = data.index(b"builtin\x00")
    damaged = tmp_path / "abort.mlirbc"
    damaged.write_bytes(data[:at] + b"\xe4" + data[at + 1 :])
    result = opt(damaged)
    assert result.code == 1 and result.out == ""
    assert result.err.startswith(f"{damaged}: error: MLIR's bytecode reader was killed by SIGABRT")
    assert len(result.err.splitlines()) == 1


IREE_OPT = Path(sys.executable).parent / "iree-opt"  # iree-base-compiler, a test extra


def test_bytecode_of_another_producer_reads_and_ours_reads_upstream(tmp_path: Path) -> None:
    """iree-opt's bytecode (another MLIR, another version) reads as its text does; our bytecode
    output parses and verifies in iree-opt, printing what our text output prints."""
    theirs, ours = tmp_path / "iree.mlirbc", tmp_path / "ours.mlirbc"
    made = subprocess.run([IREE_OPT, CNN, "--emit-bytecode", "-o", theirs], capture_output=True)
    assert made.returncode == 0, made.stderr
    text, from_theirs = tmp_path / "text.mlir", tmp_path / "from-iree.mlir"
    assert _opt(CNN, "-p", GENERAL, "-o", text) == 0
    assert _opt(theirs, "-p", GENERAL, "-o", from_theirs) == 0
    assert from_theirs.read_text() == text.read_text()
    assert _opt(CNN, "-p", GENERAL, "--emit-bytecode", "-o", ours) == 0
    upstream = subprocess.run([IREE_OPT, ours], capture_output=True, text=True)
    assert upstream.returncode == 0, upstream.stderr
    again = subprocess.run([IREE_OPT, text], capture_output=True, text=True)
    assert upstream.stdout == again.stdout


def test_migraphx_passes_on_bytecode_are_an_error(opt: Runner, tmp_path: Path) -> None:
    bytecode = tmp_path / "cnn.mlirbc"
    assert _opt(CNN, "--emit-bytecode", "-o", bytecode) == 0
    result = opt(bytecode, "-p", "migraphx-to-tosa")
    assert result.code == 1
    assert (
        result.err
        == f"{bytecode}: error: this is MLIR bytecode; migraphx/TOSA passes read MLIR text\n"
    )


@pytest.mark.parametrize(
    "op", ["chlo.erf %a : tensor<2xf32> -> tensor<2xf32>", "mhlo.abs %a : tensor<2xf32>"]
)
def test_an_artifact_of_other_dialects_ops_is_an_error(
    opt: Runner, tmp_path: Path, op: str
) -> None:
    """The serializer keeps ops it does not know as they are: a 'portable' artifact that no
    StableHLO consumer reads. Only Shardy's sdy ops are kept, as jax.export keeps them."""
    source = tmp_path / "m.mlir"
    source.write_text(
        f"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {{\n  %0 = {op}\n"
        "  return %0 : tensor<2xf32>\n}\n"
    )
    out = tmp_path / "out.vhlo"
    result = opt(source, "--target-version", TARGET, "-o", out)
    assert result.code == 1 and not out.exists()
    name = op.split()[0]
    assert without_source_lines(result.err) == (
        f"{source}:2:8: error: a StableHLO portable artifact holds StableHLO ops (and Shardy's"
        f" sdy ones); this module also has {name}\n"
    )
