"""Random command lines of `convcanon run` and `convcanon verify` on hostile files.

Every flag comes from the command's own parser (as in test_command_lines), with good and bad
values; the files it names are damaged or odd: MLIR text and bytecode cut short or mutated,
npz archives with wrong dtypes, shapes, names, pickles or headers that claim more than they
hold, missing paths, directories, FIFOs, a file that cannot be read (`/proc/self/mem`: EIO),
a path through a file, and outputs that are the inputs themselves (also through a symlink).

Whatever the mix, a run ends in exit 0, 1 or 2 (verify: 3 when it is inconclusive) with no
traceback; exit 1 ends in an error line that starts with the file it is about (`FILE:LINE:COL:`
where the error is in a module's text); every input keeps its bytes; nothing is written but
the named output, and a failed run writes none. The modules are a handful of ops, so a run is
cheap: the reference engine only (XLA and IREE: a few fixed lines at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import zipfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main

from . import sources
from .hostile_files import (
    ODD_PATHS,
    Files,
    Run,
    check_outcome,
    new_files,
    odd_path,
    run_in_process,
    snapshot,
)
from .mutations import mutated
from .test_command_lines import PIPELINES, flags, subcommand

# A stride-2, padded conv (what the pass rewrites) and an add: a few ops, run in milliseconds.
CONV = """\
func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], \
window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} \
{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : \
(tensor<1x5x5x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32>
  %1 = stablehlo.add %0, %0 : tensor<1x3x3x2xf32>
  return %1 : tensor<1x3x3x2xf32>
}
"""
CONV_ARGS = {"arg0": (1, 5, 5, 2), "arg1": (3, 3, 2, 2)}
MIGRAPHX_ARGS = {"arg0": (144,), "arg1": (108,)}

MODULES = [
    "conv",
    "migraphx",
    "tosa",
    "bytecode",
    "artifact",
    "split",
    "mutated-text",
    "mutated-bytecode",
    "empty",
    "garbage",
    *ODD_PATHS,
]
NPZS = [
    "good",
    "compressed",
    "fortran-order",
    "raw-bits",
    "extra-member",
    "wrong-dtype",
    "wrong-shape",
    "wrong-names",
    "pickle",
    "huge-shape",
    "huge-header",
    "truncated",
    "mutated",
    "single-npy",
    "empty",
    *ODD_PATHS,
    "the-module",
]
OUTPUTS = ["none", "stdout", "fresh", "the-module", "the-npz", "link-to-module", "directory",
           "missing-directory", "through-the-module", "full-device", "unwritable",
           "empty-path"]  # fmt: skip

RUN = subcommand("run")
VERIFY = subcommand("verify")
# drawn by the tests themselves; --engine other than the reference has its own few lines below
RUN_APART = ("input", "inputs", "output")
VERIFY_APART = ("before", "after", "pass_pipeline", "engine")


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    return sources.npz_bytes(arrays)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _compressed_npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # pyright: ignore[reportArgumentType]
    return buffer.getvalue()


def _npz_of_members(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _header_claiming(shape: tuple[int, ...], pad: int = 0) -> bytes:
    """A `.npy` member whose header declares `shape` (f4) but holds no data; `pad` spaces
    make the header itself large."""
    header = io.BytesIO()
    np.lib.format.write_array_header_2_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    raw = header.getvalue()
    if pad:  # the header text grows, its length field with it (version 2: 4-byte length)
        text = raw[12:].rstrip(b"\n") + b" " * pad + b"\n"
        raw = raw[:8] + len(text).to_bytes(4, "little") + text
    return raw


def _good_arrays(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


@cache
def _bytecode(kind: str) -> bytes:
    """CONV as MLIR bytecode or as a StableHLO portable artifact, written by convcanon-opt."""
    with contextlib.ExitStack() as stack:
        import tempfile

        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        (work / "conv.mlir").write_text(CONV)
        out = work / "conv.mlirbc"
        flag = ["--emit-bytecode"] if kind == "bytecode" else ["--target-version", "1.0.0"]
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        assert opt_main([str(work / "conv.mlir"), *flag, "-o", str(out)]) == 0
        return out.read_bytes()


def _module(data: st.DataObject | None, files: Files, name: str, role: str) -> Path:
    """Write the module `name` as `inputs/ROLE.mlir` (or make that path odd); its path."""
    path = files.inputs / f"{role}.mlir"
    contents: dict[str, bytes | None] = {
        "conv": CONV.encode(),
        "migraphx": sources.migraphx_text().encode(),
        "tosa": sources.tosa_text().encode(),
        "split": (CONV + "// -----\nfunc.func @f(\n// -----\n" + CONV).encode(),
        "empty": b"",
        "garbage": b"\xff\xfe%0 = \x00 stablehlo.pad {{{",
    }
    if name in ("bytecode", "artifact"):
        path.write_bytes(_bytecode(name))
    elif name == "mutated-text":
        assert data is not None
        path.write_bytes(data.draw(mutated(CONV.encode()), label=f"{role} text"))
    elif name == "mutated-bytecode":
        assert data is not None
        whole = _bytecode(data.draw(st.sampled_from(["bytecode", "artifact"])))
        path.write_bytes(data.draw(mutated(whole), label=f"{role} bytecode"))
    elif name in ODD_PATHS:
        path = odd_path(files, name, path.name, CONV.encode())
    else:
        path.write_bytes(contents[name] or b"")
    return path


def _npz_file(data: st.DataObject, files: Files, name: str, module: str, module_path: Path) -> Path:
    """Write the npz `name` for `module` as `inputs/in.npz` (or make that path odd)."""
    path = files.inputs / "in.npz"
    shapes = MIGRAPHX_ARGS if module in ("migraphx", "tosa") else CONV_ARGS
    good = _good_arrays(shapes)
    first = next(iter(good))
    members: dict[str, bytes] = {
        "good": _npz(good),
        "compressed": _compressed_npz(good),
        "fortran-order": _npz({k: np.asfortranarray(v) for k, v in good.items()}),
        "raw-bits": _npz({k: v.view(np.dtype("V4")) for k, v in good.items()}),
        "extra-member": _npz(good | {"junk": np.zeros(3, np.float32)}),
        "wrong-dtype": _npz(good | {first: good[first].astype(np.float64)}),
        "wrong-shape": _npz(good | {first: good[first].reshape(-1)[1:]}),
        "wrong-names": _npz({f"x{k}": v for k, v in good.items()}),
        "pickle": _npz(good | {first: np.array([{"evil": 1}], dtype=object)}),
        "huge-shape": _npz_of_members({f"{first}.npy": _header_claiming((1 << 40,))}),
        "huge-header": _npz_of_members({f"{first}.npy": _header_claiming((3,), pad=1 << 20)}),
        "single-npy": _npy(good[first]),
        "empty": b"",
    }
    if name == "mutated":
        path.write_bytes(data.draw(mutated(_npz(good)), label="npz"))
    elif name == "truncated":
        whole = _npz(good)
        path.write_bytes(whole[: data.draw(st.integers(0, len(whole) - 1), label="cut")])
    elif name in ODD_PATHS:
        path = odd_path(files, name, path.name, _npz(good))
    elif name == "the-module":
        return module_path
    else:
        path.write_bytes(members[name])
    return path


def _output(files: Files, name: str, module: Path, npz: Path | None) -> str | None:
    """The path given to -o, or None for no -o. A FIFO input is never the output: writing
    one waits for a reader, as `cat x > fifo` does."""
    paths = {
        "none": None,
        "stdout": "-",
        "fresh": str(files.out / "out.npz"),
        "the-module": str(module),
        "the-npz": str(npz or module),
        "directory": str(files.out),
        "missing-directory": str(files.out / "no" / "out.npz"),
        "empty-path": "",
        "full-device": "/dev/full",  # ENOSPC
        "unwritable": "/proc/self/mem",  # EIO
        "through-the-module": str(module / "out.npz"),  # ENOTDIR, or a file in a directory
    }
    if name in ("the-module", "link-to-module", "the-npz") and (npz or module).is_fifo():
        name = "fresh"
    if name in ("link-to-module", "through-the-module") and module == Path("-"):
        name = "fresh"  # stdin is no file to link to or go through
    if name == "link-to-module":
        link = files.out / "link.npz"
        link.symlink_to(module)
        return str(link)
    return paths[name]


FUZZ = settings(
    max_examples=sources.examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _some_flags(data: st.DataObject, parser: argparse.ArgumentParser, apart: tuple[str, ...]):
    """The parser's flags half the time, else none: a bad value ends a line at its parsing
    (exit 2), so half the lines get to the files."""
    return data.draw(flags(parser, apart), label="flags") if data.draw(st.booleans()) else []


def _run_line(data: st.DataObject, files: Files) -> tuple[list[str], str | None]:
    """A `run` command line on hostile files, and the output it names (None: no -o)."""
    module_name = data.draw(st.sampled_from(MODULES), label="module")
    module = _module(data, files, module_name, "m")
    npz: Path | None = None
    words = _some_flags(data, RUN, RUN_APART)
    if data.draw(st.booleans(), label="--inputs"):
        npz = _npz_file(data, files, data.draw(st.sampled_from(NPZS)), module_name, module)
        words += ["--inputs", str(npz)]
    output = _output(files, data.draw(st.sampled_from(OUTPUTS), label="-o"), module, npz)
    return ["run", str(module), *words, *(["-o", output] if output is not None else [])], output


def _verify_line(data: st.DataObject, files: Files) -> tuple[list[str], str | None]:
    """A `verify` command line on hostile files: BEFORE AFTER, or BEFORE -p PIPELINE."""
    before_path = _module(data, files, data.draw(st.sampled_from(MODULES)), "before")
    words = _some_flags(data, VERIFY, VERIFY_APART)
    if data.draw(st.booleans(), label="AFTER or -p"):
        after = _module(data, files, data.draw(st.sampled_from(MODULES)), "after")
        positional = [str(before_path), str(after)]
    else:
        positional = [str(before_path)]
        words += ["-p", data.draw(st.sampled_from(PIPELINES), label="-p")]
    return ["verify", *positional, *words], None


# each command: its line, and its exit codes (verify's 3: inconclusive)
LINES = {"run": (_run_line, (0, 1, 2)), "verify": (_verify_line, (0, 1, 2, 3))}


@FUZZ
@given(data=st.data(), command=st.sampled_from(sorted(LINES)))
def test_run_and_verify_on_any_files_and_flags_end_in_an_exit_code_and_harm_nothing(
    data: st.DataObject,
    command: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    files = new_files(tmp_path_factory)
    line, exits = LINES[command]
    argv, output = line(data, files)
    before = snapshot(files.inputs)
    run = Run(command, argv, *run_in_process(main, argv, files, capsysbinary))
    fresh = files.out / "out.npz"
    check_outcome(run, files, before, fresh if output == str(fresh) else None, exits)
    if run.code == 0 and output == str(fresh):
        assert fresh.exists(), argv
    if run.code == 0 and output == "-":
        assert run.out.startswith(b"PK"), argv  # the npz, whole, on stdout


@pytest.mark.parametrize("engine", ["xla", "iree"])
@pytest.mark.parametrize("after", ["conv", "mutated-text", "bytecode", "missing"])
def test_verify_on_a_real_engine_harms_nothing(
    engine: str, after: str, tmp_path_factory: pytest.TempPathFactory, capsysbinary
) -> None:
    """A few lines on XLA and IREE (each run compiles): the same properties."""
    pytest.importorskip("jax" if engine == "xla" else "iree.compiler")
    files = new_files(tmp_path_factory)
    before_path = _module(None, files, "conv", "before")
    if after == "mutated-text":  # a stride the conv's result type contradicts
        after_path = files.inputs / "after.mlir"
        after_path.write_text(CONV.replace("stride = [2, 2]", "stride = [1, 2]"))
    else:
        after_path = _module(None, files, after, "after")
    argv = ["verify", str(before_path), str(after_path), "--engine", engine, "--trials", "1"]
    before = snapshot(files.inputs)
    run = Run("verify", argv, *run_in_process(main, argv, files, capsysbinary))
    check_outcome(run, files, before, None, (0, 1, 2, 3))
    assert run.code == {"conv": 0, "bytecode": 0}.get(after, 1), run
