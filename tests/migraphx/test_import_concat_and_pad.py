"""A MIGraphX program with concat and pad as MIGraphX prints them (a constant pad before a conv,
two convs concatenated, a reflect pad as MIGraphX's ONNX parser writes it, slices and a concat,
and pad ops in each mode, negative pads included) imports, runs with `convcanon run` as XLA
computes it, and lowers to TOSA that IREE runs as the reference does (`convcanon verify`). Bad
fields are each a `file:line:col: error:`, exit 1, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from convcanon.diagnostics import ConvcanonError
from convcanon.migraphx.importer import import_program
from convcanon.migraphx.io import print_file

BIN = Path(sys.executable).parent
FIXTURE = Path(__file__).parent / "fixtures" / "concat_and_pad.txt"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)


def _expected(x: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    def conv(a: jax.Array, w: np.ndarray) -> jax.Array:
        return jax.lax.conv_general_dilated(
            a, jnp.asarray(w), (1, 1), "VALID", precision=jax.lax.Precision.HIGHEST
        )

    a = jnp.asarray(x)
    y = jnp.concatenate([conv(jnp.pad(a, [(0, 0), (0, 0), (1, 1), (1, 1)]), w0), conv(a, w1)], 1)
    y = jnp.pad(jax.nn.relu(y), [(0, 0), (0, 0), (0, 0), (1, 1)], mode="reflect")
    y = jnp.pad(y, [(0, 0), (0, 0), (3, 2), (0, 0)], mode="reflect")
    y = jnp.pad(y, [(0, 0), (0, 0), (0, 0), (0, 2)], mode="edge")[..., 1:]  # begin pad -1
    y = jax.lax.pad(y, jnp.float32(-0.5), [(0, 0, 0), (0, 0, 0), (-1, 1, 0), (0, 0, 0)])
    return np.asarray(y)


def test_a_program_with_concat_and_pad_imports_runs_and_lowers(tmp_path: Path) -> None:
    imported = tmp_path / "p.mlir"
    done = _run(str(BIN / "convcanon"), "import-migraphx", str(FIXTURE), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    text = imported.read_text()
    assert "migraphx.concat %1, %2 {axis = 1 : i64}" in text
    assert 'mode = "reflect", pads = [0, 0, 3, 0, 0, 0, 2, 0], value = 0.00000000e+00 : f32' in text

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w0 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    w1 = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, arg0=x.reshape(-1), arg1=w0.reshape(-1), arg2=w1.reshape(-1))
    ran = _run(str(BIN / "convcanon"), "run", str(imported), "--inputs", str(inputs), "-o",
               str(outputs))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    with np.load(outputs) as data:
        got = data["result0"]
    np.testing.assert_allclose(got, _expected(x, w0, w1).reshape(-1), rtol=1e-5, atol=1e-5)

    verified = _run(str(BIN / "convcanon"), "verify", str(imported), "-p", "migraphx-to-tosa",
                    "--engine", "iree")  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("ok:") or "\nok:" in verified.stdout, verified.stdout


X = "x = @param:x -> float_type, {2, 3}, {3, 1}\ny = @param:y -> float_type, {2, 4}, {1, 2}\n"

BAD = [
    ("concat[axis=2](x,y) -> float_type, {2, 7}, {7, 1}",
     "3:6: error: migraphx.concat: axis 2 is out of bounds for concat's inputs with rank 2"),
    ("concat[axis=0](x,y) -> float_type, {4, 3}, {3, 1}",
     "3:6: error: migraphx.concat: concat input #1 has length 4 on dim 1, input #0 3"),
    ("concat[axis=1](x,y) -> float_type, {2, 8}, {8, 1}",
     "3:6: error: migraphx.concat: declared result lens [2, 8] disagree with the computed lens"
     " [2, 7]"),
    ("concat[axis=0]() -> float_type, {2, 3}, {3, 1}",
     "3:6: error: migraphx.concat: concat needs at least one input"),
    ("concat[dim=1](x,y) -> float_type, {2, 7}, {7, 1}",
     "3:13: error: unknown field `dim` for `concat` (fields: axis)"),
    ("pad[mode=7,pads={0, 0, 0, 0},value=0](x) -> float_type, {2, 3}, {3, 1}",
     "3:10: error: field `mode` of `pad` must be one of constant (0), reflect (1), edge (2), got"
     " `7`"),
    ("pad[mode=0,pads={1, 1},value=0](x) -> float_type, {3, 4}, {4, 1}",
     "3:6: error: migraphx.pad: pad of a rank-2 input needs 4 pads (every begin, then every end),"
     " got 2"),
    ("pad[mode=0,pads={0, -2, 0, -1},value=0](x) -> float_type, {2, 1}, {1, 1}",
     "3:6: error: migraphx.pad: pads [0, -2, 0, -1] leave dim 1 of length 3 with 0 elements"),
    ("pad[mode=0,pads={0, 0, 0, 1},value=zero](x) -> float_type, {2, 4}, {4, 1}",
     "3:35: error: field `value` of `pad` must be a number, got `zero`"),
    ("pad[mode=0,pads={0, 0, 0, 1},value=1e39](x) -> float_type, {2, 4}, {4, 1}",
     "3:35: error: field `value` of `pad`: 1e+39 is beyond float's range (MIGraphX holds it as a"
     " 32-bit float)"),
    ("pad[mode=0,pads={0, 0, 0, 1},value=1e999](x) -> float_type, {2, 4}, {4, 1}",
     "3:35: error: field `value` of `pad`: 1e999 is beyond float's range"),
    ("pad[mode=0,pads={0, 0, 0, 99999999999999999999},value=0](x) -> float_type, {2, 4}, {4, 1}",
     "3:32: error: 99999999999999999999 in a field value does not fit in int64"),
    ("pad[mode=0,pads={0, 0, 0, 4611686018427387904},value=0](x) -> float_type, {2, 4}, {4, 1}",
     "3:6: error: migraphx.pad: declared result lens [2, 4] disagree with the computed lens"
     " [2, 4611686018427387907]"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "message"), BAD, ids=[m.split("error: ")[1][:40] for _, m in BAD])
def test_bad_fields_are_diagnosed_where_they_are(line: str, message: str) -> None:
    with pytest.raises(ConvcanonError) as caught:
        import_program(X + f"@1 = {line}\n@2 = @return(@1)\n", "p.txt")
    assert f"{caught.value.loc}: error: {caught.value.message}".startswith(f"p.txt:{message}")


def test_a_bad_field_on_the_command_line_is_exit_1_without_a_traceback(tmp_path: Path) -> None:
    program = tmp_path / "p.txt"
    program.write_text(X + f"@1 = {BAD[5][0]}\n@2 = @return(@1)\n")
    done = _run(str(BIN / "convcanon"), "import-migraphx", str(program))
    assert done.returncode == 1
    assert f"p.txt:{BAD[5][1]}" in done.stderr
    assert "Traceback" not in done.stderr


def _run_program(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    """`convcanon run` of the program as `import-migraphx` writes it (the import must pass)."""
    text, imported = tmp_path / "p.txt", tmp_path / "p.mlir"
    text.write_text(program)
    done = _run(str(BIN / "convcanon"), "import-migraphx", str(text), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    return _run(str(BIN / "convcanon"), "run", str(imported))


def test_a_huge_pad_is_refused_before_it_allocates(tmp_path: Path) -> None:
    """A pad to 2^41 elements (sliced back) imports (its type is only a type) but `run`
    refuses it at the op, over the memory limit, before any buffer is made."""
    done = _run_program(
        tmp_path,
        X + "@1 = pad[mode=1,pads={0, 0, 0, 1099511627773},value=0](x) -> float_type, "
        "{2, 1099511627776}, {1099511627776, 1}\n"
        "@2 = slice[axes={1},starts={0},ends={4}](@1) -> float_type, {2, 4}, {1099511627776, 1}\n"
        "@3 = contiguous(@2) -> float_type, {2, 4}, {4, 1}\n@4 = @return(@3)\n",
    )
    assert done.returncode == 1, done.stderr
    assert "error: 'migraphx.pad' result of shape [2, 1099511627776] needs" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_printed_module_parses_back_to_the_same_text() -> None:
    """Every pad value, NaN and infinities too, prints so that it reads back as itself."""
    program = (
        "x = @param:x -> float_type, {2}, {1}\n"
        "@1 = pad[mode=0,pads={1, 0},value=-nan](x) -> float_type, {3}, {1}\n"
        "@2 = pad[mode=0,pads={1, 0},value=-inf](@1) -> float_type, {4}, {1}\n"
        "@3 = pad[mode=0,pads={1, 0},value=0.333333343](@2) -> float_type, {5}, {1}\n"
        "@4 = concat[axis=-1](@3,x,@1) -> float_type, {10}, {1}\n"
        "@5 = @return(@4)\n"
    )
    from convcanon.xdsl_io import parse_file_text
    from convcanon.xdsl_io import print_file as print_module

    text = print_file(import_program(program, "p.txt"))
    assert "value = 3.33333343e-01 : f32" in text
    assert print_module(parse_file_text(text, "p.mlir")) == text


def test_verify_makes_no_f64_copy_of_a_non_finite_pad_value() -> None:
    """An f32 NaN or infinity prints as its bits (`0xff800000 : f32`); an f64 copy would read
    those bits as a denormal, and judge against the wrong fill."""
    from convcanon.verify.half_b import widened_text

    program = (
        "x = @param:x -> half_type, {2}, {1}\n"
        "@1 = pad[mode=0,pads={1, 0},value=-inf](x) -> half_type, {3}, {1}\n@2 = @return(@1)\n"
    )
    text = print_file(import_program(program, "p.txt"))
    assert widened_text(text, "p.mlir") == (
        None,
        "a hex float attribute (a NaN or infinite pad value)",
    )
    finite = text.replace("0xff800000", "-2.50000000e+00")
    wide, _ = widened_text(finite, "p.mlir")
    assert wide is not None and "value = -2.50000000e+00 : f64" in wide
