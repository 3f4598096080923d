"""Aliases that nest through each other (`!t2 = tuple<!t1>`, `#l2 = loc(callsite(#l1 at #l0))`)
nest as deep as brackets, though no line holds more than one: a chain of 30k type aliases
killed MLIR's printer by SIGSEGV, a chain of 100k call-site locations its parser. They are
refused past 1024 levels, at the alias that passes it; JAX's own call-site chains read as they
did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _diagnostics import without_source_lines  # pyright: ignore[reportMissingImports]
from cli_support import DEBUGINFO, Runner  # pyright: ignore[reportMissingImports]

ENTRY = "import sys; from convcanon.cli import opt_main; sys.exit(opt_main())"
MAIN = "func.func @main(%a: {t}) -> {t} {{\n  return %a : {t}{loc}\n}}\n"


def _types(count: int, wrap: str) -> str:
    lines = ["!t0 = tuple<f32>"] + [f"!t{i} = {wrap.format(f'!t{i - 1}')}" for i in range(1, count)]
    return "\n".join(lines) + "\n" + MAIN.format(t=f"!t{count - 1}", loc="")


def _call_sites(count: int) -> str:
    lines = ['#l0 = loc("a.py":1:1)']
    lines += [f"#l{i} = loc(callsite(#l{i - 1} at #l0))" for i in range(1, count)]
    return "\n".join(lines) + "\n" + MAIN.format(t="tensor<4xf32>", loc=f" loc(#l{count - 1})")


@pytest.mark.parametrize(
    ("text", "where", "alias"),
    [
        (_types(30_000, "tuple<{}>"), 1025, "!t1024"),  # one level an alias
        (_types(600, "tuple<tuple<{}>>"), 513, "!t512"),  # two
        (_call_sites(100_000), 513, "#l512"),  # callsite( and loc(: two
    ],
    ids=["type chain", "two levels an alias", "call-site chain"],
)
def test_a_chain_past_the_limit_is_refused_at_its_alias(
    tmp_path: Path, text: str, where: int, alias: str
) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    done = subprocess.run([sys.executable, "-c", ENTRY, str(module)], capture_output=True)
    assert done.returncode == 1, done.stderr[-300:]
    assert without_source_lines(done.stderr.decode()) == (
        f"{module}:{where}:1: error: alias {alias} nests deeper than 1024 levels through the"
        " aliases it names\n"
    )


@pytest.mark.parametrize("text", [_types(1000, "tuple<{}>"), _call_sites(500)])
def test_a_chain_within_the_limit_reads(opt: Runner, tmp_path: Path, text: str) -> None:
    module = tmp_path / "m.mlir"
    module.write_text(text)
    assert opt(module, "-o", tmp_path / "out.mlir").code == 0


def test_jax_call_site_locations_read(opt: Runner) -> None:
    result = opt(DEBUGINFO, "--mlir-print-debuginfo")
    assert (result.code, result.err) == (0, "")
    assert "callsite(" in result.out
