"""`convcanon-opt` (mlir-opt style) and `convcanon` (explain, run, verify, import-migraphx).

The CLI only parses arguments (`opt_arguments`, `command_arguments`), dispatches and turns
`ConvcanonError`/`UsageError` into a one-line diagnostic and an exit code. Heavy imports happen
inside the command that needs them.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import os
import sys
from collections.abc import Callable, Sequence

from convcanon.cli_arguments import values_after_equals
from convcanon.command_arguments import main_parser
from convcanon.diagnostics import (
    ConvcanonError,
    UsageError,
    diagnostics_printed,
    sources_shown,
)
from convcanon.fileio.limits import set_max_input_size
from convcanon.fileio.stdout import (
    flush_stdout,
    is_stdout_failure,
    standard_streams_held,
    stdout_error,
    stdout_written_whole,
    write_stdout,
)
from convcanon.ir_kind import (
    NO_IMPLICIT_MODULE,
    SINGLE_THREADED,
    UNREGISTERED_DIALECTS,
    VERIFY_EACH,
    VERIFY_ROUNDTRIP,
    AsmFlags,
)
from convcanon.opt_arguments import mlir_opt_argv, opt_parser, requested_instruments

# XLA's C++ logging reads this when jaxlib loads: keep stderr for our diagnostics.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def _guarded(body: Callable[[], int]) -> int:
    """Run a command; every failure that is not a bug is one line on stderr and an exit code."""
    with standard_streams_held():
        return _reported(body)


def _reported(body: Callable[[], int]) -> int:
    with sources_shown():
        return _run_reported(body)


def _run_reported(body: Callable[[], int]) -> int:
    try:
        with stdout_written_whole():
            try:
                # A context of its own: settings such as --max-input-size end with the command.
                code = contextvars.copy_context().run(body)
            except SystemExit:  # argparse printed --help or --version: it reached stdout, or fails
                flush_stdout()
                raise
            flush_stdout()
        return code
    except ConvcanonError as err:
        print(err.render(), file=sys.stderr)
        sys.stderr.write(err.trailer)
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


def opt_main(argv: Sequence[str] | None = None) -> int:
    """`convcanon-opt`; without `argv`, the console script, which ends the process itself."""
    if argv is None:  # the convcanon-opt script, which ends in `_exit_now`
        # Its objects live until the exit (the module is kept, see keep_modules_until_exit), so
        # the cyclic collector would only scan them: ~2-5 ms of a run, a ResNet-50 one's 3%.
        gc.disable()

    def body() -> int:
        parser = opt_parser()
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
        SINGLE_THREADED.set(args.mlir_disable_threading)
        VERIFY_EACH.set(args.verify_each)
        VERIFY_ROUNDTRIP.set(args.verify_roundtrip)
        NO_IMPLICIT_MODULE.set(args.no_implicit_module)
        with diagnostics_printed(  # --verify-diagnostics collects them all, and no op
            args.mlir_diagnostic_verbosity_level,
            args.mlir_print_op_on_diagnostic and args.verify_diagnostics is None,
        ):
            return _run_opt(args, args.pass_pipeline or ",".join(pass_flags), script=argv is None)

    code = _guarded(body)
    if argv is None:  # the convcanon-opt script: its job is done
        _exit_now(code)
    return code


def _run_opt(args: argparse.Namespace, pipeline: str, script: bool) -> int:
    """The driver's job as the parsed flags describe it."""
    from convcanon.driver import PrintOptions, keep_modules_until_exit, output_format, run_opt

    if script:  # the convcanon-opt script, which ends in `_exit_now`
        keep_modules_until_exit()
    return run_opt(
        args.input,
        pipeline,
        args.output,
        stats=args.stats,
        split_marker=args.split_input_file,
        output_marker=args.output_split_marker,
        input_hlo=args.input_hlo,
        print_options=PrintOptions(
            debug_info=True if args.mlir_print_debuginfo else None,
            generic=True if args.mlir_print_op_generic else None,
            elide_elements=args.mlir_elide_elementsattrs_if_larger,
            asm=AsmFlags(
                args.mlir_print_local_scope,
                args.mlir_use_nameloc_as_prefix,
                args.mlir_elide_resource_strings_if_larger,
                args.mlir_print_skip_regions,
                args.mlir_pretty_debuginfo,
            ),
        ),
        instruments=requested_instruments(args),
        output_format=output_format(
            args.emit_bytecode, args.target_version, args.emit_hlo, args.emit_bytecode_version
        ),
        verify_diagnostics=args.verify_diagnostics,
    )


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown (freeing the MLIR context, its
    dialects and every module: ~18 ms, an eighth of a ResNet-50 job). The output is written
    and stdout flushed by now; nothing convcanon registers runs at exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the process started with it closed
                stream.flush()
        except (OSError, ValueError):  # a closed or failing stream: reported already, if ours
            pass
    os._exit(code)


# -- convcanon -----------------------------------------------------------------------------------


def _explain(args: argparse.Namespace) -> int:
    from convcanon.hlo.explain import explain_file

    return explain_file(
        args.input, args.pass_pipeline, args.format, args.input_hlo, args.split_input_file
    )


def _run(args: argparse.Namespace) -> int:
    from convcanon.reference.command import run_command
    from convcanon.reference.kernels.budget import work_limit
    from convcanon.verify.run_inputs import RandomFeed

    feed = RandomFeed(args.seed)
    with work_limit(args.max_work):
        code = run_command(
            args.input,
            inputs=args.inputs,
            output=args.output,
            entry=args.entry,
            split_marker=args.split_input_file,
            memory_limit=args.memory_limit,
            max_loop_iterations=args.max_loop_iterations,
            draw=feed,
        )
    feed.print_notes()
    return code


def _verify(args: argparse.Namespace) -> int:
    from convcanon.reference.kernels.budget import work_limit
    from convcanon.verify.command import verify_command

    with work_limit(args.max_work):
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


def _graph(args: argparse.Namespace) -> int:
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


def _import_migraphx(args: argparse.Namespace) -> int:
    from convcanon.migraphx.importer import import_command

    return import_command(args.input, args.output, args.name)


# Each subcommand's handler; command_arguments declares its options.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "explain": _explain,
    "run": _run,
    "verify": _verify,
    "graph": _graph,
    "import-migraphx": _import_migraphx,
}


def _command(args: argparse.Namespace) -> int:
    handler = _COMMANDS.get(args.command)
    if handler is None:
        raise UsageError(f"unknown command {args.command}")
    return handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    """`convcanon CMD`: parse, set the command's limits, run its handler."""

    def body() -> int:
        args = main_parser().parse_args(values_after_equals(sys.argv[1:] if argv is None else argv))
        set_max_input_size(args.max_input_size)
        UNREGISTERED_DIALECTS.set(getattr(args, "allow_unregistered_dialect", False))
        if getattr(args, "strict_strides", None) is None:
            return _command(args)
        from convcanon.migraphx.declared_strides import stride_policy

        with stride_policy(args.strict_strides):
            return _command(args)

    return _guarded(body)


if __name__ == "__main__":
    sys.exit(main())
