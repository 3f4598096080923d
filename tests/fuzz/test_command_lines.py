"""Random command lines of `convcanon-opt` and `convcanon explain`, `import-migraphx` and
`graph`: every flag their parsers declare, with good and bad values.

Each flag is drawn from the command's parser itself, so a flag added later is fuzzed too. The
input is a real file, MLIR bytecode, a damaged file or an odd path (hostile_files: a FIFO, a
file no read succeeds on, a path through a file...), and -o may name the input itself.
Whatever the mix, a run ends in exit 0, 1 or 2, with no traceback; exit 1 ends in an error (and
its notes) that names a file of the command line, at line:col when it is in a module's text;
exit 2 in a usage line; the input is never modified, nothing but the named output is written,
and a failed run leaves no output file.
"""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.cli import main, opt_main
from convcanon.command_arguments import main_parser
from convcanon.opt_arguments import opt_parser

from . import hostile_files as hostile
from . import sources

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
INPUTS = ["cnn", "bytecode", "migraphx", "program", "split", "empty", "garbage", *hostile.ODD_PATHS]


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


@cache
def _cnn_bytecode() -> bytes:
    from convcanon.hlo.context import parse_module
    from convcanon.hlo.formats import module_bytecode

    return module_bytecode(parse_module(sources.STABLEHLO.read_text(), "cnn.mlir"))


def _input(files: hostile.Files, name: str) -> Path:
    """`inputs/NAME.mlir` holding the input `name` (or made that odd path)."""
    path = files.inputs / f"{name}.mlir"
    cnn = sources.STABLEHLO.read_bytes()
    if name in hostile.ODD_PATHS:
        return hostile.odd_path(files, name, path.name, cnn)
    contents = {
        "cnn": lambda: cnn,
        "bytecode": _cnn_bytecode,
        "migraphx": lambda: sources.migraphx_text().encode(),
        "program": sources.PROGRAM.read_bytes,
        "split": lambda: cnn + b"\n// -----\nfunc.func @f(\n// -----\n",
        "empty": lambda: b"",
        "garbage": lambda: b"\xff\xfe%0 = \x00 stablehlo.pad {{{",
    }
    path.write_bytes(contents[name]())
    return path


def _pipeline(command: str) -> st.SearchStrategy[list[str]]:
    """None half the time (the command's own default), else `-p` or pass flags."""
    by_option = st.one_of(st.just([]), st.sampled_from(PIPELINES).map(lambda p: ["-p", p]))
    if command != "convcanon-opt":
        return by_option if COMMANDS[command][3] else st.just([])
    return st.one_of(by_option, st.lists(st.sampled_from(PASS_FLAGS), max_size=2))


@st.composite
def _command_lines(draw: st.DrawFn) -> tuple[str, list[str], str, str]:
    """A command, its flags and pipeline words, the input's name, and where it writes -o
    (none, a new file, or the input itself)."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    _, _, parser, _, writes = COMMANDS[command]
    words = draw(flags(parser)) + draw(_pipeline(command))
    required = command == "graph"  # its -o is required
    outputs = ["fresh", "the-input"] + ([] if required else ["none"])
    output = draw(st.sampled_from(outputs)) if writes else "none"
    return command, words, draw(st.sampled_from(INPUTS)), output


@settings(
    max_examples=sources.examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(line=_command_lines())
def test_any_command_line_ends_in_an_exit_code_and_harms_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    capsysbinary: pytest.CaptureFixture[bytes],
    line: tuple[str, list[str], str, str],
) -> None:
    command, words, input_name, output_kind = line
    entry, head = COMMANDS[command][:2]
    files = hostile.new_files(tmp_path_factory)
    source = _input(files, input_name)
    fresh = files.out / ("out.dot" if command == "graph" else "out.mlir")
    # a FIFO as the output waits for a reader, as `cat x > fifo` does
    the_input = source if not source.is_fifo() else fresh
    output = {"none": None, "fresh": fresh, "the-input": the_input}[output_kind]
    argv = [*head, str(source), *words, *(["-o", str(output)] if output else [])]
    before = hostile.snapshot(files.inputs)
    run = hostile.Run(command, argv, *hostile.run_in_process(entry, argv, files, capsysbinary))
    hostile.check_outcome(run, files, before, fresh if output == fresh else None)
