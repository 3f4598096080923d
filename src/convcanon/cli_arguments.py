"""The argparse pieces both commands share: help that names defaults, a usage error instead of
argparse's exit, `--version`, and the options and value types spelled the same everywhere."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from convcanon.diagnostics import UsageError
from convcanon.fileio.limits import MAX_INPUT_SIZE_HELP
from convcanon.fileio.split_input import SPLIT_MARKER
from convcanon.options import LLVM_BOOLEANS, decimal_float, decimal_int


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


class CommandParser(argparse.ArgumentParser):
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


class VersionAction(argparse.Action):
    """`--version`: `PROG VERSION` on stdout, exit 0."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def add_max_input_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-input-size", default="1GiB", help=MAX_INPUT_SIZE_HELP)


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


def add_output(
    parser: argparse.ArgumentParser, help: str, default: str | None = None, required: bool = False
) -> None:
    """`-o/--output`, the same spelling and the same refusal of a second one everywhere."""
    parser.add_argument(
        "-o", "--output", action=_StoreOnce, default=default, required=required, help=help
    )


def add_allow_unregistered(parser: argparse.ArgumentParser) -> None:
    """`--allow-unregistered-dialect`, mlir-opt's spelling, on every command that reads a module."""
    parser.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="let ops of dialects we do not know through, untouched",
    )


def add_input_hlo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-hlo",
        action="store_true",
        help="the input is a serialized XLA HloModuleProto (.pb) or HLO text",
    )


def integer_at_least(minimum: int | None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ASCII decimal digits, at least `minimum` and at most
    `maximum` if given (argparse reports anything else as a usage error; without a minimum the
    command checks the range)."""
    what = "an integer" if minimum is None else f"an integer >= {minimum}"
    what += "" if maximum is None else f" and <= {maximum}"

    def parse(text: str) -> int:
        value = decimal_int(text)
        if (
            value is None
            or (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)
        ):
            raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}")
        return value

    return parse


def number(text: str) -> float:
    """A number in ASCII decimal notation, or inf or nan (the command checks its range)."""
    value = decimal_float(text)
    if value is None and text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        value = float(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}")
    return value


def batch_sizes(text: str) -> tuple[int, ...]:
    """`1,2,5`: batch sizes >= 1 (argparse reports anything else as a usage error)."""
    parts = [decimal_int(part) for part in text.split(",")]
    sizes = tuple(size for size in parts if size is not None)
    if not sizes or len(sizes) < len(parts) or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"must be integers >= 1 separated by commas, not {text!r}")
    return sizes


# Flags whose value comes only after `=`, and their value when bare or `=` gives none, as
# mlir-opt reads them: `--split-input-file file.mlir` splits file.mlir at `// -----`. A boolean
# (`--verify-each`) is `true` bare, and `=` alone is no value of it.
VALUE_AFTER_EQUALS = {
    "--verify-diagnostics": "all",
    "--split-input-file": SPLIT_MARKER,
    "--verify-each": "true",
    "--mlir-print-op-on-diagnostic": "true",
    "--mlir-disable-diagnostic-notes": "true",
}
_BOOLEANS = {"--verify-each", "--mlir-print-op-on-diagnostic", "--mlir-disable-diagnostic-notes"}


def llvm_bool(text: str) -> bool:
    """A boolean flag's value as LLVM's command line reads it: `true`, `false`, `1` or `0`
    (`=TRUE` is refused there too)."""
    value = LLVM_BOOLEANS.get(text)
    if value is not None:
        return value
    raise argparse.ArgumentTypeError(f"must be true, false, 1 or 0, not {text!r}")


def value_after_equals(arg: str) -> str | None:
    """`arg` with its value spelled after `=`, if it is one of those flags; else None."""
    name, eq, value = arg.partition("=")
    if name not in VALUE_AFTER_EQUALS:
        return None
    if not value and not (eq and name in _BOOLEANS):
        value = VALUE_AFTER_EQUALS[name]
    return f"{name}={value}"


def values_after_equals(argv: Sequence[str]) -> list[str]:
    """`argv` with every such flag's value after `=` (none after `--`)."""
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--":
            return [*rest, arg, *args]
        rest.append(value_after_equals(arg) or arg)
    return rest


def add_split_input_file(parser: argparse.ArgumentParser, what: str) -> None:
    """`--split-input-file[=MARKER]`, read as mlir-opt reads it (`values_after_equals`)."""
    parser.add_argument(
        "--split-input-file",
        default="",
        metavar="=MARKER",
        help=f"{what} (or at MARKER, cut as mlir-opt cuts)",
    )
