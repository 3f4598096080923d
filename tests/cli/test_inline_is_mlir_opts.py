"""`inline` in a pipeline inlines as MLIR's inliner does: the module iree-opt (a real mlir-opt)
prints for the same random call graph, functions that call themselves and unused private
functions included. jaxlib
registers the pass but not func's inliner interface, so jaxlib's own `inline` inlined nothing."""

from __future__ import annotations

from pathlib import Path

from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

T = "tensor<4xf32>"


@st.composite
def call_graphs(draw: st.DrawFn) -> str:
    """Functions @f0 (public) to @fN, public or private, each a chain of adds, multiplies,
    constants and calls of later functions or of itself; private ones may be called by none,
    or only by another unused one."""
    count = draw(st.integers(1, 5))
    functions = []
    for index in range(count):
        private = index > 0 and draw(st.booleans())
        lines = []
        value = "%x"
        for step in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["add", "multiply", "constant", "call"]))
            name = f"%v{step}"
            if kind == "call":
                # a later function, or (rarely) itself: neither inliner inlines a call of a
                # function that calls itself; longer cycles MLIR's partly unrolls (left alone)
                callee = draw(st.integers(index, count - 1))
                if callee == index and draw(st.integers(0, 3)):
                    continue
                lines.append(f"    {name} = call @f{callee}({value}) : ({T}) -> {T}")
            elif kind == "constant":
                number = draw(st.sampled_from(["1.0", "2.0", "0.0"]))
                lines.append(f"    %c{step} = stablehlo.constant dense<{number}> : {T}")
                lines.append(f"    {name} = stablehlo.add {value}, %c{step} : {T}")
            elif kind in ("add", "multiply"):
                lines.append(f"    {name} = stablehlo.{kind} {value}, %x : {T}")
            else:
                continue
            value = name
        visibility = "private " if private else ""
        functions.append(
            f"  func.func {visibility}@f{index}(%x: {T}) -> {T} {{\n"
            + "".join(f"{line}\n" for line in lines)
            + f"    return {value} : {T}\n  }}\n"
        )
    return "module {\n" + "".join(functions) + "}\n"


NESTED = (  # @f0 calls @f1 twice, which calls @f2: MLIR stacks the call sites of both levels
    "module {\n"
    f"  func.func @f0(%x: {T}) -> {T} {{\n"
    f"    %v0 = call @f1(%x) : ({T}) -> {T}\n    %v1 = call @f1(%v0) : ({T}) -> {T}\n"
    f"    return %v1 : {T}\n  }}\n"
    f"  func.func private @f1(%x: {T}) -> {T} {{\n"
    f"    %v0 = stablehlo.multiply %x, %x : {T}\n    %v1 = call @f2(%v0) : ({T}) -> {T}\n"
    f"    return %v1 : {T}\n  }}\n"
    f"  func.func private @f2(%x: {T}) -> {T} {{\n"
    f"    %v0 = stablehlo.add %x, %x : {T}\n    return %v0 : {T}\n  }}\n"
    "}\n"
)


# a callee whose two equal constants canonicalize merges into one at no location: inlined, it is
# at callsite(unknown at the call) (it was at ""(the call), as jax's inliner leaves it)
MERGED_CONSTANTS = (
    "module {\n"
    f"  func.func @f0(%x: {T}) -> {T} {{\n"
    f"    %v1 = call @f2(%x) : ({T}) -> {T}\n    return %v1 : {T}\n  }}\n"
    f"  func.func @f2(%x: {T}) -> {T} {{\n"
    f"    %c0 = stablehlo.constant dense<1.0> : {T}\n    %v0 = stablehlo.add %x, %c0 : {T}\n"
    f"    %c1 = stablehlo.constant dense<1.0> : {T}\n    %v1 = stablehlo.add %v0, %c1 : {T}\n"
    f"    return %v1 : {T}\n  }}\n"
    "}\n"
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(module=NESTED, flags=["--inline", "--mlir-print-debuginfo"])
@example(module=MERGED_CONSTANTS, flags=["--inline", "--mlir-print-debuginfo"])
@given(
    module=call_graphs(),
    flags=st.sampled_from(
        [
            ["--inline"],
            ["--inline", "--cse"],
            ["--inline=default-pipeline="],
            ["--symbol-dce", "--inline", "--canonicalize"],
            ["--inline", "--mlir-print-debuginfo"],  # where each inlined op is: MLIR's stacks
        ]
    ),
)
def test_inline_prints_what_iree_opt_prints(
    opt: Runner, tmp_path: Path, module: str, flags: list[str]
) -> None:
    path = tmp_path / "calls.mlir"
    path.write_text(module)
    ours = opt(path, *flags)
    theirs = iree_opt(path, *flags)
    assert ours.code == 0, ours.err
    assert ours.out == theirs.stdout


def test_a_threshold_it_does_not_have_is_refused(opt: Runner, tmp_path: Path) -> None:
    path = tmp_path / "calls.mlir"
    path.write_text(f"func.func @f(%x: {T}) -> {T} {{\n  return %x : {T}\n}}\n")
    result = opt(path, "-p", "inline{inlining-threshold=3}")
    assert result.code == 2
    assert (
        result.err == "error: inline: inlining-threshold=3 is not supported (only '4294967295')\n"
    )
