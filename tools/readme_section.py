"""Replace a generated section of the README: the text between its start and end markers."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def replace_section(body: str, start: str, end: str, readme: Path = README) -> None:
    """Write `body` between `start` and `end` in `readme`; a README without them is an error."""
    text = readme.read_text()
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    if not rest:
        raise SystemExit(f"{readme}: no {start} marker")
    readme.write_text(f"{head}{start}\n{body}{end}{tail}")
