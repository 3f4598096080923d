"""`convcanon`'s arguments: the parser of its subcommands (explain, run, verify, graph,
import-migraphx), each subcommand's options declared in one function."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from convcanon.cli_arguments import (
    CommandParser,
    VersionAction,
    add_allow_unregistered,
    add_input_hlo,
    add_max_input_size,
    add_output,
    add_split_input_file,
    batch_sizes,
    integer_at_least,
    number,
)
from convcanon.diagnostics import DEFAULT_WORK_LIMIT
from convcanon.options import decimal_float, decimal_int

_seed = integer_at_least(0)  # numpy's seeds
_positive_int = integer_at_least(1)
MAX_STEPS = (1 << 63) - 1


def step_count(text: str) -> int:
    """`--max-work`: a whole number of steps from 1 to 2^63-1, in digits or in exponent notation
    (`2e11`, as its default is written), compared exactly (a `1e400000000` is never expanded)."""
    value = decimal_int(text)
    if value is None and decimal_float(text) is not None:
        exact = _exactly(text)
        if exact is not None and 1 <= exact <= MAX_STEPS and exact == exact.to_integral_value():
            value = int(exact)
    if value is None or not 1 <= value <= MAX_STEPS:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of steps from 1 to {MAX_STEPS} (e.g. 5000000 or 2e11),"
            f" not {text!r}"
        )
    return value


def _exactly(text: str) -> Decimal | None:
    """The number `text` writes, or None past the exponents `Decimal` holds (|e| over 10^18:
    `1e999999999999999999999`, refused, where its `InvalidOperation` was a traceback)."""
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


_integer = integer_at_least(None)


def _explain_parser(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("input", help="StableHLO or MHLO module (.mlir; - is stdin)")
    explain.add_argument(
        "-p",
        "--pass-pipeline",
        default=None,
        help="the conv pass and its options, e.g. 'stablehlo-canonicalize-conv{gate=general}'"
        " (default: the conv pass of the dialect the module's convs are in)",
    )
    explain.add_argument(
        "--format", choices=("table", "json", "markdown"), default="table", help="output format"
    )
    add_split_input_file(
        explain, "explain each `// -----` chunk on its own, in one table and one summary"
    )
    add_input_hlo(explain)


def _run_parser(run: argparse.ArgumentParser) -> None:
    run.add_argument("input", help="module to run (StableHLO, MHLO, migraphx or TOSA .mlir)")
    run.add_argument(
        "--inputs",
        help="npz with the entry function's arguments (arg0, arg1, ...); needed when it takes"
        " any (`convcanon verify` draws random ones); a shape-polymorphic module (tensor<?x...>"
        " arguments) is refined to their shapes; without it, they are drawn at random",
    )
    _add_seed(run, "seed of the random inputs drawn when --inputs is not given")
    add_output(run, "write the results to this npz (default: none, print a summary)")
    run.add_argument("--entry", default=None, help="function to run (default: main, or each)")
    add_split_input_file(
        run,
        "run each `// -----` chunk on its own (HLO or migraphx/TOSA); its results are named"
        " chunkK.FUNCTION.resultI",
    )
    run.add_argument(
        "--memory-limit",
        default="4GiB",
        help="refuse tensors whose buffers would exceed this (default 4GiB)",
    )
    run.add_argument(
        "--max-loop-iterations",
        type=_positive_int,
        default=100_000,
        help="stop a stablehlo.while that runs longer with an error (default 100000)",
    )
    add_max_work(run)


def add_max_work(parser: argparse.ArgumentParser) -> None:
    """`--max-work`: the steps each interpreter run may take (`run`, `verify`'s reference)."""
    parser.add_argument(
        "--max-work",
        type=step_count,
        default=DEFAULT_WORK_LIMIT,
        metavar="STEPS",
        help="stop an interpreter run with an error before an op that would take it past this"
        " many steps, about a nanosecond each (an element read or written, a multiply-add, a"
        f" fixed cost per op and per whole-array call; default {DEFAULT_WORK_LIMIT:.0e})",
    )


def _add_seed(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help=f"{what}, an integer >= 0 (default 0; same seed, same inputs)",
    )


def _verify_parser(verify: argparse.ArgumentParser) -> None:
    verify.add_argument("before", help="the original module (the truth, evaluated in f64)")
    verify.add_argument(
        "after",
        nargs="?",
        default=None,
        help="the transformed module to check against it (each conv is also judged on its own"
        " where AFTER carries BEFORE's locations: --mlir-print-debuginfo); none with -p",
    )
    verify.add_argument(
        "-p",
        "--pass-pipeline",
        default=None,
        help="AFTER is BEFORE after this pipeline: each rewritten conv is judged on its own,"
        " then the whole program",
    )
    verify.add_argument(
        "--rtol",
        type=number,
        default=None,
        help="AFTER may be off by 8 x BEFORE's own error + atol + rtol x the output's scale"
        " (default: the type's floor, eps(type) + eps(accumulator) x (4 + sqrt(K + 1)) for a"
        " K-term sum)",
    )
    verify.add_argument(
        "--atol", type=number, default=0.0, help="absolute part of that allowance (default 0)"
    )
    verify.add_argument(
        "--engine",
        choices=("reference", "xla", "iree"),
        default="reference",
        help="what runs BEFORE and AFTER: the numpy reference, XLA (convcanon[xla]) or IREE"
        " (convcanon[iree]); their f64 copies, the truth, run on XLA under xla, else the reference",
    )
    verify.add_argument("--trials", type=_integer, default=3, help="random input sets to compare")
    _add_seed(verify, "seed of the random inputs")
    verify.add_argument(
        "--entry", default=None, help="function to compare (default: main, or the only one)"
    )
    verify.add_argument(
        "--batch-sizes",
        type=batch_sizes,
        default=(1, 2, 5),
        metavar="N,N,...",
        help="shape-polymorphic modules (tensor<?x...> arguments) are refined with every dynamic"
        " dim set to each of these and compared at each (default 1,2,5; static modules: unused)",
    )
    verify.add_argument(
        "--timeout",
        type=number,
        default=300.0,
        help="seconds one XLA or IREE run (a module's compile and one trial) may take before it"
        " is stopped, as a run of a loop that never ends would not (default 300)",
    )
    add_max_work(verify)


def _graph_parser(graph: argparse.ArgumentParser) -> None:
    graph.add_argument("input", help="module to draw (.mlir; - is stdin)")
    graph.add_argument(
        "-p", "--pass-pipeline", default="", help="draw the module after this pipeline beside it"
    )
    graph.add_argument(
        "--format",
        choices=("svg", "png", "dot"),
        default=None,
        help="output format (default: from the -o extension .svg/.png/.dot; svg for - or none)",
    )
    add_output(graph, "output file; - is stdout", required=True)
    graph.add_argument(
        "--max-nodes",
        type=_integer,
        default=1500,
        help="refuse to render a graph with more nodes than this (default 1500; --format dot: any)",
    )
    graph.add_argument(
        "--timeout",
        type=number,
        default=120.0,
        help="seconds Graphviz may take to render (default 120)",
    )
    graph.add_argument(
        "--memory-limit",
        default="4GiB",
        help="address space Graphviz may use (default 4GiB; e.g. 512MiB or a byte count)",
    )


def _import_parser(imp: argparse.ArgumentParser) -> None:
    imp.add_argument("input", help="a MIGraphX printed program (program::print), - is stdin")
    add_output(imp, "output .mlir (default: -, stdout)", default="-")
    imp.add_argument("--name", default="main", help="name of the emitted func.func")


_SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "explain": ("one row per convolution: the gate's decision and why", _explain_parser),
    "run": ("interpret a module with numpy", _run_parser),
    "verify": ("differential check of two modules on random inputs", _verify_parser),
    "graph": ("dataflow graph before/after a pipeline, side by side", _graph_parser),
    "import-migraphx": ("MIGraphX printed program -> migraphx MLIR", _import_parser),
}


def main_parser() -> argparse.ArgumentParser:
    """convcanon's parser: one subparser per command, each with what every command reads."""
    parser = CommandParser(prog="convcanon", description="convcanon tools")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for name, (summary, add_arguments) in _SUBCOMMANDS.items():
        # `convcanon CMD --help` opens with what CMD is for
        command = sub.add_parser(name, help=summary, description=summary)
        add_arguments(command)
        add_max_input_size(command)
        if name != "import-migraphx":  # the commands that read a module
            add_allow_unregistered(command)
        if name in ("run", "verify", "import-migraphx"):
            command.add_argument(
                "--strict-strides",
                action="store_true",
                help="migraphx layouts held to the strict rule: every declared layout must tile"
                " memory and an intermediate's declared strides must be its op's (errors;"
                " default: any layout that is only read is accepted, a contradicted intermediate"
                " takes its op's strides with a warning)",
            )
    return parser
