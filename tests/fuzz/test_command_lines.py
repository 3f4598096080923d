"""Random command lines of `convcanon-opt` and `convcanon explain`, `import-migraphx` and
`graph`: every flag their parsers declare, with good and bad values.

Each flag is drawn from the command's parser itself, so a flag added later is fuzzed too.
Whatever the mix, a run ends in exit 0, 1 or 2, with no traceback; exit 1 ends in an error (and
its notes); exit 2 in a usage line; the input is never modified, nothing but the named output is
written, and a failed run leaves no output file.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.command_arguments import main_parser
from convcanon.opt_arguments import opt_parser

from . import sources
from .conftest import Outcome, assert_no_harm, digest

# Flags that start an XLA child or read stdin, whose hostile inputs have tests of their own.
SKIPPED = {"--input-hlo", "--emit-hlo", "-h", "--help"}

INTEGERS = ["0", "1", "2", "3", "7", "-1", "1000000", "9223372036854775808", "x", ""]
WORDS = ["", "// -----", "#", "-----", "x y", "'", "{", "\\", "\u00e9"]
PIPELINES = [
    "",
    "stablehlo-canonicalize-conv",
    "canonicalize-conv",
    "migraphx-to-tosa",
    "stablehlo-canonicalize-conv{gate=general engine=iree-cpu}",
    "stablehlo-canonicalize-conv{merge-phases=pad-kernel",
    "builtin.module(func.func(cse),canonicalize)",
    "any(stablehlo-canonicalize-conv)",
    "cse,bogus-pass",
    "stablehlo-canonicalize-conv{max-phases=0}",
]
PASS_FLAGS = [
    "--stablehlo-canonicalize-conv",
    "--stablehlo-canonicalize-conv=gate=general",
    "--canonicalize-conv",
    "--migraphx-to-tosa",
    "--cse",
    "--canonicalize",
]
INPUTS = ["cnn", "migraphx", "program", "split", "empty", "garbage", "directory", "missing"]


def subcommand(name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in main_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[name]


# command -> (entry point, the words before the input, its parser, whether it takes -p, -o)
COMMANDS = {
    "convcanon-opt": (opt_main, [], opt_parser(), True, True),
    "explain": (main, ["explain"], subcommand("explain"), True, False),
    "import-migraphx": (main, ["import-migraphx"], subcommand("import-migraphx"), False, True),
    "graph": (main, ["graph"], subcommand("graph"), True, True),
}


def _takes(action: argparse.Action, value: str) -> bool:
    """Whether the flag's parser takes `value` (its type and its choices)."""
    try:
        typed = action.type(value) if callable(action.type) else value
    except Exception:
        return False
    return not action.choices or typed in action.choices


def _flag_values(action: argparse.Action) -> st.SearchStrategy[list[str]]:
    """Command-line words for one flag: bare, or with a value (one it takes four times in
    five, else one it refuses), joined by `=` or given as the next word."""
    flag = st.sampled_from(action.option_strings)
    if action.nargs == 0:
        return flag.map(lambda f: [f])
    pool = [str(c) for c in action.choices or ()] + INTEGERS + WORDS + ["bogus", "512MiB"]
    good = [v for v in pool if _takes(action, v)]
    bad = [v for v in pool if v not in good]
    drawn = [*[st.sampled_from(good)] * 4 * bool(good), *[st.sampled_from(bad)] * bool(bad)]
    value = st.one_of(*drawn)
    joined = st.tuples(flag, value).map(lambda fv: [f"{fv[0]}={fv[1]}"])
    separate = st.tuples(flag, value).map(lambda fv: [fv[0], fv[1]])
    if action.nargs == "?":
        return st.one_of(flag.map(lambda f: [f]), joined)
    return st.one_of(joined, separate)


def flags(
    parser: argparse.ArgumentParser, drawn_apart: tuple[str, ...] = ("output", "pass_pipeline")
) -> st.SearchStrategy[list[str]]:
    """Up to five of the parser's flags, but not those whose values a test draws itself
    (`drawn_apart`, by dest)."""
    actions = [
        a
        for a in parser._actions
        if a.option_strings and not SKIPPED & set(a.option_strings) and a.dest not in drawn_apart
    ]
    one = st.sampled_from(actions).flatmap(_flag_values)
    return st.lists(one, max_size=5).map(lambda words: [w for ws in words for w in ws])


def _inputs(root: Path) -> dict[str, Path]:
    """The inputs a command line may name, written once under `root`."""
    inputs = root / "inputs"
    inputs.mkdir()
    cnn = inputs / "cnn.mlir"
    shutil.copy(sources.STABLEHLO, cnn)
    (inputs / "migraphx.mlir").write_text(sources.migraphx_text())
    shutil.copy(sources.PROGRAM, inputs / "program.mlir")
    split = sources.STABLEHLO.read_text() + "\n// -----\nfunc.func @f(\n// -----\n"
    (inputs / "split.mlir").write_text(split)
    (inputs / "empty.mlir").write_bytes(b"")
    (inputs / "garbage.mlir").write_bytes(b"\xff\xfe%0 = \x00 stablehlo.pad {{{")
    (inputs / "directory").mkdir()
    return {name: inputs / name for name in ("directory", "missing")} | {
        name: inputs / f"{name}.mlir" for name in INPUTS if name not in ("directory", "missing")
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _inputs(tmp_path_factory.mktemp("command-lines"))


def _pipeline(command: str) -> st.SearchStrategy[list[str]]:
    """None half the time (the command's own default), else `-p` or pass flags."""
    by_option = st.one_of(st.just([]), st.sampled_from(PIPELINES).map(lambda p: ["-p", p]))
    if command != "convcanon-opt":
        return by_option if COMMANDS[command][3] else st.just([])
    return st.one_of(by_option, st.lists(st.sampled_from(PASS_FLAGS), max_size=2))


@st.composite
def _command_lines(draw: st.DrawFn) -> tuple[str, list[str], str, bool]:
    """A command, its flags and pipeline words, the input's name, and whether it writes -o."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    _, _, parser, _, writes = COMMANDS[command]
    words = draw(flags(parser)) + draw(_pipeline(command))
    required = command == "graph"  # its -o is required
    to_file = writes and (required or draw(st.booleans()))
    return command, words, draw(st.sampled_from(INPUTS)), to_file


@settings(
    max_examples=sources.examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(line=_command_lines())
def test_any_command_line_ends_in_an_exit_code_and_harms_nothing(
    inputs: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
    capsysbinary: pytest.CaptureFixture[bytes],
    line: tuple[str, list[str], str, bool],
) -> None:
    command, words, input_name, to_file = line
    entry, head = COMMANDS[command][:2]
    out_dir = tmp_path_factory.mktemp("out")
    output = out_dir / ("out.dot" if command == "graph" else "out.mlir")
    source = inputs[input_name]
    before = {p: digest(p) for p in source.parent.iterdir() if p.is_file()}
    argv = [*head, str(source), *words, *(["-o", str(output)] if to_file else [])]
    capsysbinary.readouterr()  # bytecode may reach stdout
    try:
        code = entry(argv)
    except SystemExit as stop:  # argparse's --version
        code = stop.code if isinstance(stop.code, int) else 2
    outcome = Outcome(code, capsysbinary.readouterr().err.decode(errors="replace"))
    if source.is_file():
        assert_no_harm(outcome, source, before[source], output if to_file else None)
    event(f"{command}: exit {outcome.code}")
    assert outcome.code in (0, 1, 2), (argv, outcome)
    assert "Traceback" not in outcome.stderr, argv
    assert {p: digest(p) for p in before} == before, argv
    written = {p.name for p in out_dir.iterdir()}
    assert written <= ({output.name} if to_file and code == 0 else set()), (argv, written)
    if code == 2:
        assert "error:" in outcome.stderr or "usage:" in outcome.stderr, (argv, outcome)
    if code == 1:
        assert "error:" in outcome.stderr, (argv, outcome)
