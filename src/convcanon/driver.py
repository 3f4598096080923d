"""The `convcanon-opt` driver: read, parse, run the pipeline, print, write atomically.

The two halves use different IR frameworks (jaxlib's MLIR for HLO, xDSL for migraphx/TOSA); a
`Framework` adapter hides which one a file needs. Nothing is written unless every pass succeeded.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from convcanon.diagnostics import ConvcanonError, UsageError
from convcanon.fileio import check_output_path, read_input, write_output
from convcanon.ir_kind import sniff_framework
from convcanon.pipeline import PassInvocation, PassStats, parse_pipeline


@dataclass(frozen=True)
class FrameworkAdapter:
    """How one IR framework parses and prints a file (`module:function` entry points)."""

    parse: str  # (text, filename) -> module; raises ConvcanonError
    print: str  # (module) -> str

    def _load(self, entry: str) -> Callable[..., Any]:
        module_name, _, attr = entry.partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def parse_text(self, text: str, filename: str) -> Any:
        return self._load(self.parse)(text, filename)

    def print_module(self, module: Any) -> str:
        return self._load(self.print)(module)


FRAMEWORKS: Mapping[str, FrameworkAdapter] = {
    "hlo": FrameworkAdapter("convcanon.hlo.io:parse_file_text", "convcanon.hlo.io:print_file"),
    "xdsl": FrameworkAdapter(
        "convcanon.migraphx.io:parse_file_text", "convcanon.migraphx.io:print_file"
    ),
}


def choose_framework(passes: list[PassInvocation], text: str) -> str:
    frameworks = {p.info.framework for p in passes}
    if len(frameworks) > 1:
        raise UsageError("a pipeline cannot mix HLO passes and migraphx passes")
    return frameworks.pop() if frameworks else sniff_framework(text)


def run_pipeline(
    module: Any, passes: list[PassInvocation], stats: dict[str, PassStats] | None = None
) -> None:
    for invocation in passes:
        result = invocation.info.load()(module, invocation.options)
        if stats is not None and isinstance(result, PassStats):
            stats[invocation.info.name] = result


def _print_stats(stats: dict[str, PassStats]) -> None:
    for name, pass_stats in stats.items():
        print(f"===- {name} statistics -===", file=sys.stderr)
        for key, value in sorted(pass_stats.counters.items()):
            print(f"  {value:8d} {key}", file=sys.stderr)


def transform_text(
    text: str, filename: str, pipeline: str, stats: dict[str, PassStats] | None = None
) -> str:
    """Parse, run `pipeline`, print: the whole job on one chunk of text."""
    passes = parse_pipeline(pipeline)
    adapter = FRAMEWORKS[choose_framework(passes, text)]
    module = adapter.parse_text(text, filename)
    run_pipeline(module, passes, stats)
    return adapter.print_module(module)


def run_opt(
    input_path: str,
    pipeline: str,
    output_path: str,
    *,
    stats: bool = False,
    split_input_file: bool = False,
    input_hlo: bool = False,
) -> int:
    parse_pipeline(pipeline)  # usage errors before reading anything
    check_output_path(input_path, output_path)
    if input_hlo:
        from convcanon.hlo.hlo_import import hlo_file_to_stablehlo_text

        filename, text = input_path, hlo_file_to_stablehlo_text(input_path)
    else:
        filename, text = read_input(input_path)
    collected: dict[str, PassStats] = {}
    if split_input_file:
        from convcanon.hlo.context import split_input_file as split

        outputs = []
        for offset, chunk in split(text):
            try:
                outputs.append(transform_text(chunk, filename, pipeline, collected))
            except ConvcanonError as err:
                if err.loc is not None and err.loc.line:
                    err.loc = type(err.loc)(err.loc.file, err.loc.line + offset, err.loc.col)
                raise
        result = "// -----\n".join(outputs)
    else:
        result = transform_text(text, filename, pipeline, collected)
    if stats:
        _print_stats(collected)
    write_output(output_path, result)
    return 0
