"""`convcanon-opt` (mlir-opt style) and `convcanon` (explain, run, verify, import-migraphx).

The CLI only parses arguments, dispatches and turns `ConvcanonError`/`UsageError` into a one-line
diagnostic and an exit code. Heavy imports happen inside the command that needs them.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.fileio.limits import MAX_INPUT_SIZE_HELP, set_max_input_size
from convcanon.fileio.stdout import (
    flush_stdout,
    is_stdout_failure,
    stdout_error,
    stdout_written_whole,
    write_stdout,
)
from convcanon.ir_kind import UNREGISTERED_DIALECTS
from convcanon.options import decimal_float, decimal_int
from convcanon.pipeline import PASSES, PassInfo

if TYPE_CHECKING:
    from convcanon.pass_instruments import PassInstruments

# XLA's C++ logging reads this when jaxlib loads: keep stderr for our diagnostics.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def _terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` answers ($COLUMNS, else stdout's terminal, else
    80), without importing `shutil`: it loads the bz2 and lzma modules, ~2-3 ms of every run."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # pyright: ignore[reportOptionalMemberAccess]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless the help already names it."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        # argparse's own default width, computed as `shutil` does it (argparse builds a formatter
        # per `add_argument`, so its import is paid on every run, not only for --help)
        width = _terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or "default" in text
            or action.default is argparse.SUPPRESS
            or isinstance(action, argparse._HelpAction)
        ):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            default = "off"
        elif action.default is None or action.default == "":
            default = "none"
        else:
            default = str(action.default).replace("%", "%%")
        return f"{text} (default: {default})" if text else f"(default: {default})"


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises `UsageError` (exit 2, one line) instead of printing usage, exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def package_version() -> str:
    """The installed distribution's version (pyproject's), read only when asked."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("convcanon")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """`--version`: `PROG VERSION` on stdout, exit 0."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def _add_max_input_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-input-size", default="1GiB", help=MAX_INPUT_SIZE_HELP)


def _guarded(body: Callable[[], int]) -> int:
    try:
        with stdout_written_whole():
            # A context of its own: settings such as --max-input-size end with the command.
            code = contextvars.copy_context().run(body)
            flush_stdout()
        return code
    except ConvcanonError as err:
        from convcanon.driver import render_with_notes

        print(render_with_notes(err), file=sys.stderr)
        return err.exit_code
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError as err:  # stdout's reader went away mid-print
        print(stdout_error(err).render(), file=sys.stderr)
        return 1
    except OSError as err:  # a print to a full stdout (`> /dev/full`); any other is a bug
        if not is_stdout_failure(err):
            raise
        print(stdout_error(err).render(), file=sys.stderr)
        return 1
    except RecursionError:
        print("error: input nests too deeply", file=sys.stderr)
        return 1
    except MemoryError:
        print("error: out of memory on this input", file=sys.stderr)
        return 1


# -- convcanon-opt -------------------------------------------------------------------------------


class _OptParser(_ArgumentParser):
    """convcanon-opt's parser. Its help describes every pass's options, which are declared in
    the passes' own modules: they are imported when help is printed, not on every run."""

    def format_help(self) -> str:
        from convcanon.pipeline import describe_passes

        for action in self._actions:
            info = PASSES.get(action.dest.replace("_", "-"))
            if info is not None:
                example = f"; e.g. --{info.name}='{_example_options(info)}'"
                action.help = info.summary + (example if info.options else "")
        self.epilog = (
            describe_passes()
            + "\n  and the MLIR passes jaxlib registers (canonicalize, cse, symbol-dce, inline,"
            + " ...): convcanon-opt --list-passes"
            + "\n\nexamples:\n  convcanon-opt model.mlir -p "
            + "'stablehlo-canonicalize-conv{gate=general negative-padding=slice}'\n"
            + "  convcanon-opt model.mlir --stablehlo-canonicalize-conv='gate=general' -o out.mlir"
            + "\n  convcanon-opt model.mlir -p 'stablehlo-canonicalize-conv,canonicalize,cse'"
            + " --mlir-timing"
        )
        return super().format_help()


def _opt_parser() -> argparse.ArgumentParser:
    parser = _OptParser(
        prog="convcanon-opt",
        description="Run convcanon passes over an MLIR file, like mlir-opt.",
        allow_abbrev=False,
    )
    parser.add_argument("input", nargs="?", default="-", help="input file, or - for stdin")
    parser.add_argument(
        "-p",
        "--pass-pipeline",
        default="",
        help="comma-separated passes with options in braces, optionally wrapped in"
        " builtin.module(...) (default: none, the module is printed back)",
    )
    _add_output(parser, "output file (default: -, stdout)", default="-")
    parser.add_argument(
        "--stats",
        "--mlir-pass-statistics",
        action="store_true",
        help="print each pass instance's statistics to stderr, summed over split chunks",
    )
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help="process each `// -----` chunk on its own; every bad chunk's error is reported",
    )
    parser.add_argument(
        "--mlir-print-debuginfo",
        action="store_true",
        help="print locations (default: off, unless the input carries them)",
    )
    parser.add_argument(
        "--mlir-print-op-generic",
        action="store_true",
        help="print in generic op form (default: off, unless the input is generic)",
    )
    parser.add_argument("--version", action=_VersionAction)
    _add_mlir_opt_habits(parser)
    flags = parser.add_argument_group(
        "passes as flags (mlir-opt style; several flags form a pipeline in the order given)"
    )
    for info in PASSES.values():  # shown here; mlir_opt_argv takes them out before parsing
        if info.declaration:  # its options (and the help's example) are read only for --help
            flags.add_argument(
                f"--{info.name}", metavar="'OPTIONS'", nargs="?", default=argparse.SUPPRESS
            )
        else:
            flags.add_argument(f"--{info.name}", action="store_true", default=argparse.SUPPRESS)
    _add_input_hlo(parser)
    emit = parser.add_mutually_exclusive_group()
    emit.add_argument(
        "--emit-bytecode", action="store_true", help="write MLIR bytecode, as mlir-opt does"
    )
    emit.add_argument(
        "--target-version",
        metavar="X.Y.Z",
        help="write a StableHLO portable artifact for this StableHLO version, as jax.export and"
        " stablehlo-translate --serialize do; a version too old to express the module is an error",
    )
    emit.add_argument(
        "--emit-hlo",
        choices=("text", "proto"),
        help="write XLA HLO: text, or a serialized HloModuleProto",
    )
    _add_max_input_size(parser)
    return parser


class _StoreOnce(argparse.Action):
    """An option given at most once: `-o a -o b` would write only `b`, silently."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: Any
    ) -> None:
        value = args[0]
        if getattr(namespace, f"_{self.dest}_given", False):
            given, spelled = getattr(namespace, self.dest), "/".join(self.option_strings)
            raise UsageError(f"{parser.prog}: {spelled} given twice ({given}, {value}): give one")
        setattr(namespace, self.dest, value)
        setattr(namespace, f"_{self.dest}_given", True)


def _add_output(
    parser: argparse.ArgumentParser, help: str, default: str | None = None, required: bool = False
) -> None:
    """`-o/--output`, the same spelling and the same refusal of a second one everywhere."""
    parser.add_argument(
        "-o", "--output", action=_StoreOnce, default=default, required=required, help=help
    )


def _pass_names(text: str) -> frozenset[str]:
    """`--mlir-print-ir-before=cse,stablehlo-canonicalize-conv`: each a pass name we can run."""
    from convcanon.pipeline import parse_pipeline

    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        parse_pipeline(name)  # an unknown name is the usage error an unknown pass is
    return names


def _add_mlir_opt_habits(parser: argparse.ArgumentParser) -> None:
    """mlir-opt's flags for listing, watching and timing the passes, and the parser's leniency."""
    habits = parser.add_argument_group("mlir-opt's instrumentation (all on stderr)")
    habits.add_argument(
        "--list-passes", action="store_true", help="print every pass -p can run, and exit"
    )
    habits.add_argument(
        "--dump-pass-pipeline",
        action="store_true",
        help="print the pipeline that will run, every option with its value",
    )
    for when in ("before", "after"):
        habits.add_argument(
            f"--mlir-print-ir-{when}",
            metavar="PASS[,PASS]",
            action="append",
            default=[],
            help=f"print the module {when} these passes (repeatable)",
        )
        habits.add_argument(
            f"--mlir-print-ir-{when}-all",
            action="store_true",
            help=f"print the module {when} every pass",
        )
    habits.add_argument(
        "--mlir-timing", action="store_true", help="report each pass's wall time, as mlir-opt"
    )
    parser.add_argument(
        "--mlir-elide-elementsattrs-if-larger",
        type=_integer_at_least(0),
        metavar="N",
        default=None,
        help="print elements attributes of more than N elements elided (HLO modules)",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check the diagnostics against the input's expected-error/-warning/-remark/-note"
        " comments (as mlir-opt); exit 0 when they all match",
    )
    parser.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="let ops of dialects we do not know through, untouched",
    )


def _instruments(args: argparse.Namespace) -> PassInstruments | None:
    from convcanon.pass_instruments import IrPrinting, PassInstruments

    printing = IrPrinting(
        frozenset().union(*map(_pass_names, args.mlir_print_ir_before)),
        frozenset().union(*map(_pass_names, args.mlir_print_ir_after)),
        args.mlir_print_ir_before_all,
        args.mlir_print_ir_after_all,
    )
    if not (printing.enabled or args.mlir_timing or args.dump_pass_pipeline):
        return None
    return PassInstruments(printing, args.mlir_timing, args.dump_pass_pipeline)


def _example_options(info: PassInfo) -> str:
    return " ".join(
        f"{o.name}={o.choices[-1] if o.choices else o.default}" for o in info.options[:1]
    )


def mlir_opt_argv(
    argv: Sequence[str], parser: argparse.ArgumentParser
) -> tuple[list[str], list[str]]:
    """mlir-opt spellings argparse does not know: `-long-option` as `--long-option` (so
    `-pass-pipeline=X` is not `-p ass-pipeline=X`), and passes as flags (`--pass`,
    `--pass='opt=v opt2=w'`), returned in order as pipeline items."""
    long_options = {o for o in parser._option_string_actions if o.startswith("--")}
    rest: list[str] = []
    passes: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--":
            rest += [arg, *args]
            break
        name, eq, value = arg.partition("=")
        if name.startswith("-") and not name.startswith("--") and "-" + name in long_options:
            name = "-" + name
        if name.startswith("--") and name[2:] in PASSES:
            value = value.strip()
            if value.startswith("{") and value.endswith("}"):
                value = value[1:-1]
            passes.append(f"{name[2:]}{{{value}}}" if value else name[2:])
            continue
        rest.append(name + eq + value)
    return rest, passes


def opt_main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the convcanon-opt script, which ends in `_exit_now`
        # Its objects live until the exit (the module is kept, see keep_modules_until_exit), so
        # the cyclic collector would only scan them: ~2-5 ms of a run, a ResNet-50 one's 3%.
        gc.disable()

    def body() -> int:
        parser = _opt_parser()
        rest, pass_flags = mlir_opt_argv(sys.argv[1:] if argv is None else argv, parser)
        args = parser.parse_args(rest)
        set_max_input_size(args.max_input_size)
        if args.list_passes:
            from convcanon.pipeline import list_passes

            write_stdout(list_passes())
            return 0
        if pass_flags and args.pass_pipeline:
            raise UsageError("convcanon-opt: give either --pass-pipeline or pass flags, not both")
        UNREGISTERED_DIALECTS.set(args.allow_unregistered_dialect)
        from convcanon.driver import PrintOptions, keep_modules_until_exit, output_format, run_opt

        if argv is None:  # the convcanon-opt script, which ends in `_exit_now`
            keep_modules_until_exit()
        return run_opt(
            args.input,
            args.pass_pipeline or ",".join(pass_flags),
            args.output,
            stats=args.stats,
            split_input_file=args.split_input_file,
            input_hlo=args.input_hlo,
            print_options=PrintOptions(
                debug_info=True if args.mlir_print_debuginfo else None,
                generic=True if args.mlir_print_op_generic else None,
                elide_elements=args.mlir_elide_elementsattrs_if_larger,
            ),
            instruments=_instruments(args),
            output_format=output_format(args.emit_bytecode, args.target_version, args.emit_hlo),
            verify_diagnostics=args.verify_diagnostics,
        )

    code = _guarded(body)
    if argv is None:  # the convcanon-opt script: its job is done
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown (freeing the MLIR context, its
    dialects and every module: ~18 ms, an eighth of a ResNet-50 job). The output is written
    and stdout flushed by now; nothing convcanon registers runs at exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or failing stream: reported already, if ours
            pass
    os._exit(code)


# -- convcanon -----------------------------------------------------------------------------------


def _integer_at_least(minimum: int | None) -> Callable[[str], int]:
    """An argparse type: an integer in ASCII decimal digits, at least `minimum` if given
    (argparse reports anything else as a usage error; without a minimum the command checks the
    range)."""
    what = "an integer" if minimum is None else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        value = decimal_int(text)
        if value is None or (minimum is not None and value < minimum):
            raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}")
        return value

    return parse


_seed = _integer_at_least(0)  # numpy's seeds
_positive_int = _integer_at_least(1)
_integer = _integer_at_least(None)


def _number(text: str) -> float:
    """A number in ASCII decimal notation, or inf or nan (the command checks its range)."""
    value = decimal_float(text)
    if value is None and text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        value = float(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}")
    return value


def _batch_sizes(text: str) -> tuple[int, ...]:
    """`1,2,5`: batch sizes >= 1 (argparse reports anything else as a usage error)."""
    parts = [decimal_int(part) for part in text.split(",")]
    sizes = tuple(size for size in parts if size is not None)
    if not sizes or len(sizes) < len(parts) or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"must be integers >= 1 separated by commas, not {text!r}")
    return sizes


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
    explain.add_argument(
        "--split-input-file",
        action="store_true",
        help="explain each `// -----` chunk on its own, in one table and one summary",
    )
    _add_input_hlo(explain)


def _run_parser(run: argparse.ArgumentParser) -> None:
    run.add_argument("input", help="module to run (StableHLO, MHLO, migraphx or TOSA .mlir)")
    run.add_argument(
        "--inputs",
        help="npz with the entry function's arguments (arg0, arg1, ...); needed when it takes"
        " any (`convcanon verify` draws random ones); a shape-polymorphic module (tensor<?x...>"
        " arguments) is refined to their shapes; without it, they are drawn at random",
    )
    _add_seed(run, "seed of the random inputs drawn when --inputs is not given")
    _add_output(run, "write the results to this npz (default: none, print a summary)")
    run.add_argument("--entry", default=None, help="function to run (default: main, or each)")
    run.add_argument(
        "--split-input-file",
        action="store_true",
        help="run each `// -----` chunk on its own (HLO or migraphx/TOSA); its results are"
        " named chunkK.FUNCTION.resultI",
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
        type=_number,
        default=None,
        help="AFTER may be off by 8 x BEFORE's own error + atol + rtol x the output's scale"
        " (default: the type's floor, eps(type) + eps(accumulator) x (4 + sqrt(K + 1)) for a"
        " K-term sum)",
    )
    verify.add_argument(
        "--atol", type=_number, default=0.0, help="absolute part of that allowance (default 0)"
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
        type=_batch_sizes,
        default=(1, 2, 5),
        metavar="N,N,...",
        help="shape-polymorphic modules (tensor<?x...> arguments) are refined with every dynamic"
        " dim set to each of these and compared at each (default 1,2,5; static modules: unused)",
    )
    verify.add_argument(
        "--timeout",
        type=_number,
        default=300.0,
        help="seconds one XLA or IREE run (a module's compile and one trial) may take before it"
        " is stopped, as a run of a loop that never ends would not (default 300)",
    )


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
    _add_output(graph, "output file; - is stdout", required=True)
    graph.add_argument(
        "--max-nodes",
        type=_integer,
        default=1500,
        help="refuse to render a graph with more nodes than this (default 1500; --format dot: any)",
    )
    graph.add_argument(
        "--timeout",
        type=_number,
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
    _add_output(imp, "output .mlir (default: -, stdout)", default="-")
    imp.add_argument("--name", default="main", help="name of the emitted func.func")


_SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "explain": ("one row per convolution: the gate's decision and why", _explain_parser),
    "run": ("interpret a module with numpy", _run_parser),
    "verify": ("differential check of two modules on random inputs", _verify_parser),
    "graph": ("dataflow graph before/after a pipeline, side by side", _graph_parser),
    "import-migraphx": ("MIGraphX printed program -> migraphx MLIR", _import_parser),
}


def _add_input_hlo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-hlo",
        action="store_true",
        help="the input is a serialized XLA HloModuleProto (.pb) or HLO text",
    )


def _main_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="convcanon", description="convcanon tools")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)
    for name, (summary, add_arguments) in _SUBCOMMANDS.items():
        # `convcanon CMD --help` opens with what CMD is for
        command = sub.add_parser(name, help=summary, description=summary)
        add_arguments(command)
        _add_max_input_size(command)
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


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _main_parser().parse_args(argv)
        set_max_input_size(args.max_input_size)
        if getattr(args, "strict_strides", None) is None:
            return command(args)
        from convcanon.migraphx.declared_strides import stride_policy

        with stride_policy(args.strict_strides):
            return command(args)

    def command(args: argparse.Namespace) -> int:
        if args.command == "explain":
            from convcanon.hlo.explain import explain_file

            return explain_file(
                args.input, args.pass_pipeline, args.format, args.input_hlo, args.split_input_file
            )
        if args.command == "run":
            from convcanon.reference.command import run_command
            from convcanon.verify.run_inputs import RandomFeed

            feed = RandomFeed(args.seed)
            code = run_command(
                args.input,
                inputs=args.inputs,
                output=args.output,
                entry=args.entry,
                split_input_file=args.split_input_file,
                memory_limit=args.memory_limit,
                max_loop_iterations=args.max_loop_iterations,
                draw=feed,
            )
            feed.print_notes()
            return code
        if args.command == "verify":
            from convcanon.verify.command import verify_command

            return verify_command(
                args.before,
                args.after,
                engine=args.engine,
                trials=args.trials,
                seed=args.seed,
                entry=args.entry,
                batch_sizes=args.batch_sizes,
                timeout=args.timeout,
                pipeline=args.pass_pipeline,
                rtol=args.rtol,
                atol=args.atol,
            )
        if args.command == "graph":
            from convcanon.graph import graph_command

            return graph_command(
                args.input,
                args.pass_pipeline,
                args.format,
                args.output,
                max_nodes=args.max_nodes,
                timeout=args.timeout,
                memory_limit=args.memory_limit,
            )
        if args.command == "import-migraphx":
            from convcanon.migraphx.importer import import_command

            return import_command(args.input, args.output, args.name)
        raise UsageError(f"unknown command {args.command}")

    return _guarded(body)


if __name__ == "__main__":
    sys.exit(main())
