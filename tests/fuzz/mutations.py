"""Hypothesis strategies that damage real input files the way hostile or broken files do."""

from __future__ import annotations

import re

from hypothesis import strategies as st

_DIM = re.compile(rb"(?<=[<x])\d+(?=x)")
_TYPE = re.compile(rb"\b(f32|f16|f64|i32|i64|bf16)\b")
_INT = re.compile(rb"-?\d+")


@st.composite
def mutated(draw: st.DrawFn, source: bytes) -> bytes:
    """One of: truncation, byte flips, swapped element types, huge or negative dims, bad numbers."""
    kind = draw(st.sampled_from(["truncate", "flip", "type", "dim", "int", "splice", "delete"]))
    data = bytearray(source)
    if kind == "truncate":
        return bytes(data[: draw(st.integers(0, max(len(data) - 1, 0)))])
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if kind == "delete":
        i = draw(st.integers(0, len(data) - 1))
        j = draw(st.integers(i, min(len(data), i + 64)))
        return bytes(data[:i] + data[j:])
    if kind == "splice":
        i = draw(st.integers(0, len(data)))
        junk = draw(
            st.sampled_from(
                [
                    b"{",
                    b"}",
                    b"<",
                    b">",
                    b"[",
                    b"(",
                    b"%",
                    b"\x00",
                    b"\xff",
                    b'"',
                    b"// -----\n",
                    b"dense<",
                    b"->",
                ]
            )
        )
        return bytes(data[:i] + junk + data[i:])
    pattern, replacement = {
        "type": (
            _TYPE,
            draw(
                st.sampled_from(
                    [
                        b"i1",
                        b"f8E4M3FN",
                        b"complex<f32>",
                        b"!quant.uniform<i8:f32, 0.5>",
                        b"index",
                        b"f32f32",
                        b"i16777215",  # held in its width by MLIR for every value
                    ]
                )
            ),
        ),
        "dim": (
            _DIM,
            draw(st.sampled_from([b"0", b"99999999999", b"4294967296", b"-3", b"?", b"1"])),
        ),
        "int": (
            _INT,
            draw(
                st.sampled_from(
                    [
                        b"0",
                        b"-1",
                        b"-100",
                        b"9223372036854775807",
                        b"99999999999999999999",
                        b"3",
                        b"7" * 40000,  # MLIR reads it in time quadratic in its digits
                    ]
                )
            ),
        ),
    }[kind]
    matches = list(pattern.finditer(bytes(data)))
    if not matches:
        return bytes(data)
    match = matches[draw(st.integers(0, len(matches) - 1))]
    return bytes(data[: match.start()] + replacement + data[match.end() :])
