"""`convcanon-opt` (mlir-opt style) and `convcanon` (explain, run, verify, import-migraphx).

The CLI only parses arguments, dispatches and turns `ConvcanonError`/`UsageError` into a one-line
diagnostic and an exit code. Heavy imports happen inside the command that needs them.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import sys
from collections.abc import Callable, Sequence

from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.fileio import MAX_INPUT_SIZE_HELP, flush_stdout, set_max_input_size, stdout_error

# XLA's C++ logging reads this when jaxlib loads: keep stderr for our diagnostics.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that raises `UsageError` (exit 2, one line) instead of printing usage, exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _add_max_input_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-input-size", default="1GiB", help=MAX_INPUT_SIZE_HELP)


def _guarded(body: Callable[[], int]) -> int:
    try:
        # A context of its own: settings such as --max-input-size end with the command.
        code = contextvars.copy_context().run(body)
        flush_stdout()
        return code
    except ConvcanonError as err:
        print(err.render(), file=sys.stderr)
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
    except RecursionError:
        print("error: input nests too deeply", file=sys.stderr)
        return 1
    except MemoryError:
        print("error: out of memory on this input", file=sys.stderr)
        return 1


# -- convcanon-opt -------------------------------------------------------------------------------


def _opt_parser() -> argparse.ArgumentParser:
    from convcanon.pipeline import describe_passes

    parser = _ArgumentParser(
        prog="convcanon-opt",
        description="Run convcanon passes over an MLIR file, like mlir-opt.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=describe_passes()
        + "\n\nexample: convcanon-opt model.mlir -p "
        + "'stablehlo-canonicalize-conv{gate=general negative-padding=slice}'",
    )
    parser.add_argument("input", nargs="?", default="-", help="input file, or - for stdin")
    parser.add_argument("-p", "--pass-pipeline", default="", help="comma-separated passes")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    parser.add_argument("--stats", action="store_true", help="print pass statistics to stderr")
    parser.add_argument(
        "--split-input-file", action="store_true", help="process each `// -----` chunk on its own"
    )
    parser.add_argument(
        "--input-hlo",
        action="store_true",
        help="the input is a serialized XLA HloModuleProto (.pb) or HLO text",
    )
    _add_max_input_size(parser)
    return parser


def opt_main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _opt_parser().parse_args(argv)
        set_max_input_size(args.max_input_size)
        from convcanon.driver import run_opt

        return run_opt(
            args.input,
            args.pass_pipeline,
            args.output,
            stats=args.stats,
            split_input_file=args.split_input_file,
            input_hlo=args.input_hlo,
        )

    return _guarded(body)


# -- convcanon -----------------------------------------------------------------------------------


def _main_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="convcanon", description="convcanon tools")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_ArgumentParser)

    explain = sub.add_parser("explain", help="one row per convolution: the gate's decision and why")
    explain.add_argument("input")
    explain.add_argument("-p", "--pass-pipeline", default="stablehlo-canonicalize-conv")
    explain.add_argument("--format", choices=("table", "json", "markdown"), default="table")

    run = sub.add_parser("run", help="interpret a module with numpy")
    run.add_argument("input")
    run.add_argument("--inputs", help="npz with the entry function's arguments (arg0, arg1, ...)")
    run.add_argument("--output", help="write the results to this npz")
    run.add_argument("--entry", default=None, help="function to run (default: main, or each)")
    run.add_argument("--split-input-file", action="store_true")
    run.add_argument(
        "--memory-limit",
        default="4GiB",
        help="refuse tensors whose buffers would exceed this (default 4GiB)",
    )

    verify = sub.add_parser("verify", help="differential check of two modules on random inputs")
    verify.add_argument("before")
    verify.add_argument("after")
    verify.add_argument("--engine", choices=("reference", "xla", "iree"), default="reference")
    verify.add_argument("--trials", type=int, default=3)
    verify.add_argument("--seed", type=int, default=0)
    verify.add_argument("--entry", default=None)

    graph = sub.add_parser("graph", help="dataflow graph before/after a pipeline, side by side")
    graph.add_argument("input")
    graph.add_argument("-p", "--pass-pipeline", default="")
    graph.add_argument("--format", choices=("svg", "png", "dot"), default="svg")
    graph.add_argument("-o", "--output", required=True)

    imp = sub.add_parser("import-migraphx", help="MIGraphX printed program -> migraphx MLIR")
    imp.add_argument("input")
    imp.add_argument("-o", "--output", default="-")
    imp.add_argument("--name", default="main")
    for command in (explain, run, verify, graph, imp):
        _add_max_input_size(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _main_parser().parse_args(argv)
        set_max_input_size(args.max_input_size)
        if args.command == "explain":
            from convcanon.hlo.explain import explain_file

            return explain_file(args.input, args.pass_pipeline, args.format)
        if args.command == "run":
            from convcanon.reference.run import run_command

            return run_command(
                args.input,
                inputs=args.inputs,
                output=args.output,
                entry=args.entry,
                split_input_file=args.split_input_file,
                memory_limit=args.memory_limit,
            )
        if args.command == "verify":
            from convcanon.verify.command import verify_command

            return verify_command(
                args.before,
                args.after,
                engine=args.engine,
                trials=args.trials,
                seed=args.seed,
                entry=args.entry,
            )
        if args.command == "graph":
            from convcanon.graph import graph_command

            return graph_command(args.input, args.pass_pipeline, args.format, args.output)
        if args.command == "import-migraphx":
            from convcanon.migraphx.importer import import_command

            return import_command(args.input, args.output, args.name)
        raise UsageError(f"unknown command {args.command}")

    return _guarded(body)


if __name__ == "__main__":
    sys.exit(main())
