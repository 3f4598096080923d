"""Every reader, fed damaged versions of real files: exit 1/2 with a diagnostic, never a crash.

One hypothesis test per reader (MHLO, migraphx and TOSA MLIR to `convcanon-opt`, MIGraphX program
text to `import-migraphx`, modules and npz inputs to `run`, modules to `verify`, `explain` and
`graph`). The property is `assert_no_harm`: exit 0/1/2, no traceback, the input's bytes unchanged,
no output file and no temporary left behind on failure. CONVCANON_FUZZ_EXAMPLES scales the runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main

from . import sources
from .conftest import Outcome, assert_no_harm, digest, run_cli
from .mutations import mutated

FUZZ = settings(
    max_examples=sources.examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

Entry = Callable[[Sequence[str]], int]


def _log(work: Path, code: int) -> None:
    """For a campaign (CONVCANON_FUZZ_LOG=file): one line per input tried, reader and exit code."""
    log = os.environ.get("CONVCANON_FUZZ_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{work.name.rstrip('0123456789')}\t{code}\n")


def _attack(
    entry: Entry,
    argv: Callable[[Path, Path], list[str]],
    damaged: bytes,
    suffix: str,
    out_name: str | None,
    work: Path,
    capsys: pytest.CaptureFixture[str],
    extra: dict[str, bytes] | None = None,
) -> int:
    """Write `damaged` (and `extra` files), run the command, check no harm; returns the exit."""
    input_file = work / f"input{suffix}"
    input_file.write_bytes(damaged)
    for name, data in (extra or {}).items():
        (work / name).write_bytes(data)
    output_file = work / out_name if out_name else None
    before = digest(input_file)
    outcome = run_cli(entry, argv(input_file, output_file or work / "-"), capsys)
    assert_no_harm(outcome, input_file, before, output_file)
    _log(work, outcome.code)
    if outcome.code == 0 and output_file is not None:
        assert output_file.stat().st_size > 0, "success must produce output"
    return outcome.code


@FUZZ
@given(data=st.data())
def test_damaged_mhlo_to_opt(data: st.DataObject, tmp_path_factory, capsys):
    damaged = data.draw(mutated(sources.mhlo_text().encode()))
    pipeline = data.draw(
        st.sampled_from(["", "canonicalize-conv", "canonicalize-conv{gate=general}"])
    )
    _attack(
        opt_main,
        lambda i, o: [str(i), "-p", pipeline, "-o", str(o)],
        damaged,
        ".mlir",
        "out.mlir",
        tmp_path_factory.mktemp("mhlo"),
        capsys,
    )


@FUZZ
@given(data=st.data())
def test_damaged_migraphx_mlir_to_opt(data: st.DataObject, tmp_path_factory, capsys):
    damaged = data.draw(mutated(sources.migraphx_text().encode()))
    pipeline = data.draw(st.sampled_from(["", "migraphx-to-tosa"]))
    _attack(
        opt_main,
        lambda i, o: [str(i), "-p", pipeline, "-o", str(o)],
        damaged,
        ".mlir",
        "out.mlir",
        tmp_path_factory.mktemp("mx"),
        capsys,
    )


@FUZZ
@given(data=st.data())
def test_damaged_tosa_to_opt(data: st.DataObject, tmp_path_factory, capsys):
    damaged = data.draw(mutated(sources.tosa_text().encode()))
    _attack(
        opt_main,
        lambda i, o: [str(i), "-o", str(o)],
        damaged,
        ".mlir",
        "out.mlir",
        tmp_path_factory.mktemp("tosa"),
        capsys,
    )


@FUZZ
@given(data=st.data())
def test_damaged_program_to_import(data: st.DataObject, tmp_path_factory, capsys):
    damaged = data.draw(mutated(sources.PROGRAM.read_bytes()))
    _attack(
        main,
        lambda i, o: ["import-migraphx", str(i), "-o", str(o)],
        damaged,
        ".txt",
        "out.mlir",
        tmp_path_factory.mktemp("prog"),
        capsys,
    )


def _run_sources() -> dict[str, tuple[bytes, bytes | None]]:
    return {
        "migraphx": (sources.migraphx_text().encode(), sources.migraphx_inputs()),
        "tosa": (sources.tosa_text().encode(), None),
    } | (
        {"stablehlo-corpus": (sources.CORPUS.read_bytes(), None)} if sources.CORPUS.exists() else {}
    )


@FUZZ
@given(data=st.data())
def test_damaged_module_to_run(data: st.DataObject, tmp_path_factory, capsys):
    kind = data.draw(st.sampled_from(sorted(_run_sources())))
    module, inputs = _run_sources()[kind]
    if kind == "tosa":
        inputs = sources.migraphx_inputs()
    damaged = data.draw(mutated(module))
    extra = {"in.npz": inputs} if inputs else {}
    work = tmp_path_factory.mktemp("run")
    feed = ["--inputs", str(work / "in.npz")] if inputs else []
    _attack(
        main,
        lambda i, o: ["run", str(i), *feed, "--output", str(o), "--memory-limit", "64MiB"],
        damaged,
        ".mlir",
        "out.npz",
        work,
        capsys,
        extra,
    )


@FUZZ
@given(data=st.data())
def test_damaged_npz_to_run(data: st.DataObject, tmp_path_factory, capsys):
    """The module is fine, the inputs archive is damaged; the npz is the file that must survive."""
    kind = data.draw(st.sampled_from(["stablehlo", "migraphx", "tosa"]))
    module = {
        "stablehlo": sources.STABLEHLO.read_bytes(),
        "migraphx": sources.migraphx_text().encode(),
        "tosa": sources.tosa_text().encode(),
    }[kind]
    npz = sources.cnn_inputs() if kind == "stablehlo" else sources.migraphx_inputs()
    damaged = data.draw(mutated(npz))
    work = tmp_path_factory.mktemp("npz")
    _attack(
        main,
        lambda i, o: ["run", str(work / "m.mlir"), "--inputs", str(i), "--output", str(o)],
        damaged,
        ".npz",
        "out.npz",
        work,
        capsys,
        {"m.mlir": module},
    )


@FUZZ
@given(data=st.data())
def test_damaged_module_to_verify(data: st.DataObject, tmp_path_factory, capsys):
    """A damaged AFTER that still parses may compute something else: that is a mismatch report
    on stdout (exit 1, by design), not an error; everything else must be a diagnostic."""
    source = data.draw(
        st.sampled_from([p for p in (sources.CORPUS, sources.STABLEHLO) if p.exists()])
    )
    damaged = data.draw(mutated(source.read_bytes()))
    work = tmp_path_factory.mktemp("verify")
    (work / "before.mlir").write_bytes(source.read_bytes())
    after = work / "input.mlir"
    after.write_bytes(damaged)
    before = digest(after)
    capsys.readouterr()
    code = main(["verify", str(work / "before.mlir"), str(after), "--trials", "1"])
    captured = capsys.readouterr()
    _log(work, code)
    if code == 1 and not captured.err.strip():
        assert captured.out.startswith("mismatch"), captured
        assert digest(after) == before
        return
    assert_no_harm(Outcome(code, captured.err), after, before, None)


@FUZZ
@given(data=st.data())
def test_damaged_module_to_explain(data: st.DataObject, tmp_path_factory, capsys):
    source, pipeline = data.draw(
        st.sampled_from(
            [
                (sources.STABLEHLO.read_bytes(), "stablehlo-canonicalize-conv{gate=general}"),
                (sources.mhlo_text().encode(), "canonicalize-conv"),
            ]
        )
    )
    damaged = data.draw(mutated(source))
    _attack(
        main,
        lambda i, o: ["explain", str(i), "-p", pipeline, "--format", "json"],
        damaged,
        ".mlir",
        None,
        tmp_path_factory.mktemp("explain"),
        capsys,
    )


@FUZZ
@given(data=st.data())
def test_damaged_module_to_graph(data: st.DataObject, tmp_path_factory, capsys):
    source, pipeline = data.draw(
        st.sampled_from(
            [
                (sources.STABLEHLO.read_bytes(), "stablehlo-canonicalize-conv"),
                (sources.migraphx_text().encode(), "migraphx-to-tosa"),
                (sources.tosa_text().encode(), ""),
            ]
        )
    )
    damaged = data.draw(mutated(source))
    _attack(
        main,
        lambda i, o: ["graph", str(i), "-p", pipeline, "--format", "dot", "-o", str(o)],
        damaged,
        ".mlir",
        "out.dot",
        tmp_path_factory.mktemp("graph"),
        capsys,
    )


def _cnn_binary(kind: str) -> bytes:
    """The example CNN as MLIR bytecode or as a StableHLO 1.0.0 portable artifact."""
    from convcanon.hlo.context import parse_module
    from convcanon.hlo.formats import module_bytecode, portable_artifact

    module = parse_module(sources.STABLEHLO.read_text(), "cnn.mlir")
    if kind == "bytecode":
        return module_bytecode(module)
    return portable_artifact(module, "1.0.0", "cnn.mlir")


@settings(
    max_examples=sources.examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), kind=st.sampled_from(["bytecode", "artifact"]))
def test_damaged_bytecode_and_artifacts_to_opt(
    data: st.DataObject, kind: str, tmp_path_factory, capsys
):
    """Read in a child process: jaxlib's bytecode reader aborts on some damaged bytecode."""
    damaged = data.draw(mutated(_cnn_binary(kind)))
    pipeline = data.draw(st.sampled_from(["", "stablehlo-canonicalize-conv{gate=general}"]))
    emit = data.draw(st.sampled_from([[], ["--emit-bytecode"], ["--target-version", "1.0.0"]]))
    _attack(
        opt_main,
        lambda i, o: [str(i), "-p", pipeline, *emit, "-o", str(o)],
        damaged,
        ".mlirbc",
        "out.mlirbc",
        tmp_path_factory.mktemp(kind),
        capsys,
    )
