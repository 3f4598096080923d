"""A migraphx program, its TOSA lowering and a broken copy of the lowering, as files for verify."""

from __future__ import annotations

from pathlib import Path

from convcanon.cli import opt_main


def lowered_and_broken(tmp: Path, program: str, right: str, wrong: str) -> tuple[str, str, str]:
    """(source, lowering, broken lowering) paths; the broken one has `right` (which must occur
    in the lowering) replaced by `wrong`."""
    source, lowered, broken = (tmp / n for n in ("p.mlir", "p.tosa.mlir", "bad.tosa.mlir"))
    source.write_text(program)
    assert opt_main([str(source), "-p", "migraphx-to-tosa", "-o", str(lowered)]) == 0
    text = lowered.read_text()
    assert right in text, text
    broken.write_text(text.replace(right, wrong))
    return str(source), str(lowered), str(broken)
