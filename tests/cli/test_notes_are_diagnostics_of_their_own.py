"""The notes MLIR attaches to an error ("previously defined here") are diagnostics of their own,
as mlir-opt prints and verifies them: each on its own `file:line:col: note:` line, and matched by
an `expected-note` comment under `--verify-diagnostics`. Checked against iree-opt (a real
mlir-opt) on errors that carry a note at another line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ADD = "  %{name} = stablehlo.add %a, %a : tensor<4xf32>"
FUNC = "func.func @{name}(%a: tensor<4xf32>) -> tensor<4xf32> {{"


def _program(kind: str, gap: int) -> tuple[list[str], int, int]:
    """Lines of a program whose error carries one note, `gap` lines below the note's line; the
    0-based lines of the note and the error."""
    filler = [ADD.format(name=f"f{n}") for n in range(gap - 1)]
    if kind == "ssa":
        lines = [FUNC.format(name="f"), ADD.format(name="0"), *filler, ADD.format(name="0")]
        lines += ["  return %0 : tensor<4xf32>", "}"]
        return lines, 1, 1 + gap
    body = ["  return %a : tensor<4xf32>", "}"]
    first = [FUNC.format(name="f"), *filler, *body]
    return [*first, FUNC.format(name="f"), *body], 0, len(first)


def _diagnostic_lines(stderr: str) -> list[str]:
    """The `file:line:col: error|note: ...` lines (iree-opt adds the source line and a caret,
    and, outside --verify-diagnostics, a note that dumps the op)."""
    return [
        line
        for line in stderr.splitlines()
        if re.match(r"\S+:\d+:\d+: (error|note): ", line) and "see current operation" not in line
    ]


@pytest.mark.parametrize("kind", ["ssa", "symbol"])
def test_an_error_s_note_prints_on_its_own_line_as_mlir_opt_prints_it(
    opt: Runner, tmp_path: Path, kind: str
) -> None:
    lines, _, _ = _program(kind, 2)
    (source := tmp_path / "n.mlir").write_text("\n".join(lines) + "\n")
    ours = opt(source, "-p", "stablehlo-canonicalize-conv")
    theirs = iree_opt(source, check=False)
    assert ours.code == theirs.returncode == 1
    assert _diagnostic_lines(ours.err) == _diagnostic_lines(theirs.stderr)
    assert len(_diagnostic_lines(ours.err)) == 2


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["ssa", "symbol"]),
    gap=st.integers(1, 3),
    expect_note=st.sampled_from(["none", "right", "wrong line", "wrong text", "as error"]),
    expect_error=st.booleans(),
)
def test_expected_note_matches_an_error_s_note_as_mlir_opt_does(
    opt: Runner, tmp_path: Path, kind: str, gap: int, expect_note: str, expect_error: bool
) -> None:
    """An error with a note, and expectations of either: our verdict and every error line are
    iree-opt's under --verify-diagnostics."""
    lines, note_line, error_line = _program(kind, gap)
    texts = {"ssa": "previously defined here", "symbol": "see existing symbol definition here"}
    errors = {"ssa": "redefinition of SSA value", "symbol": "redefinition of symbol named"}
    if expect_error:
        lines[error_line] += f" // expected-error {{{{{errors[kind]}}}}}"
    if expect_note != "none":
        severity = "error" if expect_note == "as error" else "note"
        text = "nowhere" if expect_note == "wrong text" else texts[kind]
        target = error_line if expect_note == "wrong line" else note_line
        lines[target] += f" // expected-{severity} {{{{{text}}}}}"
    (source := tmp_path / "v.mlir").write_text("\n".join(lines) + "\n")
    ours = opt(source, "--verify-diagnostics")
    theirs = iree_opt(source, "--verify-diagnostics", check=False)
    assert (ours.code, sorted(_diagnostic_lines(ours.err))) == (
        theirs.returncode,
        sorted(_diagnostic_lines(theirs.stderr)),
    )
