"""`convcanon-opt`'s arguments: its parser, mlir-opt's spellings of them, and the pass
instruments they ask for."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from convcanon.cli_arguments import (
    CommandParser,
    VersionAction,
    add_allow_unregistered,
    add_input_hlo,
    add_max_input_size,
    add_output,
    add_split_input_file,
    integer_at_least,
    llvm_bool,
    value_after_equals,
)
from convcanon.diagnostics import VERBOSITY_LEVELS
from convcanon.fileio.limits import INT64_MAX
from convcanon.fileio.split_input import SPLIT_MARKER
from convcanon.pipeline import PASSES, UPSTREAM_PASSES, PassInfo

if TYPE_CHECKING:
    from convcanon.pass_instruments import PassInstruments


class _OptParser(CommandParser):
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


def opt_parser() -> argparse.ArgumentParser:
    """convcanon-opt's parser; the order options are added in is the order --help lists them."""
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
    add_output(parser, "output file (default: -, stdout)", default="-")
    parser.add_argument(
        "--stats",
        "--mlir-pass-statistics",
        action="store_true",
        help="print each pass instance's statistics to stderr, summed over split chunks",
    )
    add_split_input_file(
        parser,
        f"process each chunk between `{SPLIT_MARKER}` markers on its own; every bad chunk's"
        " error is reported",
    )
    parser.add_argument(
        "--output-split-marker",
        default=SPLIT_MARKER,
        metavar="MARKER",
        help="the line between split chunks' outputs (empty: none)",
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
    parser.add_argument("--version", action=VersionAction)
    _add_mlir_opt_habits(parser)
    _add_pass_flags(parser)
    add_input_hlo(parser)
    _add_output_formats(parser)
    add_max_input_size(parser)
    return parser


_RUN_BY = {"inline": "ours as MLIR's inliner (jaxlib's inlines nothing)"}


def _add_pass_flags(parser: argparse.ArgumentParser) -> None:
    """Each pass as a flag, shown in the help; `mlir_opt_argv` takes them out before parsing."""
    flags = parser.add_argument_group(
        "passes as flags (mlir-opt style; several flags form a pipeline in the order given)"
    )
    for info in PASSES.values():
        if info.declaration:  # its options (and the help's example) are read only for --help
            flags.add_argument(
                f"--{info.name}", metavar="'OPTIONS'", nargs="?", default=argparse.SUPPRESS
            )
        else:
            flags.add_argument(f"--{info.name}", action="store_true", default=argparse.SUPPRESS)
    for name, (_, summary) in UPSTREAM_PASSES.items():  # as --list-passes lists them
        flags.add_argument(
            f"--{name}",
            metavar="'OPTIONS'",
            nargs="?",
            default=argparse.SUPPRESS,
            help=f"MLIR's pass, {_RUN_BY.get(name, 'run by jaxlib')}: {summary}",
        )


def _add_output_formats(parser: argparse.ArgumentParser) -> None:
    """The formats other than MLIR text, one at most."""
    emit = parser.add_mutually_exclusive_group()
    emit.add_argument(
        "--emit-bytecode", action="store_true", help="write MLIR bytecode, as mlir-opt does"
    )
    parser.add_argument(
        "--emit-bytecode-version",
        type=integer_at_least(0, INT64_MAX),
        metavar="N",
        default=None,
        help="the MLIR bytecode version --emit-bytecode writes, for an older reader (default:"
        " the current one; the writer names the versions it can write)",
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


def _pass_names(text: str) -> frozenset[str]:
    """`--mlir-print-ir-before=cse,stablehlo-canonicalize-conv`: each a pass name we can run."""
    from convcanon.pipeline import parse_pipeline

    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        parse_pipeline(name)  # an unknown name is the usage error an unknown pass is
    return names


def _add_switches(
    group: argparse.ArgumentParser | argparse._ArgumentGroup, switches: tuple[tuple[str, str], ...]
) -> None:
    """On/off flags, each with its help."""
    for flag, help in switches:
        group.add_argument(flag, action="store_true", help=help)


def _add_timing(group: argparse._ArgumentGroup) -> None:
    """`--mlir-timing` and the layout of its report."""
    _add_switches(group, (("--mlir-timing", "report each pass's wall time, as mlir-opt"),))
    group.add_argument(
        "--mlir-timing-display",
        choices=("list", "tree"),
        default="tree",
        help="--mlir-timing's layout: tree (each pass in pipeline order) or list (the timers"
        " merged by name, slowest first), as mlir-opt",
    )


def _add_mlir_opt_habits(parser: argparse.ArgumentParser) -> None:
    """mlir-opt's flags for listing, watching and timing the passes, and the parser's leniency."""
    habits = parser.add_argument_group("mlir-opt's instrumentation (all on stderr)")
    _add_switches(
        habits,
        (
            ("--list-passes", "print every pass -p can run, and exit"),
            (
                "--dump-pass-pipeline",
                "print the pipeline that will run, every option with its value",
            ),
        ),
    )
    _add_ir_dumps(habits)
    _add_timing(habits)
    _add_switches(
        habits,
        (
            (
                "--mlir-disable-threading",
                "run MLIR's passes on one thread (convcanon's own passes always do)",
            ),
        ),
    )
    habits.add_argument(
        "--verify-each",
        type=llvm_bool,
        default=True,
        metavar="=true|=false",
        help="verify the module after each MLIR pass (=false: not; convcanon's passes always"
        " check the ops they build)",
    )
    _add_switches(
        habits,
        (
            (
                "--no-implicit-module",
                "the input must be one top-level op, a module, not ops MLIR wraps in one"
                " (HLO modules)",
            ),
            (
                "--verify-roundtrip",
                "check that the input prints and parses back to itself, as text in generic form"
                " and as bytecode, before the pipeline (HLO modules)",
            ),
        ),
    )
    _add_printer_flags(parser)
    parser.add_argument(
        "--verify-diagnostics",
        nargs="?",
        const="all",
        choices=("all", "only-expected"),
        metavar="=all|=only-expected",
        help="check the diagnostics against the input's expected-error/-warning/-remark/-note"
        " comments (as mlir-opt); exit 0 when they all match. =only-expected checks only that"
        " each expected one comes, and lets any other through unreported",
    )
    _add_diagnostic_flags(parser)
    add_allow_unregistered(parser)


def _add_diagnostic_flags(parser: argparse.ArgumentParser) -> None:
    """mlir-opt's flags for what a diagnostic shows (none applies under --verify-diagnostics,
    which checks every diagnostic and never prints an op)."""
    parser.add_argument(
        "--mlir-print-op-on-diagnostic",
        type=llvm_bool,
        default=False,
        metavar="=true|=false",
        help="an error at an op carries the op in generic form (note: see current operation),"
        " as mlir-opt prints it by default (HLO modules; default false: the source line shows it)",
    )
    parser.add_argument(
        "--mlir-diagnostic-verbosity-level",
        choices=VERBOSITY_LEVELS,
        default="remarks",
        help="the diagnostics printed besides errors: errors (none), warnings, or remarks"
        " (warnings and remarks: the default)",
    )
    parser.add_argument(
        "--mlir-disable-diagnostic-notes",
        type=llvm_bool,
        default=False,
        metavar="=true|=false",
        help="drop the notes emitted on their own, as mlir-opt: convcanon-opt emits none, and"
        " the notes attached to an error still print",
    )


def _add_ir_dumps(habits: argparse._ArgumentGroup) -> None:
    """`--mlir-print-ir-*`: which passes get the module dumped around them, and how."""
    for when in ("before", "after"):
        habits.add_argument(
            f"--mlir-print-ir-{when}",
            metavar="PASS[,PASS]",
            action="append",
            default=[],
            help=f"print the module {when} these passes (repeatable)",
        )
        _add_switches(
            habits, ((f"--mlir-print-ir-{when}-all", f"print the module {when} every pass"),)
        )
    _add_switches(
        habits,
        (
            (
                "--mlir-print-ir-after-change",
                "of the dumps after a pass, print only those where the pass changed the module",
            ),
            (
                "--mlir-print-ir-after-failure",
                "print the module after a pass only when it fails (any pass)",
            ),
            (
                "--mlir-print-ir-module-scope",
                "name the module each dump prints in its header (every dump prints the module)",
            ),
        ),
    )


def _add_printer_flags(parser: argparse.ArgumentParser) -> None:
    """mlir-opt's printer flags beyond locations and the generic form (HLO modules); MLIR's
    printer takes its limits as int64, as mlir-opt does."""
    limits = (
        ("--mlir-elide-elementsattrs-if-larger", "elements attributes of more than N elements"),
        ("--mlir-elide-resource-strings-if-larger", "resource blobs of more than N characters"),
    )
    switches = (
        (
            "--mlir-print-local-scope",
            "print each location inline, not as an alias at the end (HLO modules)",
        ),
        (
            "--mlir-use-nameloc-as-prefix",
            'name each value after its op\'s name location (`%%sum` for `loc("sum")`; HLO modules)',
        ),
        ("--mlir-print-skip-regions", "print every op's regions as {...} (HLO modules)"),
        (
            "--mlir-pretty-debuginfo",
            "print each location printed as a person reads it, callsites and fused locations"
            " over lines, not as MLIR parses it (HLO modules)",
        ),
        (
            "--mlir-print-assume-verified",
            "print without verifying first: what convcanon-opt always does, since parsing and"
            " every pass verify",
        ),
    )
    for flag, what in limits:
        parser.add_argument(
            flag,
            type=integer_at_least(0, INT64_MAX),
            metavar="N",
            default=None,
            help=f"print {what} elided (HLO modules)",
        )
    _add_switches(parser, switches)


def requested_instruments(args: argparse.Namespace) -> PassInstruments | None:
    """The instruments the flags ask for; None when none is asked (no hooks around passes)."""
    from convcanon.pass_instruments import IrPrinting, PassInstruments

    printing = IrPrinting(
        frozenset().union(*map(_pass_names, args.mlir_print_ir_before)),
        frozenset().union(*map(_pass_names, args.mlir_print_ir_after)),
        args.mlir_print_ir_before_all,
        args.mlir_print_ir_after_all,
        args.mlir_print_ir_after_change,
        args.mlir_print_ir_after_failure,
        args.mlir_print_ir_module_scope,
    )
    if not (printing.enabled or args.mlir_timing or args.dump_pass_pipeline):
        return None
    return PassInstruments(
        printing, args.mlir_timing, args.dump_pass_pipeline, args.mlir_timing_display
    )


def _example_options(info: PassInfo) -> str:
    return " ".join(
        f"{o.name}={o.choices[-1] if o.choices else o.default}" for o in info.options[:1]
    )


def mlir_opt_argv(
    argv: Sequence[str], parser: argparse.ArgumentParser
) -> tuple[list[str], list[str]]:
    """mlir-opt spellings argparse does not know: `-long-option` as `--long-option` (so
    `-pass-pipeline=X` is not `-p ass-pipeline=X`), an optional value only after `=`
    (`--verify-diagnostics file.mlir` reads the file), and passes as flags (`--pass`,
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
        spelled = value_after_equals(name + eq + value)
        if spelled is not None:  # never the next argument
            rest.append(spelled)
            continue
        if name.startswith("--") and (name[2:] in PASSES or name[2:] in UPSTREAM_PASSES):
            value = value.strip()
            if value.startswith("{") and value.endswith("}"):
                value = value[1:-1]
            passes.append(f"{name[2:]}{{{value}}}" if value else name[2:])
            continue
        rest.append(name + eq + value)
    return rest, passes
