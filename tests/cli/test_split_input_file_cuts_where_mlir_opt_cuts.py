"""`--split-input-file` cuts where mlir-opt cuts: at the marker anywhere in a line, not only on a
line of its own, and with a "near miss" warning where the marker's start is not followed by its
end (`// ---`, `// ---- -`). The chunks' modules, the warnings (with their source lines) and
the exit code are iree-opt's, byte for byte; `run` and `explain` cut the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from convcanon.cli import main
from convcanon.fileio.split_input import _Places, split_input_file  # pyright: ignore[reportPrivateUsage]

MARKERS = ["// -----", "// ---", "// ----", "// ---- -", "  // -----  ", "// -----//", "// ------"]


@st.composite
def split_files(draw: st.DrawFn) -> str:
    """Lines of functions, markers and near misses, a marker sometimes after a function on its
    line; the first line holds a function (a file that starts with the marker fails in both)."""
    lines = ["func.func @f0() { return }"]
    for k in range(1, 1 + draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["func", "marker", "inline", "blank", "comment"]))
        if kind == "func":
            lines.append(f"func.func @f{k}() {{ return }}")
        elif kind == "marker":
            lines.append(draw(st.sampled_from(MARKERS)))
        elif kind == "inline":  # after code or a comment that is not ASCII: byte columns
            before = draw(st.sampled_from([f"func.func @f{k}() {{ return }}", "\t// é,", "// ü"]))
            lines.append(f"{before} {draw(st.sampled_from(MARKERS))}")
        elif kind == "blank":
            lines.append("")
        else:
            lines.append("// a comment")
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join(lines) + draw(st.sampled_from([end, "", end * 2]))


def _same_as_iree_opt(opt: Runner, path: Path, *flags: str) -> None:
    theirs = iree_opt(path, "--split-input-file", *flags, check=False)
    ours = opt(path, "--split-input-file", *flags)
    assert (ours.code, ours.err) == (theirs.returncode, theirs.stderr)
    # a bad chunk (`// ------` cuts before its sixth dash): mlir-opt prints the good chunks'
    # modules, we print nothing (no partial output)
    assert ours.out == (theirs.stdout if theirs.returncode == 0 else "")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(
    text="func.func @f0() { return }\n// ---\nfunc.func @f1() { return }  // -----\n",
    flags=["--mlir-print-debuginfo"],
)
@example(
    text="func.func @f0() { return }\n// -----\n// -----\nfunc.func @f1() { return }\n// -----",
    flags=["--mlir-print-debuginfo", "--mlir-pretty-debuginfo"],
)
@given(
    text=split_files(),
    flags=st.sampled_from(
        [[], ["--mlir-print-debuginfo"], ["--mlir-print-debuginfo", "--mlir-pretty-debuginfo"]]
    ),
)
def test_chunks_and_near_misses_are_iree_opts(
    opt: Runner, tmp_path: Path, text: str, flags: list[str]
) -> None:
    """With locations too: a later chunk's implicit module is where the chunk starts."""
    path = tmp_path / "s.mlir"
    path.write_text(text)
    _same_as_iree_opt(opt, path, *flags)


def test_a_chunk_after_a_marker_inside_a_line_keeps_the_files_columns(
    opt: Runner, tmp_path: Path
) -> None:
    path = tmp_path / "s.mlir"
    path.write_text("func.func @a() { return } // -----   %x = \nfunc.func @b() { return }\n")
    theirs = iree_opt(path, "--split-input-file", check=False)
    ours = opt(path, "--split-input-file")
    assert theirs.returncode == ours.code == 1
    located = theirs.stderr.split(" error: ")[0]
    assert located == f"{path}:1:38:"  # `%x` after the marker, on its line
    assert ours.err.startswith(located + " error: ")


def test_a_custom_marker_is_cut_the_same_way(opt: Runner, tmp_path: Path) -> None:
    path = tmp_path / "s.mlir"
    path.write_text("func.func @a() { return }\n// ====\nfunc.func @b() { return }\n// ===\n")
    _same_as_iree_opt(opt, path.with_name("s.mlir"))
    theirs = iree_opt(path, "--split-input-file=// ====", check=False)
    ours = opt(path, "--split-input-file=// ====")
    assert (ours.code, ours.out, ours.err) == (theirs.returncode, theirs.stdout, theirs.stderr)


@pytest.mark.parametrize("marker", ["x", "xy", "é"])
def test_a_marker_mlir_opt_cannot_cut_at_is_refused(
    opt: Runner, tmp_path: Path, marker: str
) -> None:
    path = tmp_path / "s.mlir"
    path.write_text("func.func @a() { return }\nxy\n")
    result = opt(path, f"--split-input-file={marker}")
    assert result.code == 2
    assert "a marker needs at least 3 bytes" in result.err


@pytest.mark.parametrize("marker", ["éé", "abé", "// ééé", "é--"])
def test_a_marker_that_is_not_ascii_is_cut_at_its_bytes(
    opt: Runner, tmp_path: Path, marker: str
) -> None:
    """mlir-opt cuts at all but the marker's last two bytes, which may be one character: it
    was cut at all but its last two characters (a near miss at every `a` of `abé`, columns
    two bytes short under `// ééé`, `éé` refused as too short)."""
    path = tmp_path / "s.mlir"
    path.write_text(
        "func.func @a() { return }\n// éé\nfunc.func @b() { return }\n// ax\n// ééé\n"
        "ax abé\nfunc.func @c() { return } é-- func.func @d() { return }\n"
    )
    theirs = iree_opt(path, f"--split-input-file={marker}", check=False)
    ours = opt(path, f"--split-input-file={marker}")
    assert (ours.code, ours.err) == (theirs.returncode, theirs.stderr)
    assert ours.out == (theirs.stdout if theirs.returncode == 0 else "")


def test_run_and_explain_cut_at_the_same_places(tmp_path: Path, capsys) -> None:
    path = tmp_path / "s.mlir"
    one = (
        "func.func @main() -> tensor<2xf32> {\n"
        "  %0 = stablehlo.constant dense<1.0> : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n}"
    )
    path.write_text(f"{one} // -----\n{one}\n// ---\n")
    assert main(["run", str(path), "--split-input-file"]) == 0
    out, err = capsys.readouterr()
    assert out.count(": ok (") == 2
    assert err.startswith(f"{path}:9:7: warning: near miss with file split marker\n// ---\n")
    assert main(["explain", str(path), "--split-input-file"]) == 0
    _, err = capsys.readouterr()
    assert err.startswith(f"{path}:9:7: warning: near miss with file split marker\n")


@given(
    text=st.text(st.sampled_from("ab\né\t"), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=12),
)
def test_places_of_increasing_offsets_are_their_lines_and_byte_columns(
    text: str, cuts: list[int]
) -> None:
    places = _Places(text)
    for offset in sorted(min(c, len(text)) for c in cuts):
        line_start = text.rfind("\n", 0, offset) + 1
        expected = (text.count("\n", 0, offset), len(text[line_start:offset].encode()))
        assert places.of(offset) == expected


def test_a_line_of_many_markers_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk and near miss is placed from the one before: 20,000 markers and near misses
    on one line scan it once per pass (it was scanned from the file's start for each)."""
    scanned: list[int] = []
    of = _Places.of

    def counted(self: _Places, offset: int) -> tuple[int, int]:
        scanned.append(offset - self.at)
        return of(self, offset)

    monkeypatch.setattr(_Places, "of", counted)
    text = "func.func @a() { return }" + " // ----- // ---" * 10_000 + "\n"
    chunks = list(split_input_file(text, "// -----", "s.mlir"))
    assert len(chunks) == 10_001
    assert sum(scanned) <= 2 * len(text)
