"""`convcanon run` reads `dense_resource` weights (torch-mlir's way of writing every weight) from
the file's trailing resource section; a blob that does not fit its tensor, a missing blob, a cut-off
or malformed section is a `file:line:col` error and exit 1, never a traceback or a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _diagnostics import diagnostic_lines  # pyright: ignore[reportMissingImports]
from verify.resource_modules import add_constant_pair, blob_hex, resource_section

from convcanon.cli import main
from convcanon.hlo.resources import inline_dense_resources

WEIGHTS = np.array([1.0, 2.0], np.float32)
RESOURCE, DENSE = add_constant_pair(WEIGHTS, "f32")
SECTION = RESOURCE.index("{-#")


def _run(text: str, tmp_path: Path, capsys) -> tuple[int, str, Path]:
    module, inputs, outputs = tmp_path / "m.mlir", tmp_path / "in.npz", tmp_path / "out.npz"
    module.write_text(text)
    np.savez(inputs, arg0=np.array([10.0, 20.0], np.float32))
    code = main(["run", str(module), "--inputs", str(inputs), "--output", str(outputs)])
    return code, capsys.readouterr().err, outputs


def test_run_adds_the_blob_values(tmp_path: Path, capsys) -> None:
    code, err, outputs = _run(RESOURCE, tmp_path, capsys)
    assert code == 0, err
    with np.load(outputs) as results:
        (result,) = results.values()
    np.testing.assert_array_equal(result, np.array([11.0, 22.0], np.float32))


HOSTILE = {
    "short blob": (
        RESOURCE.replace(blob_hex(WEIGHTS), blob_hex(WEIGHTS[:1])),
        "2:27: error: dense_resource<weight>: the blob holds 4 bytes, tensor<2xf32> needs 8",
    ),
    "long blob": (
        RESOURCE.replace(blob_hex(WEIGHTS), blob_hex(np.zeros(3, np.float32))),
        "2:27: error: dense_resource<weight>: the blob holds 12 bytes, tensor<2xf32> needs 8",
    ),
    "missing blob": (
        RESOURCE.replace("dense_resource<weight>", "dense_resource<other>"),
        "2:27: error: dense_resource<other>: the file has no such blob",
    ),
    "no section": (
        RESOURCE[:SECTION],
        "2:27: error: dense_resource<weight>: the file has no dialect_resources section",
    ),
    "cut inside the blob": (
        RESOURCE[: RESOURCE.index(blob_hex(WEIGHTS)) + 5],
        "10:15: error: dialect_resources section: a string is not closed before the end of "
        "the file",
    ),
    "cut before the closing": (
        RESOURCE[: RESOURCE.rindex("#-}")],
        "13:1: error: dialect_resources section: the file ends before the closing '#-}'",
    ),
    "cut after the blob": (
        RESOURCE[: RESOURCE.index(blob_hex(WEIGHTS)) + len(blob_hex(WEIGHTS)) + 1],
        "10:43: error: dialect_resources section: the file ends before the closing '}'",
    ),
    "no alignment": (
        RESOURCE.replace(blob_hex(WEIGHTS), "0x0400"),
        "10:7: error: blob 'weight' is not '0x' then an 8-digit alignment and whole bytes of hex",
    ),
    "not hex": (
        RESOURCE.replace(blob_hex(WEIGHTS), blob_hex(WEIGHTS)[:-1] + "G"),
        "10:7: error: blob 'weight' has a character that is not a hex digit",
    ),
    "sub-byte type": (
        add_constant_pair(np.array([1, 2], np.int8), "i8")[0].replace("i8>", "i4>"),
        "2:27: error: dense_resource<weight>: blobs of i4 are not supported",
    ),
    **{
        f"alignment {alignment}": (
            RESOURCE.replace(blob_hex(WEIGHTS), "0x" + alignment.to_bytes(4, "little").hex()
                             + WEIGHTS.tobytes().hex()),
            f"10:15: error: dialect_resources section: blob 'weight' starts with alignment "
            f"{alignment}, which {why}",
        )
        for alignment, why in [(0, "is not a power of two"), (3, "is not a power of two"),
                               (1 << 31, "is over the limit of 65536")]
    },
    "a section's string cut by a newline": (
        RESOURCE.replace(blob_hex(WEIGHTS), blob_hex(WEIGHTS)[:6] + "\n" + blob_hex(WEIGHTS)[6:]),
        "10:15: error: dialect_resources section: a string is not closed before the end of its "
        "line",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_resource_is_a_located_error(case: str, tmp_path: Path, capsys) -> None:
    text, expected = HOSTILE[case]
    code, err, _ = _run(text, tmp_path, capsys)
    assert code == 1, err
    (message,) = diagnostic_lines(err.strip())
    assert message.startswith(f"{tmp_path / 'm.mlir'}:{expected}"), message


def test_a_text_without_resources_is_returned_as_is() -> None:
    assert inline_dense_resources(DENSE, "m.mlir") is DENSE


def test_the_inlined_text_keeps_its_lines() -> None:
    inlined = inline_dense_resources(RESOURCE, "m.mlir")
    assert "dialect_resources" not in inlined and "dense_resource" not in inlined
    assert (
        inlined.splitlines()
        == RESOURCE[:SECTION]
        .rstrip()
        .replace("dense_resource<weight>", f'dense<"0x{WEIGHTS.tobytes().hex().upper()}">')
        .splitlines()
    )


def test_quoted_names_and_other_resources() -> None:
    """A quoted blob name is read; a section that also holds another dialect's resources is
    kept (only the builtin blobs were consumed)."""
    text = RESOURCE[:SECTION].replace("dense_resource<weight>", 'dense_resource<"w 1">')
    section = resource_section({'"w 1"': blob_hex(WEIGHTS)}).replace(
        "  }\n#-}", '    , other: { key: "x\\"y" }\n  }\n#-}'
    )
    inlined = inline_dense_resources(text + section, "m.mlir")
    assert f'dense<"0x{WEIGHTS.tobytes().hex().upper()}">' in inlined
    assert inlined.endswith(section)


_HEX = WEIGHTS.tobytes().hex().upper()
# valid modules whose strings and comments hold what a raw-text scan would take for resources
LOOKALIKES = {
    "`{-#` in a string, no resources": (
        DENSE.replace("{\n", ' attributes {note = "a {-# b"} {\n', 1),
        'note = "a {-# b"',
    ),
    "`{-#` in a comment after the section": (RESOURCE + "// a comment {-# after\n", None),
    "`dense_resource<gone>` only in a comment": (
        DENSE.replace("{\n", "{\n  // was dense_resource<gone> : tensor<2xf32>\n", 1),
        "// was dense_resource<gone> : tensor<2xf32>",
    ),
    "`dense_resource<weight>` in a string attribute": (
        RESOURCE.replace(
            "{\n", ' attributes {note = "dense_resource<weight> : tensor<2xf32>"} {\n', 1
        ),
        'note = "dense_resource<weight> : tensor<2xf32>"',
    ),
    "`#-}`, a quote and `{-#` in a comment inside the section": (
        RESOURCE.replace(
            "    builtin: {\n", '    builtin: {\n      // "#-} {-# dense_resource<x>\n'
        ),
        None,
    ),
    "the section before the function": (
        RESOURCE[SECTION:] + RESOURCE[:SECTION],
        None,
    ),
    "a function after the section": (RESOURCE + "func.func @g() {\n  return\n}\n", "func.func @g"),
}


@pytest.mark.parametrize("case", sorted(LOOKALIKES))
def test_strings_and_comments_are_not_resources(case: str, tmp_path: Path, capsys) -> None:
    text, kept = LOOKALIKES[case]
    code, err, outputs = _run(text, tmp_path, capsys)
    assert code == 0, err
    with np.load(outputs) as results:
        (result,) = results.values()
    np.testing.assert_array_equal(result, np.array([11.0, 22.0], np.float32))
    inlined = inline_dense_resources(text, "m.mlir")
    if kept is not None:
        assert kept in inlined  # a string or comment is never rewritten
    assert ("dense_resource<weight> :" in text) == (f'dense<"0x{_HEX}">' in inlined)
