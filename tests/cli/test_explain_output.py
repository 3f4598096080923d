"""`explain`'s writers: a table cell never breaks its row (a line break in a JAX op name is
written as its escape, as `|` is), the JSON is strict Unicode whatever the file name's bytes, and
without `-p` a module holding both StableHLO and MHLO convs lists both."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_support import Runner  # pyright: ignore[reportMissingImports]
from fuzz.test_bad_input_table import _conv_hlo  # pyright: ignore[reportMissingImports]

STRIDED = _conv_hlo("stride = [2, 2], pad = [[1, 1], [1, 1]]", out="1x4x4x4")


def _named(name: str) -> str:
    """The strided conv with a debug-info location whose op name is `name` (MLIR-escaped)."""
    return STRIDED.replace("\n  return", f' loc("{name}"("model.py":3:4))\n  return', 1)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
@pytest.mark.parametrize(
    ("written", "character"), [("\\0A", "\n"), ("\\0D", "\r"), ("\\E2\\80\\A8", "\u2028")]
)
def test_a_line_break_in_a_cell_is_written_as_its_escape(
    cc: Runner, tmp_path: Path, fmt: str, written: str, character: str
) -> None:
    source = tmp_path / "m.mlir"
    source.write_text(_named(f"jit(f)/conv{written}tail"))
    result = cc(
        "explain", source, "--format", fmt, "-p", "stablehlo-canonicalize-conv{gate=general}"
    )
    assert result.code == 0, result.err
    table = result.out.split("\n\n")[0]
    rows = table.split("\n")
    assert len(rows) == (3 if fmt == "markdown" else 2), table  # header, (rule,) one conv
    assert not any(len(row.splitlines()) > 1 for row in rows), table
    escaped = character.encode("unicode_escape").decode()
    assert f"jit(f)/conv{escaped}tail" in rows[-1]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_json_of_a_file_name_that_is_not_utf8_is_strict_unicode(cc: Runner, tmp_path: Path) -> None:
    """The name's bad byte is `\\xff` in the string, not a lone `\\udcff` (which jq, serde_json
    and other strict readers refuse)."""
    source = tmp_path / os.fsdecode(b"c\xffonv.mlir")
    source.write_text(STRIDED)
    result = cc("explain", source, "--format", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    for text in _strings(document):
        text.encode("utf-8", "strict")  # raises on a lone surrogate
    assert document["convs"][0]["location"] == f"{tmp_path}/c\\xffonv.mlir:2:8"


MIXED = STRIDED + STRIDED.replace("@main", "@m").replace(
    "stablehlo.convolution", "mhlo.convolution"
)


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_without_a_pipeline_both_dialects_convs_are_listed(
    cc: Runner, tmp_path: Path, fmt: str
) -> None:
    source = tmp_path / "mixed.mlir"
    source.write_text(MIXED)
    result = cc("explain", source, "--format", fmt)
    assert result.code == 0, result.err
    if fmt == "table":
        assert "convs seen: 2" in result.out and f"{source}:6:8" in result.out
        assert "dialects: stablehlo (1 conv), mhlo (1 conv)" in result.out
        return
    convs = json.loads(result.out)["convs"]
    assert [c["dialect"] for c in convs] == ["stablehlo", "mhlo"]
    assert [c["location"] for c in convs] == [f"{source}:2:8", f"{source}:6:8"]
    assert all(c["decision"] == "rewrite" for c in convs)
