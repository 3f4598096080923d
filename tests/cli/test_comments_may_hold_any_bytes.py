"""mlir-opt's lexer skips a `//` comment's bytes unseen, so a hand-written file with a Latin-1
`é` in a comment reads; convcanon refused the whole file as "not UTF-8 text". A bad byte in a
comment now reads as `?` (one byte for one: columns stay); one outside a comment is refused at
its place, and one in a string literal (where mlir-opt keeps the byte, our parsers hold text)
is told to be written as an escape."""

from __future__ import annotations

import re

import pytest
from cli_support import Runner, iree_opt  # pyright: ignore[reportMissingImports]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convcanon.fileio.reading import NotUtf8Error, decoded

LINES = [
    b'func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {s = "a // b"} {',
    b"  %0 = stablehlo.abs %x : tensor<4xf32>",
    b"  return %0 : tensor<4xf32>",
    b"}",
]
# bytes as a comment may hold them: any but a newline, often not UTF-8 (Latin-1, cut characters)
_COMMENT = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b" "))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(comments=st.lists(st.one_of(st.none(), _COMMENT), min_size=5, max_size=5))
def test_a_module_with_any_bytes_in_its_comments_reads_as_mlir_opt_reads_it(
    opt: Runner, tmp_path_factory: pytest.TempPathFactory, comments: list[bytes | None]
) -> None:
    lines = [*LINES, b""]
    text = b"\n".join(
        line if comment is None else line + b' // "' + comment
        for line, comment in zip(lines, comments, strict=True)
    )
    source = tmp_path_factory.mktemp("bytes") / "m.mlir"
    source.write_bytes(text)
    ours = opt(source)
    assert ours.code == 0, ours.err
    assert ours.out == iree_opt(source).stdout


@pytest.mark.parametrize(
    ("line", "column", "in_string"),
    [
        (b"  %0 = stablehlo.abs %x \xe9: tensor<4xf32> // \xe9", 25, False),
        (b'  %0 = stablehlo.abs %x {s = "caf\xe9 // x"} : tensor<4xf32>', 34, True),
        (b'  %0 = stablehlo.abs %x {s = "\\"", t = "\xff"} : tensor<4xf32>', 41, True),
    ],
)
def test_a_bad_byte_outside_a_comment_is_refused_at_its_place(
    line: bytes, column: int, in_string: bool
) -> None:
    data = b"\n".join([LINES[0], line, *LINES[2:], b""])
    with pytest.raises(NotUtf8Error) as caught:
        decoded("m.mlir", data)
    rendered = caught.value.render()
    assert rendered.startswith(f"m.mlir:2:{column}: error: not UTF-8 text"), rendered
    assert (re.search(r"write the byte as the escape \\[0-9A-F]{2}$", rendered) is not None) is (
        in_string
    ), rendered


def test_many_bad_bytes_in_one_comment_read_as_question_marks() -> None:
    """Each line is scanned once, however many bad bytes it holds (200k here: scanning its line
    for each took minutes)."""
    data = b"// " + b"\xe9" * 200_000 + b"\n" + b"\n".join(LINES)
    assert decoded("m.mlir", data).startswith("// ???")
