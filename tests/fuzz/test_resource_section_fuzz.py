"""The `dense_resource` reader reads a file as MLIR's lexer does: whatever a string literal or a
`//` comment holds (`{-#`, `#-}`, `dense_resource<...>`, quotes, escapes) is text, never a section
or a reference, so it changes nothing a command computes; and random bytes in and around a
section are refused with a located diagnostic or read, never a crash or another exception."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify.resource_modules import add_constant_pair  # pyright: ignore[reportMissingImports]

from convcanon.cli import main
from convcanon.diagnostics import ConvcanonError
from convcanon.hlo.context import parse_module
from convcanon.hlo.resources import inline_dense_resources

WEIGHTS = np.array([1.0, 2.0], np.float32)
RESOURCE, _ = add_constant_pair(WEIGHTS, "f32")
SECTION = RESOURCE.index("{-#")
TRAPS = ["{-#", "#-}", "dense_resource<weight>", "dense_resource<gone>", '"', "\\", "//", "{", "}"]
PAYLOAD = st.lists(st.one_of(st.sampled_from(TRAPS), st.text(st.characters(
    blacklist_categories=("Cs", "Cc")), max_size=4)), max_size=12).map("".join)  # fmt: skip


def _mlir_string(payload: str) -> str:
    return '"' + payload.replace("\\", "\\\\").replace('"', '\\"') + '"'


# where a payload goes: (marker that must occur once, what replaces it given the payload)
PLACES = {
    "string attribute": ("{\n", lambda p: f" attributes {{note = {_mlir_string(p)}}} {{\n"),
    "comment in the function": ("{\n", lambda p: f"{{\n  // {p}\n"),
    "comment before the section": ("{-#", lambda p: f"// {p}\n{{-#"),
    "comment inside the section": ("    builtin: {\n", lambda p: f"    builtin: {{\n  // {p}\n"),
    "comment after the section": ("#-}\n", lambda p: f"#-}}\n// {p}\n"),
}


def _run(text: str, tmp_path: Path) -> tuple[int, str, np.ndarray | None]:
    module, inputs, outputs = tmp_path / "m.mlir", tmp_path / "in.npz", tmp_path / "out.npz"
    module.write_text(text)
    np.savez(inputs, arg0=np.array([10.0, 20.0], np.float32))
    outputs.unlink(missing_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", str(module), "--inputs", str(inputs), "--output", str(outputs)])
    if code != 0:
        return code, err.getvalue(), None
    with np.load(outputs) as results:
        (result,) = results.values()
    return code, err.getvalue(), result


@given(place=st.sampled_from(sorted(PLACES)), payload=PAYLOAD.filter(lambda p: "\n" not in p))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_strings_and_comments_change_nothing(place: str, payload: str, tmp_path: Path):
    marker, replace = PLACES[place]
    text = RESOURCE.replace(marker, replace(payload), 1)
    parse_module(text, "m.mlir")  # MLIR itself reads the file: the payload is a string or comment
    code, err, result = _run(text, tmp_path)
    assert code == 0, err
    np.testing.assert_array_equal(result, np.array([11.0, 22.0], np.float32))
    if "section" not in place:
        assert replace(payload) in inline_dense_resources(text, "m.mlir")  # kept verbatim


_NOISE = st.text(st.sampled_from('{}[]<>:,"#-/\\ \n0x4F' + "\u00e9"), max_size=12)


@given(
    at=st.integers(SECTION - 40, len(RESOURCE)),
    cut=st.integers(0, 12),
    noise=st.one_of(_NOISE, st.sampled_from(TRAPS)),
)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_random_bytes_around_a_section_are_refused_with_a_location_or_read(
    at: int, cut: int, noise: str, tmp_path: Path
):
    text = RESOURCE[:at] + noise + RESOURCE[at + cut :]
    for read in (
        lambda: parse_module(text, "m.mlir"),
        lambda: inline_dense_resources(text, "m.mlir"),
    ):
        try:
            read()
        except ConvcanonError as err:
            assert err.loc is not None and err.loc.file == "m.mlir", err.render()
            assert "\n" not in err.message.strip(), err.render()
    code, err, _ = _run(text, tmp_path)
    assert code in (0, 1) and "Traceback" not in err, err
    assert code == 0 or err.startswith(str(tmp_path / "m.mlir")), err
    assert {p.name for p in tmp_path.iterdir()} <= {"m.mlir", "in.npz", "out.npz"}
