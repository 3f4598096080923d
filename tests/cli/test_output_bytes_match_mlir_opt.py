"""convcanon-opt writes the bytes iree-opt (a real mlir-opt) writes for the same input, pipeline
and printer flags: a tool that diffs or hashes our output against mlir-opt's sees no difference,
down to the newline mlir-opt writes after each module."""

from __future__ import annotations

import re
from pathlib import Path

from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Locations of each kind, so the printer writes aliases after the module (or inline).
MODULE = (
    "module @m {\n"
    '  func.func @f(%a: tensor<4xf32> loc("a")) -> tensor<4xf32> {\n'
    '    %0 = stablehlo.add %a, %a : tensor<4xf32> loc("x.py":3:7)\n'
    '    %1 = stablehlo.add %a, %a : tensor<4xf32> loc(fused["y.py":1:2, "add"])\n'
    "    %2 = stablehlo.multiply %0, %1 : tensor<4xf32>\n"
    "    %3 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n"
    "    %4 = stablehlo.add %2, %3 : tensor<4xf32>\n"
    "    return %4 : tensor<4xf32>\n  }\n}\n"
)
# Without locations: convcanon-opt prints an input's own locations unless told not to, mlir-opt
# only when told to.
UNLOCATED = re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", MODULE)
PLAIN = "func.func @g(%a: tensor<2xi32>) -> tensor<2xi32> {\n  return %a : tensor<2xi32>\n}\n"
PRINTER_FLAGS = [
    "--mlir-print-debuginfo",
    "--mlir-print-local-scope",
    "--mlir-print-op-generic",
    "--mlir-print-skip-regions",
    "--mlir-pretty-debuginfo",
    "--mlir-use-nameloc-as-prefix",
    "--mlir-elide-elementsattrs-if-larger=2",
]


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    flags=st.lists(st.sampled_from(PRINTER_FLAGS), unique=True, max_size=3),
    chunks=st.lists(st.sampled_from([MODULE, PLAIN]), min_size=1, max_size=3),
    split=st.sampled_from(
        [[], ["--split-input-file"], ["--split-input-file", "--output-split-marker="]]
    ),
    pipeline=st.sampled_from([[], ["--pass-pipeline=builtin.module(cse)"]]),
)
def test_output_is_mlir_opts_bytes(
    opt: Runner,
    tmp_path: Path,
    flags: list[str],
    chunks: list[str],
    split: list[str],
    pipeline: list[str],
) -> None:
    if not split:
        chunks = chunks[:1]
    if "--mlir-print-debuginfo" not in flags:
        chunks = [UNLOCATED if c == MODULE else c for c in chunks]
    elif len(chunks) > 1:
        # a later chunk's implicit module is located at its marker by mlir-opt (left alone)
        chunks = [MODULE] * len(chunks)
    path = tmp_path / "p.mlir"
    path.write_text("// -----\n".join(chunks))
    args = [*pipeline, *split, *flags]
    ours = opt(path, *args)
    theirs = iree_opt(path, *args)
    assert ours.code == 0, ours.err
    assert ours.out == theirs.stdout
