"""mlir-opt's pass instrumentation for `convcanon-opt`, over our passes and MLIR's alike: the IR
before/after a pass (`--mlir-print-ir-before=PASS`, `-after=PASS`, `-before-all`, `-after-all`),
the execution time report (`--mlir-timing`) and the pipeline (`--dump-pass-pipeline`), each on
stderr in mlir-opt's own layout, so a diff against mlir-opt's output shows only the IR."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from convcanon.diagnostics import ConvcanonError
from convcanon.pipeline import UPSTREAM_ENTRIES, UPSTREAM_PASSES, PassInfo, PassInvocation
from convcanon.records import NamedTuple

RULE = "===" + "-" * 73 + "==="


def class_name(info: PassInfo) -> str:
    """The name mlir-opt gives a pass in dumps and timings: its C++ class (`CSEPass`); ours are
    named as TableGen would name them (`StablehloCanonicalizeConvPass`)."""
    if info.entry in UPSTREAM_ENTRIES:
        if "." in info.name:  # a nested pipeline on an op (`func.func(cse)`)
            return f"'{info.name}' Pipeline"
        return UPSTREAM_PASSES.get(info.name, (info.name, ""))[0]
    return "".join(part.capitalize() for part in info.name.split("-")) + "Pass"


def textual(invocation: PassInvocation) -> str:
    """The pass as a pipeline prints it: every option with its value, by option name (as MLIR
    prints its passes)."""
    info = invocation.info
    if info.entry in UPSTREAM_ENTRIES:
        return str(invocation.options["pipeline"])
    from convcanon.options import spelling

    if not info.options:
        return info.name
    values = " ".join(
        f"{name}={spelling(invocation.options[name])}" for name in sorted(invocation.options)
    )
    return f"{info.name}{{{values}}}"


def _items(text: str) -> list[str]:
    """Split a pipeline's text at its top-level commas."""
    items, depth, start = [], 0, 0
    for index, ch in enumerate(text):
        depth += (ch in "({") - (ch in ")}")
        if ch == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    return [*items, text[start:]] if text else items


def _pretty(items: list[str], indent: int) -> list[str]:
    """mlir-opt's pretty pipeline: a nested `op(...)` opens a level, one pass a line."""
    lines = []
    pad = "  " * indent
    for number, item in enumerate(items):
        comma = "," if number < len(items) - 1 else ""
        nested = re.fullmatch(r"([\w.$-]+)\((.*)\)", item, re.S)
        if nested and "{" not in nested[1]:
            lines.append(f"{pad}{nested[1]}(")
            lines += _pretty(_items(nested[2]), indent + 1)
            lines.append(f"{pad}){comma}")
        else:
            lines.append(f"{pad}{item}{comma}")
    return lines


def dump_pass_pipeline(passes: list[PassInvocation]) -> str:
    """`--dump-pass-pipeline`: what mlir-opt prints on stderr before it runs the pipeline."""
    body = _pretty([textual(p) for p in passes], 1)
    return "\n".join([f"Pass Manager with {len(passes)} passes:", "builtin.module(", *body, ")"])


class IrPrinting(NamedTuple):
    """Which passes get the module printed before and after them (pass arguments)."""

    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    before_all: bool = False
    after_all: bool = False
    after_change: bool = False  # an after-dump only where the pass changed the module
    after_failure: bool = False  # after-dumps of every pass, only where it fails
    module_scope: bool = False  # the header names the module printed

    @property
    def enabled(self) -> bool:
        return bool(
            self.before or self.after or self.before_all or self.after_all or self.after_failure
        )

    def before_pass(self, names: set[str]) -> bool:
        return self.before_all or bool(names & self.before)

    def after_pass(self, names: set[str]) -> bool:
        """Whether the pass gets an after-dump (a failing one; or any, unless only failures
        are asked for), as mlir-opt's filters decide."""
        return self.after_all or self.after_failure or bool(names & self.after)


def _arguments(invocation: PassInvocation) -> set[str]:
    """The pass arguments an item runs (`func.func(cse,canonicalize)` runs two)."""
    text = textual(invocation)
    return set(re.findall(r"(?:^|[(,])\s*([\w.$-]+)(?=[{,)]|$)", text)) | {invocation.info.name}


def _scope(module: Any) -> str:
    """`'builtin.module' operation: @name`: the op a dump prints, as mlir-opt's module-scope
    header names it (a jaxlib module is held in its file record; an xDSL module is the op)."""
    held = getattr(module, "module", module)
    op = getattr(held, "operation", held)
    symbol = getattr(op, "sym_name", None)  # xDSL
    attributes = getattr(op, "attributes", {})
    if symbol is None and "sym_name" in attributes:
        symbol = attributes["sym_name"]
    name = getattr(symbol, "data", None) or getattr(symbol, "value", None)
    return f"'{op.name}' operation" + (f": @{name}" if name else "")


class PassInstruments:
    """The instrumentation of one `convcanon-opt` run: its timers live across every
    `--split-input-file` chunk, so the report sums them, as `--mlir-pass-statistics` does."""

    def __init__(
        self,
        printing: IrPrinting | None = None,
        timing: bool = False,
        dump_pipeline: bool = False,
        timing_display: str = "tree",
    ) -> None:
        self.printing = printing or IrPrinting()
        self.timing = timing
        self.timing_display = timing_display
        self.dump_pipeline = dump_pipeline
        self.seconds: dict[tuple[int, str], float] = {}  # (order, name) -> wall time
        self._started: float | None = None  # when the first chunk's parsing began

    @contextlib.contextmanager
    def timed(self, order: int, name: str) -> Iterator[None]:
        start = time.perf_counter()
        if self._started is None:
            self._started = start
        try:
            yield
        finally:
            key = (order, name)
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start

    def parsing(self) -> contextlib.AbstractContextManager[None]:
        return self.timed(0, "Parser")

    def output(self) -> contextlib.AbstractContextManager[None]:
        return self.timed(1 << 30, "Output")  # after every pass

    def run_pass(
        self,
        index: int,
        invocation: PassInvocation,
        module: Any,
        printer: Callable[[Any], str],
        run: Callable[[], Any],
    ) -> Any:
        """`run()` the pass, with its IR dumps and its timer."""
        printing = self.printing
        names = _arguments(invocation)
        if printing.before_pass(names):
            self._dump("Before", invocation, module, printer(module))
        after = printing.after_pass(names)
        # the module as printed before, where only a change gets a dump (mlir-opt compares
        # fingerprints of the IR; the printed text is one); a dump only on failure needs none
        compare = after and printing.after_change and not printing.after_failure
        unchanged = printer(module) if compare else None
        try:
            with self.timed(index + 1, class_name(invocation.info)):
                result = run()
        except ConvcanonError:
            if after:
                self._dump("After", invocation, module, printer(module), failed=True)
            raise
        if after and not printing.after_failure:
            text = printer(module)
            if text != unchanged:
                self._dump("After", invocation, module, text)
        return result

    def _dump(
        self,
        when: str,
        invocation: PassInvocation,
        module: Any,
        module_text: str,
        failed: bool = False,
    ) -> None:
        outcome = " Failed" if failed else ""
        text = textual(invocation)  # a pass nested on functions is named without its anchor
        nested = re.fullmatch(r"[\w.$-]+\((.*)\)", text, re.S)
        title = f"{class_name(invocation.info)}{outcome}: {nested[1] if nested else text}"
        if self.printing.module_scope:
            title += f" ({_scope(module)})"
        sys.stderr.write(f"// -----// IR Dump {when} {title} //----- //\n{module_text}\n\n")

    def report(self) -> str:
        """mlir-opt's `--mlir-timing` report, `Rest` what no timer saw: as a tree, each timer in
        the order it ran; as a list, the timers merged by name with the root's, slowest first."""
        end = time.perf_counter()
        total = end - (end if self._started is None else self._started)
        rows = [(name, seconds) for (_, name), seconds in sorted(self.seconds.items())]
        rest = max(total - sum(seconds for _, seconds in rows), 0.0)
        if self.timing_display == "list":
            merged: dict[str, float] = {"root": total}
            for name, seconds in rows:
                merged[name] = merged.get(name, 0.0) + seconds
            rows = sorted(merged.items(), key=lambda row: -row[1])

        def row(seconds: float, name: str) -> str:
            share = 100.0 * seconds / total if total else 0.0
            return f"  {seconds:8.4f} ({share:5.1f}%)  {name}"

        lines = [
            RULE,
            "... Execution time report ...".center(len(RULE)).rstrip(),
            RULE,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
            *(row(seconds, name) for name, seconds in rows),
            row(rest, "Rest"),
            row(total, "Total"),
        ]
        return "\n".join(lines) + "\n"
