"""`convcanon-opt --input-hlo`: XLA HLO produced by JAX itself goes through the passes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from hypothesis import example, given, settings
from hypothesis import strategies as st

OPT = [sys.executable, "-c", "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"]


def _conv(x: jax.Array, w: jax.Array) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (2, 2), [(1, 2), (0, 1)])


@pytest.fixture(scope="module")
def hlo_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    x, w = jnp.ones((1, 3, 9, 9)), jnp.ones((4, 3, 3, 3))
    computation = jax.jit(_conv).lower(x, w).compiler_ir("hlo")
    assert computation is not None
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
    assert diagnostic_lines(result.stderr)[:-1] == [
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
    assert diagnostic_lines(result.stderr)[:-1] == [f"{tmp_path}/{expected}"]


# a conv on line 6, carrying the metadata JAX writes into the HLO it exports
PLACED = """HloModule m

ENTRY main {
  p0 = TYPE[1,5,5,2] parameter(0)
  p1 = TYPE[3,3,2,4] parameter(1)
  ROOT c = TYPE[1,5,5,4] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, metadata={op_name="jit(f)/conv" source_file="/home/u/model.py" source_line=12}
}
"""  # noqa: E501


def _write_hlo(path: Path, text: str) -> Path:
    """`text` as HLO text at `path`, or as a serialized HloModuleProto when `path` is a .pb."""
    if path.suffix == ".pb":
        from jax._src.lib import hlo  # pyright: ignore

        path.write_bytes(hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["m.hlo", "m.pb"])
def test_an_error_at_a_converted_op_is_placed_at_its_instruction_with_its_metadata(
    tmp_path: Path, name: str
):
    """It was placed at the converted text's line:col under the .hlo file's name (`m.hlo:3:10`,
    the `ENTRY main {` line) and the metadata was dropped. A proto has no lines: its name only."""
    path = _write_hlo(tmp_path / name, PLACED.replace("TYPE", "f8e8m0fnu"))
    result = subprocess.run(
        [*OPT, "--input-hlo", str(path), "-p", "stablehlo-canonicalize-conv"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stdout == ""
    where = f"{path}:6:8" if name == "m.hlo" else f"{path}"
    assert diagnostic_lines(result.stderr)[:-1] == [
        f"{where}: error: EUET001: element type f8E8M0FNU of the convolution's lhs cannot be"
        " zero-padded",
        "/home/u/model.py:12:1: note: in jit(f)/conv",
    ]


def test_explain_and_debuginfo_place_a_conv_at_its_instruction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    import json

    from convcanon.cli import main

    path = _write_hlo(tmp_path / "m.hlo", PLACED.replace("TYPE", "f32"))
    assert main(["explain", "--input-hlo", str(path), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["convs"]
    assert (row["location"], row["source"], row["op_name"]) == (
        f"{path}:6:8",
        "/home/u/model.py:12:1",
        "jit(f)/conv",
    )
    printed = subprocess.run(
        [*OPT, "--input-hlo", str(path), "--mlir-print-debuginfo"], capture_output=True, text=True
    )
    assert printed.returncode == 0, printed.stderr
    # JAX's shape: name(op_name, source_file:source_line:col), fused with the instruction's place
    assert f'loc("{path}":6:8)' in printed.stdout
    assert 'loc("jit(f)/conv"(#loc' in printed.stdout
    assert 'loc("/home/u/model.py":12:0)' in printed.stdout
    plain = subprocess.run([*OPT, "--input-hlo", str(path)], capture_output=True, text=True)
    assert plain.returncode == 0 and "loc(" not in plain.stdout  # locations only when asked


_UNARY = {"negate": "stablehlo.negate", "tanh": "stablehlo.tanh", "abs": "stablehlo.abs"}
_BINARY = {"add": "stablehlo.add", "multiply": "stablehlo.multiply"}


@st.composite
def _laid_out_hlo(draw: st.DrawFn) -> tuple[str, dict[tuple[int, int], tuple[str, str | None]]]:
    """HLO text whose instructions sit at random lines and columns, some with metadata; and
    what is at each (line, col): the op it converts to and its metadata's op_name."""
    lines = ["HloModule m", "", "ENTRY main {"]
    placed: dict[tuple[int, int], tuple[str, str | None]] = {}
    previous = "p0"
    count = draw(st.integers(1, 6))
    for index in range(count + 1):
        lines += [""] * draw(st.integers(0, 3))
        indent = " " * draw(st.integers(0, 6))
        root = "ROOT " if index == count else ""
        percent = draw(st.sampled_from(["", "%"]))
        name = f"v{index}"
        if index == 0:
            body, op = "f32[4] parameter(0)", "parameter"
        else:
            opcode = draw(st.sampled_from(sorted(_UNARY) + sorted(_BINARY)))
            operands = f"{previous}" if opcode in _UNARY else f"{previous}, p0"
            body, op = f"f32[4] {opcode}({operands})", {**_UNARY, **_BINARY}[opcode]
            previous = name
        if index == 0:
            name = "p0"
        op_name = draw(st.sampled_from([None, f"jit(f)/op{index}"]))
        metadata = ""
        if op_name is not None:
            metadata = f', metadata={{op_name="{op_name}" source_file="f.py" source_line={index}}}'
        lines.append(f"{indent}{root}{percent}{name} = {body}{metadata}")
        placed[(len(lines), len(indent) + len(root) + len(percent) + 1)] = (op, op_name)
    lines.append("}")
    return "\n".join(lines) + "\n", placed


@settings(max_examples=25, deadline=None)
@given(laid_out=_laid_out_hlo())
def test_every_instruction_at_any_line_is_placed_at_its_line(
    laid_out: tuple[str, dict[tuple[int, int], tuple[str, str | None]]],
):
    """Each converted op (and the parameter's argument) is at its instruction's line:col in the
    file, with its own metadata; the positions are read from the text, the ops' kinds from XLA's
    converter."""
    from jaxlib.mlir import ir

    from convcanon.hlo.context import downcast, make_context
    from convcanon.hlo.hlo_import import hlo_to_bytecode

    text, placed = laid_out
    module = ir.Module.parse(hlo_to_bytecode(text.encode(), "m.hlo"), make_context())
    found: dict[tuple[int, int], tuple[str, str | None]] = {}
    func = module.body.operations[0]
    (argument,) = func.regions[0].blocks[0].arguments
    where = downcast(argument.location)
    assert isinstance(where, ir.FileLineColLoc) and where.filename == "m.hlo"
    found[(where.start_line, where.start_col)] = ("parameter", None)
    for op in func.regions[0].blocks[0].operations:
        if op.operation.name == "func.return":
            continue
        location = downcast(op.location)
        parts = list(location.locations) if isinstance(location, ir.FusedLoc) else [location]
        files = [p for p in parts if isinstance(p, ir.FileLineColLoc) and p.filename == "m.hlo"]
        names = [p.name_str for p in parts if isinstance(p, ir.NameLoc)]
        assert len(files) == 1 and len(names) <= 1
        found[(files[0].start_line, files[0].start_col)] = (
            op.operation.name,
            names[0] if names else None,
        )
    assert {k: v[0] for k, v in found.items()} == {k: v[0] for k, v in placed.items()}
    ops = {k: v for k, v in placed.items() if v[0] != "parameter"}
    assert {k: found[k] for k in ops} == ops


def _hlo_text(fn: object, *shapes: tuple[int, ...]) -> str:
    args = [jnp.ones(shape) for shape in shapes]
    computation = jax.jit(fn).lower(*args).compiler_ir("hlo")  # pyright: ignore[reportArgumentType]
    assert computation is not None
    return computation.as_hlo_text()


@pytest.fixture(scope="module")
def hlo_texts() -> list[str]:
    return [
        _hlo_text(_conv, (1, 3, 9, 9), (4, 3, 3, 3)),
        _hlo_text(jnp.tanh, (4,)),
        _hlo_text(lambda x, w: jax.lax.conv(x, w, (1, 1), "SAME"), (1, 2, 5, 5), (2, 2, 3, 3)),
    ]


def _opt(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OPT, *map(str, args)], capture_output=True, text=True)


@settings(max_examples=4, deadline=None)
@given(order=st.permutations([0, 1, 2]), blanks=st.lists(st.integers(0, 3), min_size=3, max_size=3))
def test_split_hlo_text_converts_each_chunk_as_its_own_file(
    hlo_texts: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    order: list[int],
    blanks: list[int],
) -> None:
    """As xla-translate splits before it translates: a file of HLO modules between `// -----`
    lines (which XLA's parser cannot read whole) gives each module's output as that module
    alone gives it, and its ops are located at their lines in the whole file."""
    directory = tmp_path_factory.mktemp("split")
    chunks = ["\n" * n + hlo_texts[i] for i, n in zip(order, blanks, strict=True)]
    whole = directory / "all.hlo"
    whole.write_text("// -----\n".join(chunks))
    pipeline = ["-p", "stablehlo-canonicalize-conv"]
    split = _opt("--input-hlo", whole, "--split-input-file", *pipeline)
    assert split.returncode == 0, split.stderr
    alone = []
    for n, chunk in enumerate(chunks):
        single = directory / f"{n}.hlo"
        single.write_text(chunk)
        result = _opt("--input-hlo", single, *pipeline)
        assert result.returncode == 0, result.stderr
        alone.append(result.stdout)
    assert split.stdout == "// -----\n".join(alone)
    located = _opt("--input-hlo", whole, "--split-input-file", "--mlir-print-debuginfo")
    last_line = whole.read_text().count("\n")
    lines = [int(n) for n in re.findall(rf'loc\("{re.escape(str(whole))}":(\d+):', located.stdout)]
    first_of_last = last_line - hlo_texts[order[-1]].count("\n") + 1
    assert lines and max(lines) <= last_line and max(lines) >= first_of_last, lines


def test_an_error_in_a_later_hlo_chunk_is_at_its_line_in_the_file(
    hlo_texts: list[str], tmp_path: Path
) -> None:
    broken = hlo_texts[1].replace("tanh(", "tanhh(", 1)
    source = tmp_path / "all.hlo"
    source.write_text(hlo_texts[0] + "// -----\n" + broken + "// -----\n")
    line = hlo_texts[0].count("\n") + 2 + broken.split("tanhh(")[0].count("\n")
    result = _opt("--input-hlo", source, "--split-input-file")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{source}:{line}:"), result.stderr


ABORTS_XLA = (  # XLA's check on parameter numbers aborts the process
    "HloModule m\n\nENTRY main {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(7)\n"
    "  ROOT c = f32[2] add(a, b)\n}\n"
)


@settings(max_examples=3, deadline=None)
@given(kinds=st.lists(st.sampled_from(["good", "aborts", "bad"]), min_size=2, max_size=6))
@example(kinds=["good", "aborts", "bad", "aborts", "good"])
def test_split_hlo_chunks_that_abort_xla_are_errors_and_the_rest_convert(
    hlo_texts: list[str], tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    """One child converts every chunk; where XLA aborts on one, that chunk's error is the abort
    (at its line) and a new child converts the rest: every bad chunk is reported, as mlir-opt
    reports every bad chunk, and a file of good ones converts."""
    texts = {"good": hlo_texts[1], "aborts": ABORTS_XLA, "bad": hlo_texts[1].replace("(", "[", 1)}
    chunks = [texts[kind] for kind in kinds]
    source = tmp_path_factory.mktemp("abort") / "all.hlo"
    source.write_text("// -----\n".join(chunks))
    result = _opt("--input-hlo", source, "--split-input-file")
    starts = [1 + sum(c.count("\n") for c in chunks[:i]) + i for i in range(len(chunks))]
    errors = [int(n) for n in re.findall(rf"^{re.escape(str(source))}:(\d+):", result.stderr, re.M)]
    expected = [start for start, kind in zip(starts, kinds, strict=True) if kind != "good"]
    if not expected:
        assert result.returncode == 0 and result.stdout.count("stablehlo.tanh") == len(kinds)
        return
    assert result.returncode == 1 and result.stdout == ""
    assert len(errors) == len(expected), result.stderr
    for line, start, kind in zip(errors, expected, [k for k in kinds if k != "good"], strict=True):
        assert line == start if kind == "aborts" else start <= line < start + 20, result.stderr
    assert result.stderr.count("was killed by SIGABRT") == kinds.count("aborts"), result.stderr


def test_two_markers_on_a_line_start_two_hlo_chunks_there(hlo_texts: list[str], tmp_path: Path):
    """Both chunks after `// ----- // -----` start on that line: the one between the markers
    is an empty module, the next its own HLO module (not the other's conversion twice)."""
    source = tmp_path / "two.hlo"
    source.write_text(hlo_texts[1] + "// ----- // -----\n" + hlo_texts[0])
    result = _opt("--input-hlo", source, "--split-input-file")
    assert result.returncode == 0, result.stderr
    outputs = result.stdout.split("// -----\n")
    assert len(outputs) == 3 and outputs[1].startswith("module {\n}")
    assert "stablehlo.tanh" in outputs[0] and "stablehlo.convolution" in outputs[2]
