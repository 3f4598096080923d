"""Kernels shaped like MIGraphX's (tests/fuzz/fixtures/kernels_rocmlir_shaped.mlir), damaged
where a migraphx program is specific: a stride list (hostile, overlapping, missing), a dim, an
attribute's value or kind, an op's name, an operand, an element type, an op dropped, repeated or
broken over lines.

`convcanon-opt -p migraphx-to-tosa` and `convcanon run` must end in exit 0, or exit 1 with every
error at its place in the file (`file:line:col: error:`), never a traceback, a bare `file:
error:` or an unbounded allocation (run is held to a small --memory-limit).
CONVCANON_FUZZ_EXAMPLES scales the runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main

from . import sources
from .conftest import assert_no_harm, digest, run_cli

KERNELS = sources.FIXTURES / "kernels_rocmlir_shaped.mlir"

FUZZ = settings(
    max_examples=sources.examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_STRIDES = re.compile(r"(?<=, )\d+(?:x\d+)*(?=>)")
_DIM = re.compile(r"(?<=[<x])\d+(?=x)")
_ATTRIBUTE = re.compile(
    r"(?<=[{ ])(dilation|group|padding|padding_mode|stride|out_lens|axes"
    r"|ends|starts|permutation|out_dyn_dims) = ([^,{}\[\]]+|\[[^\]]*\])"
)
_OP = re.compile(r"migraphx\.[a-z_]+")
_OPERAND = re.compile(r"(?<= )%\w+(?=[, ])")
_BREAK = re.compile(r"(?<== )migraphx\.[a-z_]+|(?<=,) (?=%)")
_ELEMENT = re.compile(r"(?<=x)(f32|f16|si8|si32)(?=[,>])")

NUMBERS = [
    "0",
    "1",
    "-1",
    "2",
    "65536",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "4611686018427387904",
    "99999999999999999999",
    "?",
]
VALUES = [
    "0",
    "-1",
    "9223372036854775807",
    "9223372036854775808",
    "1.5",
    '"x"',
    "[]",
    "[1]",
    "[[1]]",
    "true",
    "unit",
    "{}",
    "1 : i1",
    "1 : f32",
    "dense<1> : tensor<2xi64>",
    "array<i64: 1, 1>",
    "@sym",
    "[-1, -1]",
    "[0, 0]",
    "[2, 2, 2, 2, 2, 2]",
    "[99]",
    "[1 : i32, 1 : i32]",
    "[9223372036854775807, 1]",
]
OPS = [
    "migraphx.frobnicate",
    "migraphx.pooling",
    "migraphx.leaky_relu",
    "migraphx.literal",
    "migraphx.reshape",
    "migraphx.dot",
    "migraphx.quant_dot",
    "migraphx.unpack",
    "migraphx.backwards_data_convolution",
    "migraphx.where",
    "migraphx.gather",
    "migraphx.softmax",
    "migraphx.clip",
    "migraphx.mlir.as.logical.shape",
    "tosa.add",
]
ELEMENTS = [
    "i1",
    "f64",
    "ui8",
    "si4",
    "ui64",
    "f8E4M3FNUZ",
    "f8E4M3FN",
    "f4E2M1FN",
    "f8E8M0FNU",
    "bf16",
    "index",
    "complex<f32>",
]


@st.composite
def damaged_kernel(draw: st.DrawFn) -> str:
    """The fixture with one to three layout-, attribute- or op-level mutations."""
    text = KERNELS.read_text()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                [
                    "stride",
                    "strides",
                    "dim",
                    "attribute",
                    "op",
                    "operand",
                    "element",
                    "drop",
                    "repeat",
                ]
            )
        )
        if kind in ("drop", "repeat"):
            lines = text.split("\n")
            ops = [n for n, line in enumerate(lines) if "= migraphx." in line]
            n = draw(st.sampled_from(ops))
            if kind == "drop":
                del lines[n]
            else:
                lines.insert(n, lines[n])
            text = "\n".join(lines)
            continue
        pattern, make = {
            "stride": (_STRIDES, lambda m: _replace_one(draw, m.group(), "x", NUMBERS)),
            "strides": (_STRIDES, lambda m: _reshuffled(draw, m.group())),
            "dim": (_DIM, lambda m: draw(st.sampled_from(NUMBERS))),
            "attribute": (_ATTRIBUTE, lambda m: f"{m.group(1)} = {draw(st.sampled_from(VALUES))}"),
            "op": (_OP, lambda m: draw(st.sampled_from(OPS))),
            "operand": (
                _OPERAND,
                lambda m: draw(
                    st.sampled_from(
                        ["", "%nope", "%arg0, %arg0", "%0", f"{m.group()}, {m.group()}"]
                    )
                ),
            ),
            "element": (_ELEMENT, lambda m: draw(st.sampled_from(ELEMENTS))),
        }[kind]
        matches = list(pattern.finditer(text))
        match = matches[draw(st.integers(0, len(matches) - 1))]
        text = text[: match.start()] + make(match) + text[match.end() :]
    if draw(st.booleans()):  # MLIR lets an op go on over lines; rocMLIR's tests break them so
        text = _BREAK.sub(lambda m: m.group() + "\n      ", text)
    return text


def _replace_one(draw: st.DrawFn, joined: str, sep: str, choices: list[str]) -> str:
    parts = joined.split(sep)
    parts[draw(st.integers(0, len(parts) - 1))] = draw(st.sampled_from(choices))
    return sep.join(parts)


def _reshuffled(draw: st.DrawFn, joined: str) -> str:
    """The strides permuted (a layout the values were not written in), one dropped or added."""
    parts = draw(st.permutations(joined.split("x")))
    change = draw(st.sampled_from(["keep", "drop", "add"]))
    if change == "drop" and len(parts) > 1:
        parts = parts[:-1]
    elif change == "add":
        parts = [*parts, "1"]
    return "x".join(parts)


def _assert_located(stderr: str, name: str) -> None:
    """Every error names its line and column in the input file; notes follow their error."""
    lines = [x for x in diagnostic_lines(stderr) if x.strip() and not x.startswith(" ")]
    errors = [line for line in lines if ": error: " in line]
    assert errors, stderr
    for line in errors:
        assert re.match(rf"^{re.escape(name)}:\d+:\d+: error: ", line), stderr


def _attack(argv: list[str], text: str, work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = work / "kernel.mlir"
    source.write_text(text)
    before = digest(source)
    out = work / "out.mlir" if "-o" in argv else None
    outcome = run_cli(main if argv[0] == "run" else opt_main, argv, capsys)
    assert_no_harm(outcome, source, before, out)
    assert outcome.code in (0, 1), outcome
    event(f"exit {outcome.code}")  # --hypothesis-show-statistics: how many got past parsing
    if outcome.code == 1:
        _assert_located(outcome.stderr, "kernel.mlir")


@pytest.mark.parametrize("command", ["migraphx-to-tosa", "run"])
@FUZZ
@given(text=damaged_kernel())
def test_damaged_kernel_is_lowered_and_run_or_a_located_error(
    command: str,
    text: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = tmp_path_factory.mktemp("kernel")
    monkeypatch.chdir(work)
    entry = text.split("func.func @", 1)[1].split("(", 1)[0]
    argv = (
        ["kernel.mlir", "-p", "migraphx-to-tosa", "-o", "out.mlir"]
        if command == "migraphx-to-tosa"
        else ["run", "kernel.mlir", "--entry", entry, "--memory-limit", "50000000"]
    )
    _attack(argv, text, work, capsys)


def test_the_undamaged_kernels_lower_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture itself is valid: every mutation starts from a program that works."""
    monkeypatch.chdir(tmp_path)
    text = KERNELS.read_text()
    (tmp_path / "kernel.mlir").write_text(text)
    assert (
        run_cli(opt_main, ["kernel.mlir", "-p", "migraphx-to-tosa", "-o", "o.mlir"], capsys).code
        == 0
    )
    for entry in re.findall(r"func\.func @(\w+)", text):
        assert run_cli(main, ["run", "kernel.mlir", "--entry", entry], capsys).code == 0, entry
