"""Bad input -> what you get: one table of cases, checked here and printed for the README.

Each case is (what, command, files, expected exit, message fragment). `files` maps a file name to
its text or bytes; `{name}` in the command is that file's path. tools/bad_input_table.py runs
these same cases and prints the markdown table (docs/bad_input.md).
"""
# ruff: noqa: E501  (MLIR fixtures are one op per line)

from __future__ import annotations

import contextlib
import io
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]

from convcanon.cli import main, opt_main

from . import sources
from .test_npz_checked_before_inflating import ADD, HUGE_FLOATS, npz_with_huge_member, zip_member


def _npz(**arrays: object) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # pyright: ignore[reportArgumentType]
    return buffer.getvalue()


def _pickled_npz() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, arg0=np.array([{"evil": 1}], dtype=object))
    return buffer.getvalue()


def _zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():  # a fixed date: the same members, the same bytes
            archive.writestr(zip_member(name), data)
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


HLO_PARAMETER_7 = (
    "HloModule m\n\nENTRY main {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(7)\n"
    "  ROOT c = f32[2] add(a, b)\n}\n"
)
HLO_TUPLE_ELEMENT_OF_ARRAY = (
    "HloModule m\n\nENTRY main {\n  a = f32[2] parameter(0)\n"
    "  ROOT c = f32[2] get-tuple-element(a), index=0\n}\n"
)
IDENTITY = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"


def _conv_hlo(window: str, dn: str = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", groups: int = 1,
              out: str = "1x6x6x4") -> str:  # fmt: skip
    return (
        f"func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x4xf32>) -> tensor<{out}xf32> {{\n"
        f"  %0 = stablehlo.convolution(%x, %w) dim_numbers = {dn}, window = {{{window}}} "
        f"{{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}} : "
        f"(tensor<1x8x8x4xf32>, tensor<3x3x4x4xf32>) -> tensor<{out}xf32>\n"
        f"  return %0 : tensor<{out}xf32>\n}}\n"
    )


def _conv_mx(stride: str = "1", dilation: str = "1", group: str = "1") -> str:
    x, w, y = "<1x4x6x6xf32, 144x36x6x1>", "<4x4x3x3xf32, 36x9x3x1>", "<1x4x4x4xf32, 64x16x4x1>"
    return (
        f"func.func @main(%x: !migraphx.shaped{x}, %w: !migraphx.shaped{w}) -> "
        f"!migraphx.shaped{y} {{\n"
        f"  %0 = migraphx.convolution %x, %w {{dilation = [{dilation}, 1], group = {group} : i64, "
        f"padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [{stride}, 1]}} : {x}, {w} -> {y}\n"
        f"  func.return %0 : !migraphx.shaped{y}\n}}\n"
    )


def _shaped_arg(lens: str, strides: str) -> str:
    t = f"!migraphx.shaped<{lens}xf32, {strides}>"
    return f"func.func @main(%x: {t}) -> {t} {{\n  func.return %x : {t}\n}}\n"


_MX_CONVERT_TO_UI4 = (
    "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xui4, 1> {\n"
    "  %0 = migraphx.convert %x : <2xf32, 1> to <2xui4, 1>\n"
    "  return %0 : !migraphx.shaped<2xui4, 1>\n}\n"
)
_MX_TRANSPOSE_KEEPS_STRIDES = (
    "func.func @main(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<3x2xf32, 2x1> {\n"
    "  %0 = migraphx.transpose %a {permutation = [1, 0]} : <2x3xf32, 3x1> -> <3x2xf32, 3x1>\n"
    "  %1 = migraphx.neg %0 : <3x2xf32, 3x1> -> <3x2xf32, 2x1>\n"
    "  return %1 : !migraphx.shaped<3x2xf32, 2x1>\n}\n"
)


def _program_conv(fields: str) -> str:
    return (
        "x = @param:x -> float_type, {1, 4, 6, 6}, {144, 36, 6, 1}\n"
        "w = @param:w -> float_type, {4, 4, 3, 3}, {36, 9, 3, 1}\n"
        f"@2 = convolution[{fields},padding_mode=0](x,w) -> float_type, {{1, 4, 4, 4}}, "
        "{64, 16, 4, 1}\n@3 = @return(@2)\n"
    )


def _program_pool(fields: str, out: str = "{1, 4, 3, 3}") -> str:
    return (
        "x = @param:x -> float_type, {1, 4, 6, 6}, {144, 1, 24, 4}\n"
        f"@1 = pooling[{fields}](x) -> float_type, {out}, {{36, 1, 12, 4}}\n@2 = @return(@1)\n"
    )


def _program_two(line: str) -> str:
    return (
        "x = @param:x -> float_type, {2, 3}, {3, 1}\ny = @param:y -> float_type, {2, 4}, {1, 2}\n"
        f"@2 = {line}\n@3 = @return(@2)\n"
    )


def _program_bn(fields: str) -> str:
    return (
        "x = @param:x -> float_type, {1, 3, 2, 2}, {12, 4, 2, 1}\n"
        "s = @param:s -> float_type, {3}, {1}\nm = @param:m -> float_type, {3}, {1}\n"
        f"@3 = batch_norm_inference[{fields}](x,s,s,m,m) -> float_type, {{1, 3, 2, 2}}, "
        "{12, 4, 2, 1}\n@4 = @return(@3)\n"
    )


HUGE_PAD_MX = (
    "func.func @main(%x: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x4xf32, 4x1> {\n"
    '  %0 = migraphx.pad %x {mode = "reflect", pads = [0, 0, 0, 1099511627773], value = 0.0 : f32} : <2x3xf32, 3x1> -> <2x1099511627776xf32, 1099511627776x1>\n'
    "  %1 = migraphx.slice %0 {axes = [1], ends = [4], starts = [0]} : <2x1099511627776xf32, 1099511627776x1> -> <2x4xf32, 1099511627776x1>\n"
    "  %2 = migraphx.contiguous %1 : <2x4xf32, 1099511627776x1> -> <2x4xf32, 4x1>\n"
    "  return %2 : !migraphx.shaped<2x4xf32, 4x1>\n}\n"
)
LPNORM_POOL_MX = (
    "func.func @main(%x: !migraphx.shaped<1x4x6x6xf32, 144x1x24x4>) -> !migraphx.shaped<1x4x3x3xf32, 36x1x12x4> {\n"
    '  %0 = migraphx.pooling %x {length = [2, 2], lp_order = 2 : i64, mode = "lpnorm", padding = [0, 0], stride = [2, 2]} : <1x4x6x6xf32, 144x1x24x4> -> <1x4x3x3xf32, 36x1x12x4>\n'
    "  return %0 : !migraphx.shaped<1x4x3x3xf32, 36x1x12x4>\n}\n"
)


def _tosa_edit(old: str, new: str) -> Callable[[], str]:
    """The fixture program lowered to TOSA, with `old` (which must occur) edited to `new`."""

    def make() -> str:
        text = sources.tosa_text()
        assert old in text, old
        return text.replace(old, new, 1)

    return make


def _add_chain(ops: int) -> str:
    """@main as `ops` adds, each of the one before: a graph as long as it is big."""
    names = ["%arg0", *(f"%{i}" for i in range(ops))]
    pairs = zip(names, names[1:], strict=False)
    adds = [f"  {b} = stablehlo.add {a}, {a} : tensor<4xf32>\n" for a, b in pairs]
    head = "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    return head + "".join(adds) + f"  return {names[-1]} : tensor<4xf32>\n}}\n"


HUGE = "99999999999x4"
CANON = "stablehlo-canonicalize-conv{gate=general}"


@dataclass(frozen=True)
class Case:
    what: str
    command: list[str]  # argv after the program name; {name} = path of files[name]
    files: dict[str, Callable[[], str | bytes]] = field(default_factory=dict)
    exit: int = 1
    fragment: str = ""
    program: str = "convcanon"  # or convcanon-opt
    stdout: str = "captured"  # or "a pipe whose reader is gone" (`| head -1` after its line)


def _f(value: str | bytes) -> Callable[[], str | bytes]:
    return lambda: value


MX = {"m.mlir": sources.migraphx_text, "in.npz": sources.migraphx_inputs}
CASES: list[Case] = [
    # -- readers: damaged or foreign files
    Case("missing file", ["{m.mlir}"], {}, 1, "no such file", "convcanon-opt"),
    Case(
        "binary junk",
        ["{m.mlir}"],
        {"m.mlir": _f(b"\x7fELF\x02\x01\xff\xfe")},
        1,
        "not UTF-8 text",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "truncated StableHLO",
        ["{m.mlir}"],
        {"m.mlir": lambda: sources.STABLEHLO.read_text()[:700]},
        1,
        "error: expected",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "unknown op",
        ["{m.mlir}"],
        {"m.mlir": _f("func.func @f() {\n  stablehlo.bogus\n  return\n}\n")},
        1,
        "m.mlir:2:3: error:",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "brackets nested 100k deep (StableHLO)",
        ["{m.mlir}"],
        {"m.mlir": _f("func.func @f() {\n" + "[" * 100000 + "\n}\n")},
        1,
        "nests deeper than 256 levels",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "brackets nested 100k deep (migraphx)",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {"m.mlir": _f("func.func @f() {\n %0 = migraphx.literal(dense<" + "[" * 100000 + "\n}\n")},
        1,
        "nests deeper than 256 levels",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "a type nested 200k deep (`tuple<tuple<...>>`, run)",
        ["run", "{m.mlir}"],
        {
            "m.mlir": _f(
                "func.func @main(%a: "
                + "tuple<" * 200000
                + "tensor<2xf32>"
                + ">" * 200000
                + ") {\n  return\n}\n"
            )
        },
        1,
        "m.mlir:1:1200027: error: input nests deeper than 256 levels of brackets",
    ),  # fmt: skip
    Case(
        "a type nested 200k deep (`tuple<tuple<...>>`, migraphx-to-tosa)",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {
            "m.mlir": _f(
                "func.func @main(%a: "
                + "tuple<" * 200000
                + "tensor<2xf32>"
                + ">" * 200000
                + ") -> () {\n  func.return\n}\n"
            )
        },
        1,
        "nests deeper than 256 levels",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "unterminated string (xDSL regex backtracking)",
        ["{m.mlir}"],
        {"m.mlir": lambda: sources.tosa_text().replace('"tosa.reshape"', '"tosa.reshape', 1)},
        1,
        "before closing string literal",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "attribute out of range while parsing",
        ["{m.mlir}"],
        {"m.mlir": lambda: sources.migraphx_text().replace("group = 2 : i64", "group = 2 : i1")},
        1,
        "out of range for type i1",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "unknown pass",
        ["{m.mlir}", "-p", "no-such-pass"],
        {"m.mlir": sources.migraphx_text},
        2,
        "no-such-pass",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "-o is the input",
        ["{m.mlir}", "-o", "{m.mlir}"],
        {"m.mlir": sources.migraphx_text},
        2,
        "is the input file",
        "convcanon-opt",
    ),  # fmt: skip
    # -- limits
    Case(
        "splat constant tensor<99999999999x4xf32> (run)",
        ["run", "{m.mlir}"],
        {
            "m.mlir": _f(
                f"func.func @main() -> tensor<{HUGE}xf32> {{\n  %0 = stablehlo.constant "
                f"dense<1.0> : tensor<{HUGE}xf32>\n  return %0 : tensor<{HUGE}xf32>\n}}\n"
            )
        },
        1,
        "over the memory limit",
    ),  # fmt: skip
    Case(
        "huge argument (verify's random inputs)",
        ["verify", "{m.mlir}", "{m.mlir}"],
        {
            "m.mlir": _f(
                f"func.func @main(%a: tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32> {{\n"
                f"  return %a : tensor<{HUGE}xf32>\n}}\n"
            )
        },
        1,
        "over the memory limit",
    ),  # fmt: skip
    Case(
        "huge argument, migraphx (verify's random inputs)",
        ["verify", "{m.mlir}", "{m.mlir}"],
        {
            "m.mlir": _f(
                f"func.func @main(%x: !migraphx.shaped<{HUGE}xf32, 4x1>) -> "
                f"!migraphx.shaped<{HUGE}xf32, 4x1> {{\n"
                f"  func.return %x : !migraphx.shaped<{HUGE}xf32, 4x1>\n}}\n"
            )
        },
        1,
        "m.mlir:1:1: error: @main argument 0 (flat buffer float32[399999999996]) needs",
    ),  # fmt: skip
    Case(
        "splat of 4e11 elements (migraphx)",
        ["run", "{m.mlir}"],
        {
            "m.mlir": _f(
                f"func.func @main() -> !migraphx.shaped<{HUGE}xf32, 4x1> {{\n  %0 = "
                f"migraphx.literal(dense<1.0> : tensor<{HUGE}xf32>) : <{HUGE}xf32, 4x1>\n"
                f"  func.return %0 : !migraphx.shaped<{HUGE}xf32, 4x1>\n}}\n"
            )
        },
        1,
        "dense splat of 399999999996 elements is over the limit",
    ),  # fmt: skip
    Case(
        "literal of 4e8 elements (program text)",
        ["import-migraphx", "{p.txt}"],
        {
            "p.txt": _f(
                "x = @param:x -> float_type, {4}, {1}\n@1 = @literal{1} -> float_type, "
                "{99999999, 4}, {0, 0}\n@2 = @return(@1)\n"
            )
        },
        1,
        "is over the limit of 4194304",
    ),  # fmt: skip
    Case(
        "conv im2col over --memory-limit (TOSA)",
        ["run", "{t.mlir}", "--inputs", "{in.npz}", "--memory-limit", "600"],
        {"t.mlir": sources.tosa_text, "in.npz": sources.migraphx_inputs},
        1,
        "im2col buffer needs",
    ),  # fmt: skip
    Case(
        "bad --memory-limit",
        ["run", "{m.mlir}", "--memory-limit", "lots"],
        MX,
        2,
        "bad memory limit",
    ),  # fmt: skip
    Case(
        "run --output is the module",
        ["run", "{m.mlir}", "--inputs", "{in.npz}", "--output", "{m.mlir}"],
        MX,
        2,
        "is the input file",
    ),  # fmt: skip
    Case(
        "graph -o is the module",
        ["graph", "{m.mlir}", "--format", "dot", "-o", "{m.mlir}"],
        MX,
        2,
        "is the input file",
    ),  # fmt: skip
    Case(
        "import-migraphx -o is the program",
        ["import-migraphx", "{p.txt}", "-o", "{p.txt}"],
        {"p.txt": lambda: sources.PROGRAM.read_text()},
        2,
        "is the input file",
    ),  # fmt: skip
    # -- bounded readers and the one output writer
    Case(
        "input never ends (/dev/zero)",
        ["/dev/zero"],
        {},
        1,
        "is a character device, not a file",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "npz inputs never end (/dev/zero)",
        ["run", "{m.mlir}", "--inputs", "/dev/zero"],
        {"m.mlir": _f(IDENTITY)},
        1,
        "is a character device, not a file",
    ),  # fmt: skip
    Case(
        "input over --max-input-size",
        ["{m.mlir}", "--max-input-size", "50"],
        {"m.mlir": _f(IDENTITY)},
        1,
        "over the input size limit of 50 bytes",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "bad --max-input-size",
        ["{m.mlir}", "--max-input-size", "huge"],
        {"m.mlir": _f(IDENTITY)},
        2,
        "bad input size limit",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "-o in a missing directory",
        ["{m.mlir}", "-o", "{m.mlir}.d/out.mlir"],
        {"m.mlir": _f(IDENTITY)},
        1,
        "no such directory",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "-o is a directory",
        ["{m.mlir}", "-o", "/tmp"],
        {"m.mlir": _f(IDENTITY)},
        1,
        "/tmp: error: is a directory",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "-o ''",
        ["{m.mlir}", "-o", ""],
        {"m.mlir": _f(IDENTITY)},
        1,
        "'': error: the output path is empty",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "-o /dev/full",
        ["{m.mlir}", "-o", "/dev/full"],
        {"m.mlir": _f(IDENTITY)},
        1,
        "/dev/full: error: cannot write the output: no space left on the device",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "--input-hlo: parameter(7) of 2 (XLA aborts)",
        ["--input-hlo", "{m.hlo}"],
        {"m.hlo": _f(HLO_PARAMETER_7)},
        1,
        "XLA's HLO reader was killed by SIGABRT: Check failed: param_no >= 0",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "--input-hlo: get-tuple-element of an array (LLVM ERROR)",
        ["--input-hlo", "{m.hlo}"],
        {"m.hlo": _f(HLO_TUPLE_ELEMENT_OF_ARRAY)},
        1,
        "LLVM ERROR: Failed to infer result type(s).",
        "convcanon-opt",
    ),  # fmt: skip
    # -- npz inputs
    Case(
        "inputs not an npz",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {"m.mlir": sources.migraphx_text, "in.npz": _f(b"hello")},
        1,
        "not an .npz archive",
    ),  # fmt: skip
    Case(
        "truncated npz",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {"m.mlir": sources.migraphx_text, "in.npz": lambda: sources.migraphx_inputs()[:300]},
        1,
        "cannot read inputs as .npz",
    ),  # fmt: skip
    Case(
        "npz with a pickled object array",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {"m.mlir": sources.migraphx_text, "in.npz": _pickled_npz},
        1,
        "allow_pickle=False",
    ),  # fmt: skip
    Case(
        "npz that inflates past --max-input-size (zip bomb)",
        ["run", "{m.mlir}", "--inputs", "{in.npz}", "--max-input-size", "1MiB"],
        {
            "m.mlir": _f(IDENTITY),
            "in.npz": lambda: _zip_of({"arg0.npy": _npy(np.zeros(1 << 22, np.float32))}),
        },
        1,
        "refused before inflating",
    ),  # fmt: skip
    Case(
        "npz with a truncated .npy header",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(IDENTITY),
            "in.npz": lambda: _zip_of({"arg0.npy": _npy(np.zeros(2, np.float32))[:40]}),
        },
        1,
        "member 'arg0.npy' has a bad .npy header",
    ),  # fmt: skip
    Case(
        "npz member named ../arg0.npy",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(IDENTITY),
            "in.npz": lambda: _zip_of({"../arg0.npy": _npy(np.zeros(2, np.float32))}),
        },
        1,
        "an odd member name '../arg0.npy'",
    ),  # fmt: skip
    Case(
        ".npy header claims more data than the member holds",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(IDENTITY),
            "in.npz": lambda: _zip_of(
                {"arg0.npy": _npy(np.zeros(2, np.float32)).replace(b"(2,)", b"(9,)")}
            ),
        },
        1,
        "its .npy header describes 36 bytes of data but it holds 8",
    ),  # fmt: skip
    Case(
        "npz with wrong names",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": sources.migraphx_text,
            "in.npz": lambda: _npz(x=np.zeros(144, np.float32), y=np.zeros(108, np.float32)),
        },
        1,
        "missing arg0, arg1",
    ),  # fmt: skip
    Case(
        "npz with a third member, 400 MB inflated (names checked before inflating)",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(ADD),
            "in.npz": lambda: npz_with_huge_member(
                {"arg0": np.ones(2, np.float32), "arg1": np.ones(2, np.float32)},
                "junk",
                HUGE_FLOATS,
            ),
        },
        1,
        "@main takes 2 argument(s); unexpected input(s) junk",
    ),  # fmt: skip
    Case(
        "npz with a wrong shape",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": sources.migraphx_text,
            "in.npz": lambda: _npz(arg0=np.zeros(143, np.float32), arg1=np.zeros(108, np.float32)),
        },
        1,
        "input arg0 is float32[143]",
    ),  # fmt: skip
    Case(
        "npz with a wrong dtype (StableHLO)",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(
                "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                "  return %a : tensor<2xf32>\n}\n"
            ),
            "in.npz": lambda: _npz(arg0=np.zeros(2, np.int64)),
        },
        1,
        "input arg0 is int64[2] but @main expects f32[2]",
    ),  # fmt: skip
    # -- semantic hazards, StableHLO (the verifier catches them at parse time)
    Case(
        "conv stride 0",
        ["{m.mlir}", "-p", CANON],
        {"m.mlir": _f(_conv_hlo("stride = [0, 1]"))},
        1,
        "positive stride",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "conv rhs dilation 0",
        ["run", "{m.mlir}"],
        {"m.mlir": _f(_conv_hlo("rhs_dilate = [0, 1]"))},
        1,
        "positive window dilation",
    ),  # fmt: skip
    Case(
        "conv lhs dilation 0",
        ["explain", "{m.mlir}"],
        {"m.mlir": _f(_conv_hlo("lhs_dilate = [0, 1]"))},
        1,
        "positive base dilation",
    ),  # fmt: skip
    Case(
        "dimension numbers repeat a dim",
        ["{m.mlir}", "-p", CANON],
        {"m.mlir": _f(_conv_hlo("stride = [1, 1]", dn="[b, 0, 0, f]x[0, 1, i, o]->[b, 0, 1, f]"))},
        1,
        "Duplicate entries for spatial dimension 0",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "feature groups do not divide the features",
        ["run", "{m.mlir}"],
        {"m.mlir": _f(_conv_hlo("stride = [1, 1]", groups=3))},
        1,
        "multiple of feature_group_count",
    ),  # fmt: skip
    Case(
        "padding crops past the input (declared result kept)",
        ["{m.mlir}", "-p", CANON],
        {"m.mlir": _f(_conv_hlo("pad = [[-9, 0], [0, 0]]", out="1x1x6x4"))},
        1,
        "inferred shape '[1, 0, 6, 4]' is incompatible",
        "convcanon-opt",
    ),  # fmt: skip
    # -- semantic hazards, migraphx
    Case(
        "migraphx conv stride 0",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {"m.mlir": _f(_conv_mx(stride="0"))},
        1,
        "stride and dilation must be >= 1",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "migraphx conv dilation 0",
        ["run", "{m.mlir}"],
        {"m.mlir": _f(_conv_mx(dilation="0"))},
        1,
        "stride and dilation must be >= 1",
    ),  # fmt: skip
    Case(
        "migraphx group does not divide channels",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {"m.mlir": _f(_conv_mx(group="3"))},
        1,
        "with group=3: input has 4 channels",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "program conv stride 0",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_conv("padding={0, 0, 0, 0},stride={0, 1},dilation={1, 1},group=1"))},
        1,
        "p.txt:3:6: error: migraphx.convolution: convolution stride and dilation must be >= 1",
    ),  # fmt: skip
    Case(
        "program pooling stride 0",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_pool("mode=max,padding={0, 0},stride={0, 2},lengths={2, 2}"))},
        1,
        "p.txt:2:6: error: migraphx.pooling: pooling lengths, stride and dilations must be >= 1",
    ),  # fmt: skip
    Case(
        "program pooling lengths 0",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_pool("mode=average,padding={0, 0},stride={2, 2},lengths={2, 0}"))},
        1,
        "p.txt:2:6: error: migraphx.pooling: pooling lengths, stride and dilations must be >= 1",
    ),  # fmt: skip
    Case(
        "program pooling window larger than the padded input",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_pool("mode=max,padding={0, 1},stride={1, 1},lengths={7, 2}"))},
        1,
        "p.txt:2:6: error: migraphx.pooling: pooling window 7 is larger than the padded input 6",
    ),  # fmt: skip
    Case(
        "program pooling with three paddings for two spatial dims",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_pool("mode=max,padding={0, 0, 0},stride={2, 2},lengths={2, 2}"))},
        1,
        "p.txt:2:6: error: migraphx.pooling: pooling padding needs 2 or 4 values, got 3",
    ),  # fmt: skip
    Case(
        "program pooling mode unknown",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_pool("mode=sum,padding={0, 0},stride={2, 2},lengths={2, 2}"))},
        1,
        "p.txt:2:14: error: field `mode` of `pooling` must be one of average (0), max (1), lpnorm (2), got `sum`",
    ),  # fmt: skip
    Case(
        "lpnorm pooling lowered to TOSA",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {"m.mlir": _f(LPNORM_POOL_MX)},
        1,
        "m.mlir:2:3: error: 'migraphx.pooling' has no exact TOSA lowering: lpnorm pooling (TOSA pools by max or average only)",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "program concat axis out of range",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_two("concat[axis=2](x,y) -> float_type, {2, 7}, {7, 1}"))},
        1,
        "p.txt:3:6: error: migraphx.concat: axis 2 is out of bounds for concat's inputs with rank 2 (valid range is [-2, 1])",
    ),  # fmt: skip
    Case(
        "program concat of no input",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_two("concat[axis=0]() -> float_type, {2, 3}, {3, 1}"))},
        1,
        "p.txt:3:6: error: migraphx.concat: concat needs at least one input",
    ),  # fmt: skip
    Case(
        "program pad mode 7",
        ["import-migraphx", "{p.txt}"],
        {
            "p.txt": _f(
                _program_two(
                    "pad[mode=7,pads={0, 0, 0, 0},value=0](x) -> float_type, {2, 3}, {3, 1}"
                )
            )
        },
        1,
        "p.txt:3:10: error: field `mode` of `pad` must be one of constant (0), reflect (1), edge (2), got `7`",
    ),  # fmt: skip
    Case(
        "program pad value past float's range",
        ["import-migraphx", "{p.txt}"],
        {
            "p.txt": _f(
                _program_two(
                    "pad[mode=0,pads={0, 0, 0, 1},value=1e39](x) -> float_type, {2, 4}, {4, 1}"
                )
            )
        },
        1,
        "p.txt:3:35: error: field `value` of `pad`: 1e+39 is beyond float's range (MIGraphX holds it as a 32-bit float)",
    ),  # fmt: skip
    Case(
        "program batch_norm_inference bn_mode 2",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_bn("epsilon=1e-05,momentum=0.9,bn_mode=2"))},
        1,
        "p.txt:4:6: error: migraphx.batch_norm_inference: batch_norm_inference bn_mode must be per_activation (0), spatial (1), got 2",
    ),  # fmt: skip
    Case(
        "a pad to 2^41 elements (run)",
        ["run", "{m.mlir}"],
        {"m.mlir": _f(HUGE_PAD_MX)},
        1,
        "m.mlir:2:3: error: 'migraphx.pad' result of shape [2, 1099511627776] needs 8796093022208 bytes, over the memory limit of 4294967296",
    ),  # fmt: skip
    Case(
        "program group does not divide channels",
        ["import-migraphx", "{p.txt}"],
        {"p.txt": _f(_program_conv("padding={0, 0, 0, 0},stride={1, 1},dilation={1, 1},group=3"))},
        1,
        "convolution with group=3",
    ),  # fmt: skip
    Case(
        "a result whose elements overlap <2x2xf32, 1x1> (an ambiguous write)",
        ["{m.mlir}", "-p", "migraphx-to-tosa"],
        {"m.mlir": _f(_shaped_arg("2x2", "1x1"))},
        1,
        "m.mlir:2:3: error: 'func.return' writes a result of overlapping layout",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "a result whose elements overlap (run)",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {"m.mlir": _f(_shaped_arg("2x2", "1x1")), "in.npz": _f(_npz(arg0=np.zeros(3, np.float32)))},
        1,
        "cannot write to an overlapping layout (elements [0, 1] and [1, 0] share position 1)",
    ),  # fmt: skip
    Case(
        "layout that does not tile memory <2x3xf32, 4x3>, --strict-strides",
        ["run", "{m.mlir}", "--strict-strides"],
        {"m.mlir": _f(_shaped_arg("2x3", "4x3"))},
        1,
        "m.mlir:1:1: error: !migraphx.shaped layout is not representable: the smallest non-zero stride is 3",
    ),  # fmt: skip
    Case(
        "program shape strides overlap, --strict-strides",
        ["import-migraphx", "{p.txt}", "--strict-strides"],
        {"p.txt": _f("x = @param:x -> float_type, {2, 2}, {1, 1}\n@1 = @return(x)\n")},
        1,
        "p.txt:1:43: error: shape [2, 2], [1, 1] is not representable: dims 0 and 1 overlap in memory",
    ),  # fmt: skip
    Case(
        "float-to-integer convert of a value outside the range (undefined in MIGraphX)",
        ["run", "{m.mlir}", "--inputs", "{in.npz}"],
        {
            "m.mlir": _f(_MX_CONVERT_TO_UI4),
            "in.npz": _f(_npz(arg0=np.array([3.0, -3.0], np.float32))),
        },
        1,
        "m.mlir:2:3: error: 'migraphx.convert' cannot be evaluated: a value converts outside uint4's range [0, 15] (undefined in MIGraphX, a C++ conversion of an out-of-range float): -3.0",
    ),  # fmt: skip
    Case(
        "transpose declared with its input's strides, --strict-strides",
        ["run", "{m.mlir}", "--strict-strides"],
        {"m.mlir": _f(_MX_TRANSPOSE_KEEPS_STRIDES)},
        1,
        "m.mlir:2:3: error: %0 is declared with strides 3x1, but migraphx.transpose computes 1x3 (strict-strides)",
    ),  # fmt: skip
    # -- inconsistent TOSA (a hand-edited lowering): the op verifiers reject it at parse time
    *[
        Case(what, ["{t.mlir}"], {"t.mlir": _tosa_edit(old, new)}, 1, fragment, "convcanon-opt")
        for what, old, new, fragment in [
            (
                "TOSA conv2d result disagrees with its stride",
                "stride = array<i64: 2, 2>",
                "stride = array<i64: 1, 2>",
                "t.mlir:16:5: error: 'tosa.conv2d' op result shape [1, 3, 2, 3] does not match the inferred [1, 5, 2, 3]",
            ),
            (
                "TOSA transpose perms not a permutation",
                "perms = array<i32: 0, 2, 3, 1>",
                "perms = array<i32: 0, 2, 3, 3>",
                "t.mlir:7:5: error: 'tosa.transpose' op permutation [0, 2, 3, 3] is not a permutation",
            ),
            (
                "TOSA reshape element counts differ",
                "dense<[1, 6, 6, 4]>",
                "dense<[1, 6, 6, 5]>",
                "t.mlir:4:5: error: 'tosa.reshape' op reshape from [144] (144 elements) to [1, 6, 6, 5]",
            ),
            (
                "TOSA slice out of bounds",
                "dense<[0, 0, 0, 2]>",
                "dense<[0, 0, 0, 3]>",
                "t.mlir:18:5: error: 'tosa.slice' op slice start [0, 0, 0, 3] size [1, 6, 5, 2] is out of bounds",
            ),
            (
                "TOSA concat result disagrees with its axis",
                "axis = 3 : i32",
                "axis = 2 : i32",
                "t.mlir:22:5: error: 'tosa.concat' op result shape [1, 3, 2, 6] does not match the inferred [1, 3, 4, 3]",
            ),
        ]
    ],  # fmt: skip
    # -- graph: Graphviz is bounded (a 3,000-op chain took 3.9 GB before it died)
    Case(
        "graph of a 3,000-op chain (rendered)",
        ["graph", "{m.mlir}", "-o", "{g.svg}"],
        {"m.mlir": lambda: _add_chain(3000)},
        1,
        "error: the graph has 3002 nodes (3002 input), over the limit of 1500 for rendering",
    ),
    Case(
        "graph format unknown from -o",
        ["graph", "{m.mlir}", "-o", "{g.pdf}"],
        {"m.mlir": lambda: _add_chain(2)},
        2,
        "error: cannot tell the graph format from",
    ),
    Case(
        "graph --max-nodes 0",
        ["graph", "{m.mlir}", "--max-nodes", "0", "-o", "{g.svg}"],
        {"m.mlir": lambda: _add_chain(2)},
        2,
        "error: --max-nodes must be at least 1, not 0",
    ),
]


# -- no silent no-ops, and XLA HLO given as MLIR
CASES += [
    Case(
        "MHLO pass on a StableHLO module",
        ["{m.mlir}", "-p", "canonicalize-conv"],
        {"m.mlir": lambda: sources.STABLEHLO.read_text()},
        1,
        "m.mlir:3:10: error: canonicalize-conv found no mhlo.convolution but 6 stablehlo.convolution ops: use stablehlo-canonicalize-conv",
        "convcanon-opt",
    ),
    Case(
        "StableHLO pass on an MHLO module",
        ["{m.mlir}", "--stablehlo-canonicalize-conv"],
        {"m.mlir": sources.mhlo_text},
        1,
        "use canonicalize-conv for mhlo modules",
        "convcanon-opt",
    ),
    Case(
        "explain with the other dialect's pass",
        ["explain", "{m.mlir}", "-p", "canonicalize-conv"],
        {"m.mlir": lambda: sources.STABLEHLO.read_text()},
        1,
        "use stablehlo-canonicalize-conv for stablehlo modules",
    ),
    Case(
        "XLA HLO text without --input-hlo",
        ["{m.hlo}"],
        {"m.hlo": _f("HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n")},
        1,
        "m.hlo:1:1: error: this is XLA HLO text, not MLIR: convert it to StableHLO with --input-hlo",
        "convcanon-opt",
    ),
    Case(
        "HloModuleProto without --input-hlo",
        ["explain", "{m.pb}"],
        {"m.pb": _f(b"\n\x05jit_f\x1a\xff\xfe")},
        1,
        "if it is a serialized XLA HloModuleProto (.pb), convert it with --input-hlo",
    ),
    # -- conv canonicalization options and element types
    Case(
        "conv padding of f8E8M0FNU (no zero)",
        ["{m.mlir}", "-p", CANON],
        {
            "m.mlir": _f(
                _conv_hlo("pad = [[1, 1], [1, 1]]", out="1x8x8x4").replace("xf32>", "xf8E8M0FNU>")
            )
        },
        1,
        "error: EUET001: element type f8E8M0FNU of the convolution's lhs cannot be zero-padded",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "max-phases not an integer",
        ["{m.mlir}", "-p", "stablehlo-canonicalize-conv{max-phases=many}"],
        {"m.mlir": _f(_conv_hlo("stride = [2, 2]", out="1x3x3x4"))},
        2,
        "option 'max-phases' must be an integer >= 1; got 'many'",
        "convcanon-opt",
    ),  # fmt: skip
    Case(
        "lhs-dilation mode unknown",
        ["{m.mlir}", "-p", "stablehlo-canonicalize-conv{lhs-dilation=fold}"],
        {"m.mlir": _f(_conv_hlo("stride = [2, 2]", out="1x3x3x4"))},
        2,
        "option 'lhs-dilation' must be one of polyphase, interior-pad",
        "convcanon-opt",
    ),  # fmt: skip
]

# -- option values out of their range: pass options, and the limits of graph's Graphviz run
_STRIDED = {"m.mlir": _f(_conv_hlo("stride = [2, 2]", out="1x3x3x4"))}
_CHAIN: dict[str, Callable[[], str | bytes]] = {"m.mlir": lambda: _add_chain(2)}
CASES += [
    Case("max-phases=-1 (every conv would be skipped)", ["{m.mlir}", "-p", "stablehlo-canonicalize-conv{max-phases=-1}"], _STRIDED, 2, "stablehlo-canonicalize-conv: option 'max-phases' must be an integer >= 1; got '-1'", "convcanon-opt"),
    Case("merge-phases=pad-kernel max-mac-ratio=-1", ["{m.mlir}", "-p", "stablehlo-canonicalize-conv{merge-phases=pad-kernel max-mac-ratio=-1}"], _STRIDED, 2, "option 'max-mac-ratio' must be a finite number >= 1; got '-1'", "convcanon-opt"),
    Case("max-mac-ratio=inf", ["{m.mlir}", "-p", "stablehlo-canonicalize-conv{merge-phases=pad-kernel max-mac-ratio=inf}"], _STRIDED, 2, "option 'max-mac-ratio' must be a finite number >= 1; got 'inf'", "convcanon-opt"),
    Case("graph --timeout nan (Graphviz unbounded)", ["graph", "{m.mlir}", "--timeout", "nan", "-o", "{g.svg}"], _CHAIN, 2, "error: --timeout must be a number of seconds > 0 and <= 1e+06, not nan"),
    Case("graph --timeout 1e308 (the wait's milliseconds overflowed: a traceback)", ["graph", "{m.mlir}", "--timeout", "1e308", "-o", "{g.svg}"], _CHAIN, 2, "error: --timeout must be a number of seconds > 0 and <= 1e+06, not 1e+308"),
    Case("graph --memory-limit 0 (Graphviz unbounded)", ["graph", "{m.mlir}", "--memory-limit", "0", "-o", "{g.svg}"], _CHAIN, 2, "error: bad memory limit '0': it must be at least one byte"),
    Case("run --memory-limit 0 (was: the 4 GiB default)", ["run", "{m.mlir}", "--memory-limit", "0"], _CHAIN, 2, "error: bad memory limit '0': it must be at least one byte"),
    Case("verify --trials 10**20 (ran until killed)", ["verify", "{m.mlir}", "{m.mlir}", "--trials", "100000000000000000000"], _CHAIN, 2, "error: --trials must be at least 1 and at most 10000"),
    Case("verify --trials 0", ["verify", "{m.mlir}", "{m.mlir}", "--trials", "0"], _CHAIN, 2, "error: --trials must be at least 1 and at most 10000"),
]  # fmt: skip

# -- declarations and odd entries (run, verify)
_DECLARATION = "func.func private @main(tensor<2xf32>) -> tensor<2xf32>\n"
_CALLS_DECLARATION = (
    "func.func private @ext(tensor<2xf32>) -> tensor<2xf32>\n"
    "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %0 = func.call @ext(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "  return %0 : tensor<2xf32>\n}\n"
)
CASES += [
    Case("run a declaration", ["run", "{m.mlir}"], {"m.mlir": _f(_DECLARATION)}, 1, "m.mlir:1:1: error: @main is a declaration: it has no body to run"),
    Case("verify a declaration", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_DECLARATION)}, 1, "m.mlir:1:1: error: @main is a declaration"),
    Case("func.call to a declaration", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_CALLS_DECLARATION)}, 1, "m.mlir:3:8: error: call to @ext, a declaration without a body"),
    Case("verify --seed -1", ["verify", "{m.mlir}", "{m.mlir}", "--seed", "-1"], {"m.mlir": _f(_CALLS_DECLARATION)}, 2, "argument --seed: must be an integer >= 0, not '-1'"),
    Case("verify --engine iree --entry unknown (migraphx)", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "iree", "--entry", "nope"], {"m.mlir": sources.migraphx_text}, 1, "error: no entry function @nope (functions: main)"),
]  # fmt: skip

# -- loops and calls that never end (run, verify)
_HUGE_WINDOW_CONV = (
    "func.func @main(%x: tensor<1x1x1000000xf32>, %w: tensor<1x1x500000xf32>) -> tensor<1x1x500001xf32> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {}"
    " {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
    " : (tensor<1x1x1000000xf32>, tensor<1x1x500000xf32>) -> tensor<1x1x500001xf32>\n"
    "  return %0 : tensor<1x1x500001xf32>\n}\n"
)
_ENDLESS_WHILE = (
    "func.func @main() -> tensor<i32> {\n"
    "  %0 = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %1 = stablehlo.while(%i = %0) : tensor<i32>\n"
    "   cond {\n"
    "    %c = stablehlo.compare GE, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "    stablehlo.return %c : tensor<i1>\n"
    "  } do {\n"
    "    stablehlo.return %i : tensor<i32>\n"
    "  }\n"
    "  return %1 : tensor<i32>\n}\n"
)
_RECURSIVE_CALL = (
    "func.func @main() -> tensor<i32> {\n"
    "  %0 = func.call @main() : () -> tensor<i32>\n"
    "  return %0 : tensor<i32>\n}\n"
)
_RECURSIVE_MX_CALL = (
    "func.func @main(%x: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
    "  %0 = func.call @main(%x) : (!migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
    "  return %0 : !migraphx.shaped<2xf32, 1>\n}\n"
)
_RECURSIVE_POLYMORPHIC = (
    "func.func private @f(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
    "  %0 = call @f(%x) : (tensor<?xf32>) -> tensor<?xf32>\n"
    "  %1 = call @f(%0) : (tensor<?xf32>) -> tensor<?xf32>\n"
    "  return %1 : tensor<?xf32>\n}\n"
    "func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n"
    "  %0 = call @f(%a) : (tensor<?xf32>) -> tensor<?xf32>\n"
    "  return %0 : tensor<?xf32>\n}\n"
)


def _doubling_chain(dim: str) -> str:
    """@main (or @f0) calls @f1 twice, which calls @f2 twice, ... 40 levels: inlined, 2^40 adds."""
    t = f"tensor<{dim}xf32>"
    functions = []
    for i in range(40):
        name = "main" if i == 0 and dim == "?" else f"f{i}"
        calls = (
            f"  %0 = call @f{i + 1}(%x) : ({t}) -> {t}\n  %1 = call @f{i + 1}(%0) : ({t}) -> {t}\n"
        )
        body = (
            calls + f"  return %1 : {t}\n"
            if i < 39
            else f"  %1 = stablehlo.add %x, %x : {t}\n  return %1 : {t}\n"
        )
        functions.append(
            f"func.func {'private ' if i else ''}@{name}(%x: {t}) -> {t} {{\n{body}}}\n"
        )
    return "".join(functions)


CASES += [
    Case("-p inline on 40 functions each calling the next twice (2^40 ops once inlined)", ["{m.mlir}", "-p", "inline"], {"m.mlir": _f(_doubling_chain("2"))}, 1, "m.mlir:96:1: error: inlining the calls of @f19 would give it 5242878 ops, over the 4194304 an inlined function may hold", "convcanon-opt"),
    Case("run a polymorphic module of 40 functions each calling the next twice (refinement inlines every call)", ["run", "{m.mlir}", "--inputs", "{in.npz}"], {"m.mlir": _f(_doubling_chain("?")), "in.npz": _f(_npz(arg0=np.ones(3, np.float32)))}, 1, "m.mlir:96:1: error: refined to the shapes of --inputs (arg0 [3]): inlining the calls of @f19 would give it 5242878 ops"),
    Case("run a shape-polymorphic module whose function calls itself twice (refinement inlined the calls round after round, doubling them: it never ended)", ["run", "{m.mlir}", "--inputs", "{in.npz}"], {"m.mlir": _f(_RECURSIVE_POLYMORPHIC), "in.npz": _f(_npz(arg0=np.ones(3, np.float32)))}, 1, "m.mlir:2:8: error: refined to the shapes of --inputs (arg0 [3]): @f calls itself, directly or through other functions"),
    Case("verify a shape-polymorphic module whose function calls itself twice", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_RECURSIVE_POLYMORPHIC)}, 1, "m.mlir:2:8: error: batch size 1: @f calls itself, directly or through other functions"),
    Case("run a while loop whose condition never turns false", ["run", "{m.mlir}", "--max-loop-iterations", "50"], {"m.mlir": _f(_ENDLESS_WHILE)}, 1, "m.mlir:3:8: error: stablehlo.while ran 50 iterations and its condition still holds"),
    Case("run --max-loop-iterations 0", ["run", "{m.mlir}", "--max-loop-iterations", "0"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "argument --max-loop-iterations: must be an integer >= 1, not '0'"),
    Case("run a conv of a 1e6-wide input and a 5e5-wide kernel (6 MB of buffers, 2.5e11 multiply-adds: two minutes of numpy; ten times wider, hours)", ["run", "{m.mlir}"], {"m.mlir": _f(_HUGE_WINDOW_CONV)}, 1, "m.mlir:2:8: error: work limit reached: stablehlo.convolution: 250000500000 steps (its im2col copy) would take the run past its limit of 200000000000 steps"),
    Case("run a while loop whose condition never turns false, under --max-work", ["run", "{m.mlir}", "--max-work", "1000000"], {"m.mlir": _f(_ENDLESS_WHILE)}, 1, "error: work limit reached: stablehlo."),
    Case("run --max-work 0", ["run", "{m.mlir}", "--max-work", "0"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "argument --max-work: must be a whole number of steps from 1 to 9223372036854775807 (e.g. 5000000 or 2e11), not '0'"),
    Case("run --max-work 2.5e0 (not a whole number of steps)", ["run", "{m.mlir}", "--max-work", "2.5e0"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "argument --max-work: must be a whole number of steps from 1 to 9223372036854775807 (e.g. 5000000 or 2e11), not '2.5e0'"),
    Case("run --max-work 1e400000000 (never expanded)", ["run", "{m.mlir}", "--max-work", "1e400000000"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "not '1e400000000'"),
    Case("run --max-work 1e999999999999999999999 (an exponent past what Python's Decimal holds: a traceback)", ["run", "{m.mlir}", "--max-work", "1e999999999999999999999"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "argument --max-work: must be a whole number of steps from 1 to 9223372036854775807 (e.g. 5000000 or 2e11), not '1e999999999999999999999'"),
    Case("verify --max-work 0e-999999999999999999999", ["verify", "{m.mlir}", "{m.mlir}", "--max-work", "0e-999999999999999999999"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "not '0e-999999999999999999999'"),
    Case("verify the same conv (its reference runs)", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_HUGE_WINDOW_CONV)}, 1, "m.mlir:2:8: error: work limit reached: stablehlo.convolution: 250000500000 steps (its im2col copy)"),
    Case("verify --max-work 0", ["verify", "{m.mlir}", "{m.mlir}", "--max-work", "0"], {"m.mlir": _f(_ENDLESS_WHILE)}, 2, "argument --max-work: must be a whole number of steps from 1 to 9223372036854775807 (e.g. 5000000 or 2e11), not '0'"),
    Case("run a function that calls itself", ["run", "{m.mlir}"], {"m.mlir": _f(_RECURSIVE_CALL)}, 1, "m.mlir:2:8: error: calls nest deeper than 64 at @main (recursion?)"),
    Case("verify a function that calls itself", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_RECURSIVE_CALL)}, 1, "m.mlir:2:8: error: calls nest deeper than 64 at @main (recursion?)"),
    Case("verify a migraphx function that calls itself", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_RECURSIVE_MX_CALL)}, 1, "m.mlir:2:3: error: calls nest deeper than 64 at @main (recursion?)"),
]  # fmt: skip


def _literal_program(values: str, type_name: str, lens: str = "2", strides: str = "1") -> str:
    return (
        f"@0 = @literal{{{values}}} -> {type_name}, {{{lens}}}, {{{strides}}}\n@1 = @return(@0)\n"
    )


_MX_DECLARATION = (
    "func.func private @main(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
)
_MX_CALLS_DECLARATION = (
    "func.func private @f(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
    "func.func @main(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
    "  %0 = func.call @f(%a) : (!migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1>\n"
    "  return %0 : !migraphx.shaped<2xf32, 1>\n}\n"
)
_MX_STRIDE_2_63 = (
    "func.func @main(%a: !migraphx.shaped<2x2xf32, 9223372036854775808x1>) -> !migraphx.shaped<2x2xf32, 9223372036854775808x1> {\n"
    "  return %a : !migraphx.shaped<2x2xf32, 9223372036854775808x1>\n}\n"
)
_MX_SPANS_2_63 = (
    "func.func @main(%a: !migraphx.shaped<99999999999x99999999999xf32, 99999999999x1>) -> !migraphx.shaped<99999999999x99999999999xf32, 99999999999x1> {\n"
    "  return %a : !migraphx.shaped<99999999999x99999999999xf32, 99999999999x1>\n}\n"
)
CASES += [
    Case("literal 1000 as int8_type", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("1000, 1", "int8_type"))}, 1, "p.txt:1:15: error: 1000 is out of range for int8_type [-128, 127]"),
    Case("literal nan as int32_type", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("nan", "int32_type", "1"))}, 1, "p.txt:1:15: error: `nan` is not an integer, as int32_type needs"),
    Case("literal -1 as uint8_type", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("-1, 1", "uint8_type"))}, 1, "error: -1 is out of range for uint8_type [0, 255]"),
    Case("literal 1e300 as half_type", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("1e300, 1", "half_type"))}, 1, "error: 1e300 is out of range for half_type"),
    Case("literal 1e30 as int64_type", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("1e30", "int64_type", "1"))}, 1, "error: 1e30 is out of range for int64_type"),
    Case("lens of 10^20 (program text)", ["import-migraphx", "{p.txt}"], {"p.txt": _f("x = @param:x -> float_type, {100000000000000000000}, {1}\n@1 = @return(x)\n")}, 1, "p.txt:1:30: error: 100000000000000000000 in the lens does not fit in int64"),
    Case("5000-digit literal value", ["import-migraphx", "{p.txt}"], {"p.txt": _f(_literal_program("1" * 5000, "float_type", "1"))}, 1, "error: number of 5000 characters in the literal"),
    Case("stride 2^63 into migraphx-to-tosa", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_STRIDE_2_63)}, 1, "error: !migraphx.shaped lens and strides must fit in int64", "convcanon-opt"),
    Case("a shaped type spanning over 2^63 elements", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_SPANS_2_63)}, 1, "error: !migraphx.shaped<99999999999x99999999999xf32, 99999999999x1> spans more than 2^63 elements of memory", "convcanon-opt"),
    Case("migraphx-to-tosa on a migraphx declaration", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_DECLARATION)}, 1, "m.mlir:1:1: error: 'func.func' @main is a declaration", "convcanon-opt"),
    Case("migraphx-to-tosa: func.call to a declaration", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_CALLS_DECLARATION)}, 1, "m.mlir:3:3: error: 'func.call' calls @f, a declaration", "convcanon-opt"),
]  # fmt: skip


# -- the memory limit covers every kernel's intermediates, located at the op
from .test_limits import DILATED_CONV, PADDED_MIGRAPHX_CONV  # noqa: E402

_PADDED_CONV_INPUTS = _f(_npz(arg0=np.ones(16, np.float32), arg1=np.ones(9, np.float32)))
CASES += [
    Case("lhs-dilated conv's dilated input over --memory-limit", ["run", "{m.mlir}", "--memory-limit", "1MiB"], {"m.mlir": _f(DILATED_CONV.replace("DIL", "1000000"))}, 1, "m.mlir:4:8: error: out of memory: stablehlo.convolution: convolution needs 56000204 bytes, over the memory limit of 1048576"),
    Case("migraphx conv padding 5000 over --memory-limit", ["run", "{m.mlir}", "--inputs", "{in.npz}", "--memory-limit", "1MiB"], {"m.mlir": _f(PADDED_MIGRAPHX_CONV), "in.npz": _PADDED_CONV_INPUTS}, 1, "m.mlir:3:3: error: out of memory: 'migraphx.convolution': convolution needs 800640436 bytes"),
]  # fmt: skip


# -- conv padding whose window arithmetic wraps int64; parse errors whose span ends a line
_WRAPPED_PADDING = (
    "func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32> {\n"
    "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[9223372036854775807, 9223372036854775807], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32>\n"
    "  return %0 : tensor<1x4x6x1xf32>\n}\n"
)
_MX_TYPE_ENDS_LINE = (
    "func.func @main(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 3x1> {\n"
    "  %0 = migraphx.relu %a : <2x3xf32, 3x1> -> <2x3xf32, 1x1>\n"
    "  return %a : !migraphx.shaped<2x3xf32, 3x1>\n}\n"
)
_MX_UNPLACED_BROADCAST = (
    "func.func @main(%a: !migraphx.shaped<1x32xsi32, 32x1>) -> !migraphx.shaped<1x32xsi32, 32x1> {\n"
    "  %0 = migraphx.multibroadcast %a {out_lens = [1, 32, 1, 1024]} : <1x32xsi32, 32x1> -> <1x32x1x1024xsi32, 0x0x0x0>\n"
    "  return %a : !migraphx.shaped<1x32xsi32, 32x1>\n}\n"
)
_RESOURCE_CONV = (
    "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    "  %w = stablehlo.constant dense_resource<weights> : tensor<2xf32>\n"
    "  %y = stablehlo.add %x, %w : tensor<2xf32>\n"
    "  return %y : tensor<2xf32>\n}\n"
    '{-#\n  dialect_resources: {\n    builtin: {\n      weights: "0x04000000'
)
CASES += [
    Case("conv padding that wraps int64 (declared result as wrapped)", ["{m.mlir}", "-p", CANON], {"m.mlir": _f(_WRAPPED_PADDING)}, 1, "m.mlir:2:8: error: spatial dim 0 pads to 18446744073709551622 elements, a window of 3 gives 18446744073709551620 outputs, not the declared 4: its padding overflows int64", "convcanon-opt"),
    Case("conv padding that wraps int64 (explain)", ["explain", "{m.mlir}", "-p", CANON], {"m.mlir": _f(_WRAPPED_PADDING)}, 1, "its padding overflows int64"),
    Case("an overlapping intermediate, strict-strides", ["{m.mlir}", "-p", "migraphx-to-tosa{strict-strides=true}"], {"m.mlir": _f(_MX_TYPE_ENDS_LINE)}, 1, "m.mlir:2:3: error: !migraphx.shaped layout is not representable: dims 0 and 1 overlap in memory", "convcanon-opt"),
    Case("an overlapping intermediate, strict-strides (run)", ["run", "{m.mlir}", "--strict-strides"], {"m.mlir": _f(_MX_TYPE_ENDS_LINE)}, 1, "m.mlir:2:3: error: !migraphx.shaped layout is not representable: dims 0 and 1 overlap in memory"),
    Case("a bad shaped type at the end of the file", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f("func.func private @g() -> !migraphx.shaped<2x3xi7, 3x1>")}, 1, "m.mlir:1:44: error: !migraphx.shaped element type i7 is not a known MIGraphX type", "convcanon-opt"),
    Case("multibroadcast that neither MIGraphX's rule nor the result layout places", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_UNPLACED_BROADCAST)}, 1, "multibroadcast cannot broadcast [1, 32] to [1, 32, 1, 1024]", "convcanon-opt"),
    Case("dense_resource blob shorter than its tensor", ["run", "{m.mlir}"], {"m.mlir": _f(_RESOURCE_CONV + '0000803F"\n    }\n  }\n#-}\n')}, 1, "m.mlir:2:27: error: dense_resource<weights>: the blob holds 4 bytes, tensor<2xf32> needs 8"),
    Case("dense_resource naming a missing blob", ["run", "{m.mlir}"], {"m.mlir": _f(_RESOURCE_CONV.replace("weights: ", "other: ") + '0000803F00000040"\n    }\n  }\n#-}\n')}, 1, "m.mlir:2:27: error: dense_resource<weights>: the file has no such blob"),
    Case("dialect_resources section cut inside its blob (MLIR's parser would crash)", ["{m.mlir}", "-p", CANON], {"m.mlir": _f(_RESOURCE_CONV + "0000")}, 1, "m.mlir:9:16: error: dialect_resources section: a string is not closed before the end of the file", "convcanon-opt"),
]  # fmt: skip

_DYNAMIC_CONV = (
    "func.func @main(%x: tensor<1x8x8x1xf32>, %w: tensor<3x3x1x1xf32>) -> tensor<1x4x6x1xf32> {\n"
    "  %p = stablehlo.constant dense<[[1, 1], [PAD]]> : tensor<2x2xi64>\n"
    '  %0 = "stablehlo.dynamic_conv"(%x, %w, %p) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 1>}> : (tensor<1x8x8x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> tensor<1x4x6x1xf32>\n'
    "  return %0 : tensor<1x4x6x1xf32>\n}\n"
)
CASES += [
    Case("dynamic_conv whose constant padding contradicts its declared result", ["{m.mlir}", "-p", CANON], {"m.mlir": _f(_DYNAMIC_CONV.replace("PAD", "0, 2"))}, 1, "m.mlir:3:8: error: stablehlo.dynamic_conv with the constant padding [[1, 1], [0, 2]] is no valid stablehlo.convolution: inferred shape '[1, 4, 8, 1]' is incompatible with return type of operation 'tensor<1x4x6x1xf32>'", "convcanon-opt"),
    Case("mhlo.dynamic_conv padding of shape [1, 4] (MHLO's verifier allows it; read flat it was another padding)", ["{m.mlir}", "-p", "canonicalize-conv"], {"m.mlir": _f(_DYNAMIC_CONV.replace("stablehlo.constant dense<[[1, 1], [PAD]]> : tensor<2x2xi64>", "mhlo.constant dense<[[1, 1, 0, 0]]> : tensor<1x4xi64>").replace("tensor<2x2xi64>", "tensor<1x4xi64>").replace("stablehlo.", "mhlo.").replace("array<i64: 2, 1>", "dense<[2, 1]> : tensor<2xi64>").replace("<{", "{").replace("}>", "}"))}, 1, "m.mlir:3:8: error: mhlo.dynamic_conv expects an integer padding of shape [2, 2], but got tensor<1x4xi64>", "convcanon-opt"),
    Case("dynamic_conv padding ui64 2^64-1 (past int64)", ["{m.mlir}", "-p", CANON], {"m.mlir": _f(_DYNAMIC_CONV.replace("[PAD]]> : tensor<2x2xi64>", "[18446744073709551615, 0]]> : tensor<2x2xui64>").replace("tensor<2x2xi64>", "tensor<2x2xui64>"))}, 1, "m.mlir:3:8: error: stablehlo.dynamic_conv padding amount 18446744073709551615 does not fit in int64", "convcanon-opt"),
    Case("MHLO pass on a module whose only conv is a stablehlo.dynamic_conv (passed over with exit 0)", ["{m.mlir}", "-p", "canonicalize-conv"], {"m.mlir": _f(_DYNAMIC_CONV.replace("PAD", "0, 0"))}, 1, "m.mlir:3:8: error: canonicalize-conv found no mhlo.convolution but 1 stablehlo.dynamic_conv op: use stablehlo-canonicalize-conv for stablehlo modules", "convcanon-opt"),
    Case("dynamic_conv whose constant padding wraps int64", ["explain", "{m.mlir}", "-p", CANON], {"m.mlir": _f(_DYNAMIC_CONV.replace("PAD", "9223372036854775807, 9223372036854775807"))}, 1, "m.mlir:3:8: error: stablehlo.dynamic_conv with the constant padding [[1, 1], [9223372036854775807, 9223372036854775807]] is no valid stablehlo.convolution"),
]  # fmt: skip


# -- hostile input, round 3: refinement, resources, API-free commands, literals, HLO
from .test_hlo_conv_window import WINDOW_HLO  # noqa: E402

CASES += [
    Case("--input-hlo: conv window={size=5x5} on a 3x3 kernel", ["--input-hlo", "{m.hlo}"], {"m.hlo": _f(WINDOW_HLO.replace("WINDOW", "size=5x5"))}, 1, "m.hlo:6:8: error: convolution %c: window={size=5x5} does not match its kernel's spatial dims (3x3)", "convcanon-opt"),
    Case("--input-hlo: an error at a converted conv (f8E8M0FNU padded; it was at the converted text's line)", ["--input-hlo", "{m.hlo}", "-p", CANON], {"m.hlo": _f(WINDOW_HLO.replace("WINDOW", "size=3x3 pad=1_1x1_1").replace("f32", "f8e8m0fnu").replace("[1,6,6,4]", "[1,8,8,4]"))}, 1, "m.hlo:6:8: error: EUET001: element type f8E8M0FNU of the convolution's lhs cannot be zero-padded", "convcanon-opt"),
]  # fmt: skip


_FP4_LITERAL = (
    "func.func @main() -> !migraphx.shaped<1xf4E2M1FN, 1> {\n"
    "  %0 = migraphx.literal(dense<[HEX]> : tensor<1xf4E2M1FN>) : <1xf4E2M1FN, 1>\n"
    "  return %0 : !migraphx.shaped<1xf4E2M1FN, 1>\n}\n"
)
CASES += [
    Case("fp4 literal dense<[0xFF]> (wider than 4 bits)", ["run", "{m.mlir}"], {"m.mlir": _f(_FP4_LITERAL.replace("HEX", "0xFF"))}, 1, "m.mlir:2:32: error: hexadecimal float constant out of range for type"),
    Case("fp4 literal dense<[-0x1]> (a signed bit pattern)", ["run", "{m.mlir}"], {"m.mlir": _f(_FP4_LITERAL.replace("HEX", "-0x1"))}, 1, "m.mlir:2:33: error: hexadecimal float literal should not have a leading minus"),
]  # fmt: skip


_ALIGNED = (
    _RESOURCE_CONV.replace('"0x04000000', '"0xALIGN') + '0000803F00000040"\n    }\n  }\n#-}\n'
)
CASES += [
    Case("dense_resource blob alignment 0 (MLIR's parser throws bad_alloc)", ["{m.mlir}"], {"m.mlir": _f(_ALIGNED.replace("ALIGN", "00000000"))}, 1, "m.mlir:9:16: error: dialect_resources section: blob 'weights' starts with alignment 0, which is not a power of two", "convcanon-opt"),
    Case("dense_resource blob alignment 2^31 (run)", ["run", "{m.mlir}"], {"m.mlir": _f(_ALIGNED.replace("ALIGN", "00000080"))}, 1, "m.mlir:9:16: error: dialect_resources section: blob 'weights' starts with alignment 2147483648, which is over the limit of 65536"),
    Case("dense_resource blob alignment 3 (verify)", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_ALIGNED.replace("ALIGN", "03000000"))}, 1, "m.mlir:9:16: error: dialect_resources section: blob 'weights' starts with alignment 3, which is not a power of two"),
]  # fmt: skip


_DYNAMIC_ADD = "func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n  %0 = stablehlo.add %a, %a : tensor<?xf32>\n  return %0 : tensor<?xf32>\n}\n"
_READS_DIM = "func.func @main(%a: tensor<?xf32>) -> tensor<i32> {\n  %0 = stablehlo.get_dimension_size %a, dim = 0 : (tensor<?xf32>) -> tensor<i32>\n  return %0 : tensor<i32>\n}\n"
CASES += [
    Case("verify --batch-sizes 2^63 (over int64)", ["verify", "{m.mlir}", "{m.mlir}", "--batch-sizes", "1,9223372036854775808"], {"m.mlir": _f(_DYNAMIC_ADD)}, 1, "m.mlir:1:1: error: batch size 9223372036854775808: dim 9223372036854775808 does not fit a tensor type (dims are int64: 0 to 9223372036854775807)"),
    Case("verify --batch-sizes 10^23", ["verify", "{m.mlir}", "{m.mlir}", "--batch-sizes", "100000000000000000000000"], {"m.mlir": _f(_DYNAMIC_ADD)}, 1, "does not fit a tensor type"),
    Case("verify tensor<?xf32> at --batch-sizes 2e8 (refused before its inputs are made)", ["verify", "{m.mlir}", "{m.mlir}", "--batch-sizes", "200000000"], {"m.mlir": _f(_DYNAMIC_ADD)}, 1, "m.mlir:2:8: error: batch size 200000000: out of memory: stablehlo.add: stablehlo.add needs 4800000000 bytes, over the memory limit of 4294967296"),
    Case("verify --batch-sizes 2^32+1 on a module reading its dims as i32 (would wrap to 1)", ["verify", "{m.mlir}", "{m.mlir}", "--batch-sizes", "4294967297"], {"m.mlir": _f(_READS_DIM)}, 1, "m.mlir:2:8: error: batch size 4294967297: dim 4294967297 does not fit the i32 this module reads dims as"),
]  # fmt: skip


_BIG = 4611686018427387904  # 2**62 f32: 2**64 bytes, over int64
_HUGE_RESULT = f"func.func @main(%x: tensor<f32>) -> tensor<{_BIG}xf32> {{\n  %0 = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<{_BIG}xf32>\n  return %0 : tensor<{_BIG}xf32>\n}}\n"
_CANCELLING_PAD = f"func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n  %c = stablehlo.constant dense<0.0> : tensor<f32>\n  %0 = stablehlo.pad %x, %c, low = [{_BIG}], high = [-{_BIG}], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}}\n"
_ENDLESS_LOOP = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.while(%it = %x) : tensor<4xf32>\n    cond {\n      %t = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %t : tensor<i1>\n    } do {\n      %n = stablehlo.add %it, %it : tensor<4xf32>\n      stablehlo.return %n : tensor<4xf32>\n    }\n  return %0 : tensor<4xf32>\n}\n"
CASES += [
    Case("verify --engine xla, a result of 2^64 bytes (XLA aborted the process)", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "xla"], {"m.mlir": _f(_HUGE_RESULT)}, 1, f"m.mlir:2:8: error: stablehlo.broadcast_in_dim result f32 tensor of shape [{_BIG}] needs 18446744073709551616 bytes, over the memory limit of 4294967296"),
    Case("verify --engine xla, a pad whose padding cancels past int64 (XLA aborted the process)", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "xla"], {"m.mlir": _f(_CANCELLING_PAD)}, 1, "m.mlir: error: XLA was killed by SIGABRT: terminate called after throwing an instance of 'absl::"),
    Case("verify --engine xla, a while loop whose condition never fails (ran forever)", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "xla", "--timeout", "2"], {"m.mlir": _f(_ENDLESS_LOOP)}, 1, "m.mlir: error: XLA did not finish within 2 s and was stopped (a `while` loop whose condition never fails runs forever; `--timeout` sets the limit)"),
    Case("verify --timeout 0", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "xla", "--timeout", "0"], {"m.mlir": _f(_ENDLESS_LOOP)}, 2, "error: --timeout must be a number of seconds > 0 and <= 1e+06, not 0"),
]  # fmt: skip


CASES += [
    Case("two passes without a comma between them (the second was read as an option's value)", ["{m.mlir}", "-p", "migraphx-to-tosa{types=native}migraphx-to-tosa"], {"m.mlir": sources.migraphx_text}, 2, "error: migraphx-to-tosa: expected ',' after its options, before 'migraphx-to-tosa' (passes are separated by commas)", "convcanon-opt"),
]  # fmt: skip


_MX_OWN_RESULT = "func.func @main(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {\n  %0 = migraphx.neg %0 : <4xf32, 1> -> <4xf32, 1>\n  return %0 : !migraphx.shaped<4xf32, 1>\n}\n"
_MX_LATER_RESULT = "func.func @main(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {\n  %0 = migraphx.neg %1 : <4xf32, 1> -> <4xf32, 1>\n  %1 = migraphx.abs %x : <4xf32, 1> -> <4xf32, 1>\n  return %0 : !migraphx.shaped<4xf32, 1>\n}\n"
_MX_WIDE_ATTRIBUTE = "func.func @main(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {\n  %0 = migraphx.softmax %x {axis = 0 : i99999999999} : <4xf32, 1> -> <4xf32, 1>\n  return %0 : !migraphx.shaped<4xf32, 1>\n}\n"
_TOSA_WIDE_ELEMENT = "func.func @main(%x: tensor<4xi99999999999>) -> tensor<4xi99999999999> {\n  return %x : tensor<4xi99999999999>\n}\n"
CASES += [
    Case("migraphx op reading its own result (run: a KeyError traceback)", ["run", "{m.mlir}"], {"m.mlir": _f(_MX_OWN_RESULT)}, 1, "m.mlir:2:3: error: 'migraphx.neg' op operand #0 does not dominate this use"),
    Case("migraphx op reading a later result (verify: a KeyError traceback)", ["verify", "{m.mlir}", "{m.mlir}"], {"m.mlir": _f(_MX_LATER_RESULT)}, 1, "m.mlir:2:3: error: 'migraphx.neg' op operand #0 does not dominate this use"),
    Case("migraphx op reading a later result (convcanon-opt printed it back)", ["{m.mlir}"], {"m.mlir": _f(_MX_LATER_RESULT)}, 1, "m.mlir:2:3: error: 'migraphx.neg' op operand #0 does not dominate this use", "convcanon-opt"),
    Case("attribute type i99999999999 (xDSL computed 1 << width: killed for memory)", ["{m.mlir}", "-p", "migraphx-to-tosa"], {"m.mlir": _f(_MX_WIDE_ATTRIBUTE)}, 1, "m.mlir:2:40: error: invalid integer width", "convcanon-opt"),
    Case("TOSA element type i99999999999 (run)", ["run", "{m.mlir}"], {"m.mlir": _f(_TOSA_WIDE_ELEMENT)}, 1, "m.mlir:1:30: error: invalid integer width"),
]  # fmt: skip


_RUN_CHUNKS = "func.func @main() -> tensor<2xf32> {\n  %0 = stablehlo.constant dense<1.0> : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n// -----\nfunc.func @f0() -> tensor<2xf32> {\n  %0 = stablehlo.constant dense<2.0> : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n"
_SPLIT_DEEP = (
    IDENTITY + "// -----\n" + IDENTITY + "// -----\nfunc.func @f() {\n" + "[" * 300 + "\n}\n"
)
CASES += [
    Case("stdout's reader gone after a line (`| head -1`; unbuffered it was exit 0, silent)", ["{m.mlir}"], {"m.mlir": _f(_add_chain(2000))}, 1, "<stdout>: error: cannot write the output: Broken pipe", "convcanon-opt", "a pipe whose reader is gone"),
    Case("--split-input-file: a later chunk nests too deep (located in the file, chunk parsed alone)", ["{m.mlir}", "--split-input-file"], {"m.mlir": _f(_SPLIT_DEEP)}, 1, "m.mlir:10:300: error: input nests deeper than 256 levels of brackets", "convcanon-opt"),
    Case("run --split-input-file --entry f0, missing from chunk 1 (the error named no chunk)", ["run", "{m.mlir}", "--split-input-file", "--entry", "f0"], {"m.mlir": _f(_RUN_CHUNKS)}, 1, "m.mlir:1:1: error: chunk 1: no function @f0 (functions: main)"),
    Case("run --split-input-file, a bad migraphx chunk after a good one (was one module: Redefinition of symbol)", ["run", "{m.mlir}", "--split-input-file", "--inputs", "{in.npz}"], {"m.mlir": _f(_MX_OWN_RESULT.replace("%0 = migraphx.neg %0", "%0 = migraphx.neg %x") + "// -----\n" + _MX_OWN_RESULT), "in.npz": _f(_npz(arg0=np.ones(4, np.float32)))}, 1, "m.mlir:7:3: error: 'migraphx.neg' op operand #0 does not dominate this use"),
]  # fmt: skip


def _cnn_bytecode() -> bytes:
    """The example CNN as MLIR bytecode."""
    from convcanon.hlo.context import parse_module
    from convcanon.hlo.formats import module_bytecode

    return module_bytecode(parse_module(sources.STABLEHLO.read_text(), "cnn.mlir"))


def _aborting_bytecode() -> bytes:
    """The CNN's bytecode with its dialect name `builtin` no longer UTF-8."""
    whole = _cnn_bytecode()
    at = whole.index(b"builtin\x00")
    return whole[:at] + b"\xe4" + whole[at + 1 :]


_F8_IDENTITY = IDENTITY.replace("xf32>", "xf8E8M0FNU>")
CASES += [
    Case("MLIR bytecode cut short", ["{m.mlirbc}"], {"m.mlirbc": lambda: _cnn_bytecode()[:300]}, 1, "m.mlirbc: error: cannot read the MLIR bytecode: attempting to parse", "convcanon-opt"),
    Case("MLIR bytecode whose dialect name is not UTF-8 (jaxlib's reader aborts the process)", ["{m.mlirbc}"], {"m.mlirbc": _aborting_bytecode}, 1, "m.mlirbc: error: MLIR's bytecode reader was killed by SIGABRT", "convcanon-opt"),
    Case("--target-version older than the module's types (f8E8M0FNU in StableHLO 1.0.0)", ["{m.mlir}", "--target-version", "1.0.0", "-o", "{m.mlir}.vhlo"], {"m.mlir": _f(_F8_IDENTITY)}, 1, "m.mlir:1:1: error: StableHLO 1.0.0 cannot express this module: it uses an op, type or attribute added after 1.0.0", "convcanon-opt"),
    Case("--target-version of a module with chlo ops (the artifact kept them: no consumer reads it)", ["{m.mlir}", "--target-version", "1.0.0", "-o", "{m.mlir}.vhlo"], {"m.mlir": _f(IDENTITY.replace("  return %a", "  %0 = chlo.erf %a : tensor<2xf32> -> tensor<2xf32>\n  return %0"))}, 1, "m.mlir:2:8: error: a StableHLO portable artifact holds StableHLO ops (and Shardy's sdy ones); this module also has chlo.erf", "convcanon-opt"),
    Case("--target-version 0.1.0 (before StableHLO's minimum)", ["{m.mlir}", "--target-version", "0.1.0"], {"m.mlir": _f(IDENTITY)}, 2, "error: --target-version must be a StableHLO version X.Y.Z from", "convcanon-opt"),
    Case("--emit-bytecode of a migraphx module", ["{m.mlir}", "--emit-bytecode", "-o", "{m.mlir}.bc"], {"m.mlir": sources.migraphx_text}, 1, "m.mlir: error: --emit-bytecode writes StableHLO/MHLO modules; this one holds migraphx/TOSA ops, which are written as text", "convcanon-opt"),
]  # fmt: skip


def _close_quietly(stream: io.TextIOBase) -> None:
    with contextlib.suppress(OSError):  # what it could not write was reported
        stream.close()


def run_case(case: Case, work: Path) -> tuple[int, str]:
    """Write the case's files into `work`, run its command in-process; (exit code, stderr)."""
    paths = {name: work / name for name in case.files}
    for name, make in case.files.items():
        data = make()
        paths[name].write_bytes(data.encode() if isinstance(data, str) else data)
    argv = [re.sub(r"\{([\w-]+\.\w+)\}", lambda m: str(work / m[1]), a) for a in case.command]
    entry = opt_main if case.program == "convcanon-opt" else main
    err = io.StringIO()
    with contextlib.ExitStack() as stack:
        out: io.TextIOBase = io.StringIO()
        if case.stdout != "captured":
            read_end, write_end = os.pipe()
            os.close(read_end)
            out = open(write_end, "w")  # noqa: SIM115
            stack.callback(_close_quietly, out)
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(contextlib.redirect_stdout(out))
        code = entry(argv)
    return code, err.getvalue()


# -- verify: stdin once, AFTER or a pipeline, engine messages placed (issues 45, 46)
XLA_DYNAMIC_CAST = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  %s = stablehlo.constant dense<4> : tensor<1xi32>
  %1 = stablehlo.dynamic_broadcast_in_dim %0, %s, dims = [0] : (tensor<4xf32>, tensor<1xi32>) -> tensor<?xf32>
  %2 = tensor.cast %1 : tensor<?xf32> to tensor<4xf32>
  return %2 : tensor<4xf32>
}
"""
CASES += [
    Case("verify - - (stdin read twice)", ["verify", "-", "-"], {}, 2, "error: BEFORE and AFTER cannot both be stdin (-): stdin is read once"),
    Case("verify with neither AFTER nor -p", ["verify", "{m.mlir}"], {"m.mlir": _f(ADD)}, 2, "error: verify needs AFTER, or -p PIPELINE to make AFTER from BEFORE"),
    Case("verify with AFTER and -p", ["verify", "{m.mlir}", "{m.mlir}", "-p", "stablehlo-canonicalize-conv"], {"m.mlir": _f(ADD)}, 2, "error: verify takes AFTER or -p PIPELINE, not both"),
    Case("verify --rtol -1", ["verify", "{m.mlir}", "{m.mlir}", "--rtol", "-1"], {"m.mlir": _f(ADD)}, 2, "error: --rtol must be a finite number >= 0, not -1.0"),
    Case("verify --engine xla, a refusal XLA places inside its message (was `m.mlir: error: ... UNKNOWN: -:5:8: error: ...`)", ["verify", "{m.mlir}", "{m.mlir}", "--engine", "xla", "--trials", "1"], {"m.mlir": _f(XLA_DYNAMIC_CAST)}, 1, "m.mlir:5:8: error: XLA rejected the module: 'tensor.cast' op requires static or bounded operand for HLO translation"),
]  # fmt: skip

_HIDDEN_NEST = (
    "// "
    + ")" * 100000
    + "\nfunc.func @f() attributes {x = "
    + "[" * 100000
    + "]" * 100000
    + "} {\n  return\n}\n"
)
_STRING_NEST = (
    "func.func @f() attributes {x = "
    + '[")", ' * 100000
    + "1"
    + "]" * 100000
    + "} {\n  return\n}\n"
)
_MINUS_CHAIN = (
    "#m = affine_map<(d0) -> ("
    + "-" * 100000
    + "d0)>\nfunc.func @f() attributes {m = #m} {\n  return\n}\n"
)
_ALIAS_CHAIN = (
    "\n".join(["!t0 = tuple<f32>"] + [f"!t{i} = tuple<!t{i - 1}>" for i in range(1, 30000)])
    + "\nfunc.func @f(%a: !t29999) {\n  return\n}\n"
)
CASES += [
    Case("a comment of 100k ')' before a 100k-deep nest (the count was disarmed: SIGSEGV)", ["{m.mlir}"], {"m.mlir": _f(_HIDDEN_NEST)}, 1, "m.mlir:2:100031: error: input nests deeper than 256 levels of brackets", "convcanon-opt"),
    Case("a string \")\" beside each '[' of a 100k-deep nest (SIGSEGV)", ["{m.mlir}"], {"m.mlir": _f(_STRING_NEST)}, 1, "error: input nests deeper than 256 levels of brackets", "convcanon-opt"),
    Case("100k unary minus signs in an affine map (SIGSEGV)", ["{m.mlir}"], {"m.mlir": _f(_MINUS_CHAIN)}, 1, "m.mlir:1:282: error: input nests deeper than 256 levels of unary minus signs", "convcanon-opt"),
    Case("a chain of 30k type aliases (MLIR's printer: SIGSEGV)", ["{m.mlir}"], {"m.mlir": _f(_ALIAS_CHAIN)}, 1, "m.mlir:1025:1: error: alias !t1024 nests deeper than 1024 levels through the aliases it names", "convcanon-opt"),
    Case("run - --inputs - (stdin read twice: 'not an .npz archive')", ["run", "-", "--inputs", "-"], {}, 2, "error: FILE and --inputs cannot both be stdin (-): stdin is read once"),
    Case("--max-input-size past int64 (400 digits were a float overflow traceback)", ["{m.mlir}", "--max-input-size", "9" * 20], {"m.mlir": _f(ADD)}, 2, "error: bad input size limit '99999999999999999999': it must be at most 9223372036854775807 bytes", "convcanon-opt"),
    Case("--mlir-elide-elementsattrs-if-larger 2^63 (a TypeError traceback)", ["{m.mlir}", "--mlir-elide-elementsattrs-if-larger", str(1 << 63)], {"m.mlir": _f(ADD)}, 2, "must be an integer >= 0 and <= 9223372036854775807", "convcanon-opt"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_bad_input_gives_its_diagnostic(case: Case, tmp_path: Path):
    before = {name: make() for name, make in case.files.items()}
    code, stderr = run_case(case, tmp_path)
    lines = [line for line in diagnostic_lines(stderr) if line.strip()]
    assert code == case.exit, stderr
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert "error: " in lines[0] and case.fragment in lines[0], stderr
    for name, data in before.items():  # inputs untouched
        raw = data.encode() if isinstance(data, str) else data
        assert (tmp_path / name).read_bytes() == raw
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in case.files]
    assert not leftovers, leftovers
